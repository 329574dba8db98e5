"""Kafka's key hash: ``Utils.murmur2`` (MurmurHash2, seed 0x9747b28c), bit for bit.

The default partitioner picks ``positive_hash(key) % partitions`` for a keyed record, and the
key-range fetch filter compares ``positive_hash(key)`` against a range, so both must agree with
Kafka's Java clients on every key. Pure functions, safe from any thread.
"""

from __future__ import annotations

import struct

__all__ = ["murmur2", "partition_for_key", "positive_hash"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's ``Utils.murmur2(data)``: the signed 32-bit MurmurHash2 of ``data``."""
    length = len(data)
    m = _M
    h = (_SEED ^ length) & _MASK
    body = length >> 2
    if body:
        # One unpack for every little-endian 4-byte word; Java's int overflow is the & _MASK.
        for k in struct.unpack_from(f"<{body}I", data):
            k = (k * m) & _MASK
            k ^= k >> 24
            h = ((h * m) & _MASK) ^ ((k * m) & _MASK)
    tail = length & 3
    if tail:
        i = length & ~3
        if tail == 3:
            h ^= data[i + 2] << 16
        if tail >= 2:
            h ^= data[i + 1] << 8
        h ^= data[i]
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def positive_hash(key: bytes | bytearray | memoryview) -> int:
    """``murmur2(key) & 0x7fffffff``, Kafka's ``Utils.toPositive(Utils.murmur2(key))``."""
    return murmur2(key) & 0x7FFFFFFF


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition Kafka's default partitioner gives a keyed record among ``num_partitions``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return positive_hash(key) % num_partitions
