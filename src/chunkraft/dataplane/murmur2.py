"""Kafka's key hash: ``Utils.murmur2`` (MurmurHash2, seed 0x9747b28c), bit for bit.

The default partitioner picks ``positive_hash(key) % partitions`` for a keyed record, and the
key-range fetch filter compares ``positive_hash(key)`` against a range, so both must agree with
Kafka's Java clients on every key. Pure functions, safe from any thread.
"""

from __future__ import annotations

import struct
from functools import lru_cache

__all__ = ["murmur2", "partition_for_key", "positive_hash"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
# Compiled little-endian word formats for keys up to 256 bytes, the common case.
_CACHED = 65
_WORDS = tuple(struct.Struct(f"<{n}I") for n in range(_CACHED))


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's ``Utils.murmur2(data)``: the signed 32-bit MurmurHash2 of ``data``.

    Short ``bytes`` keys are memoized (keys repeat across records, and the pure-Python hash
    costs about half a microsecond per 4-byte word).
    """
    if type(data) is bytes and len(data) <= _MEMO_MAX_KEY:
        return _memo(data)
    return _murmur2(data)


def _murmur2(data: bytes | bytearray | memoryview) -> int:
    length = len(data)
    m = _M
    h = _SEED ^ length
    body = length >> 2
    if body:
        unpack = (
            _WORDS[body].unpack_from if body < _CACHED else struct.Struct(f"<{body}I").unpack_from
        )
        # Java's int arithmetic is mod 2**32; the low 32 bits of a product or xor depend only on
        # the low 32 bits of the operands, so one mask per step is enough.
        for k in unpack(data):
            k = k * m & _MASK
            h = (h * m ^ (k ^ k >> 24) * m) & _MASK
    tail = length & 3
    if tail:
        i = length - tail
        if tail == 3:
            h ^= data[i + 2] << 16
        if tail >= 2:
            h ^= data[i + 1] << 8
        h = (h ^ data[i]) * m & _MASK
    h ^= h >> 13
    h = h * m & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


_MEMO_MAX_KEY = 256
_memo = lru_cache(maxsize=16384)(_murmur2)


def positive_hash(key: bytes | bytearray | memoryview) -> int:
    """``murmur2(key) & 0x7fffffff``, Kafka's ``Utils.toPositive(Utils.murmur2(key))``."""
    return murmur2(key) & 0x7FFFFFFF


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition Kafka's default partitioner gives a keyed record among ``num_partitions``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return positive_hash(key) % num_partitions
