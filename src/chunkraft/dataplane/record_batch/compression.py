"""The four codecs of Kafka's record batches, in the framings Kafka's clients write them.

A compressed v2 batch keeps its 61-byte header as is; only the records section (byte 61 to the
end) is compressed, as one stream, and the codec is bits 0-2 of the attributes:

==== ======= ===========================================================================
id   codec   framing read (and written by :func:`compress`)
==== ======= ===========================================================================
0    none
1    gzip    a gzip stream (RFC 1952); members one after another are read in turn
2    snappy  xerial's framing (``\\x82SNAPPY\\x00``, two int32 versions, then int32-sized
             raw blocks), which the Java client writes, or one raw snappy block, which
             librdkafka writes; written: xerial, 32 KiB blocks, as Kafka's own brokers do
3    lz4     the LZ4 frame format with a correct header checksum (KIP-57: magic 2 batches
             always have it); frames one after another are read in turn
4    zstd    zstd frames (RFC 8878); frames one after another are read in turn
5-7  --      no codec: :class:`UnsupportedCompressionError`
==== ======= ===========================================================================

**The decompression limit.** :func:`decompress` never holds more than ``limit`` bytes of output
(plus one, to see the limit crossed): each codec is driven with a bounded output size, snappy's
declared block lengths are checked before a block is expanded, and zstd's window is capped
near the limit, so a few kilobytes that claim gigabytes (a zip bomb) cost at most ``limit``
bytes of memory before :class:`DecompressionLimitError`. A leader sets the limit with
:func:`decompressed_limit` from the topic's ``max.message.bytes``; readers of batches already
in a log use :data:`MAX_DECOMPRESSED_BYTES`.

Pure functions, safe from any thread. Errors name the position ``21`` (the attributes) when the
codec is the problem and ``61`` (the records) when the compressed bytes are.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable
from enum import IntEnum
from typing import Any

import cramjam
import lz4.frame

from chunkraft.dataplane.record_batch.layout import (
    _BUFFER,
    BATCH_HEADER_SIZE,
    Buffer,
    DecompressionLimitError,
    UnsupportedCompressionError,
)
from chunkraft.errors import CorruptBatchError

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

__all__ = [
    "DECOMPRESSION_RATIO",
    "MAX_DECOMPRESSED_BYTES",
    "Codec",
    "codec_of",
    "compress",
    "decompress",
    "decompressed_limit",
]


class Codec(IntEnum):
    """Kafka's compression codec ids (``CompressionType``), bits 0-2 of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


DECOMPRESSION_RATIO = 64
"""How many times ``max.message.bytes`` a batch's records may decompress to on a leader.

A stock producer caps a batch's *compressed* size (the Java client's ``batch.size``, 16 KiB by
default, kafka-python's likewise) or its uncompressed size (librdkafka's ``batch.size``, 1 MB),
and no single record may exceed ``max.request.size`` uncompressed; 64 times the largest batch
the topic takes (64 MiB at Kafka's default of 1 MiB) leaves room for text that compresses
well, while a zip bomb costs at most that much memory for the one batch being checked."""

MAX_DECOMPRESSED_BYTES = 2**31 - 1
"""The most any batch's records may decompress to: Kafka's sizes are int32, and so is the
largest records section a Java client can hold."""

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, minimum compatible version
_XERIAL_VERSION = 1
_XERIAL_BLOCK_BYTES = 32 * 1024  # xerial's SnappyOutputStream default, as Kafka writes it
_INT32 = struct.Struct(">i")
_ZSTD_MIN_WINDOW_LOG = 23  # 8 MiB: the window of zstd level 19 on a stream of unknown size
_ZSTD_MAX_WINDOW_LOG = 27  # libzstd's own default cap (128 MiB)


def decompressed_limit(max_batch_bytes: int) -> int:
    """The leader's limit on one batch's decompressed records: :data:`DECOMPRESSION_RATIO`
    times the largest batch the topic accepts, at most :data:`MAX_DECOMPRESSED_BYTES`."""
    return min(max(max_batch_bytes, 1) * DECOMPRESSION_RATIO, MAX_DECOMPRESSED_BYTES)


def codec_of(attributes: int) -> Codec:
    """The codec of a batch's ``attributes``; UnsupportedCompressionError for ids 5-7."""
    codec_id = attributes & 0x07
    try:
        return Codec(codec_id)
    except ValueError:
        raise UnsupportedCompressionError(
            f"compression codec {codec_id} does not exist (Kafka's are 0-4)", _BUFFER, 21
        ) from None


def compress(codec: int, data: Buffer) -> bytes:
    """``data`` compressed with ``codec`` in the framing Kafka's Java client writes.

    ``Codec.NONE`` returns the bytes as they are; ids 5-7 raise UnsupportedCompressionError.
    """
    kind = codec_of(codec)
    raw = bytes(data)
    if kind is Codec.NONE:
        return raw
    if kind is Codec.GZIP:
        return zlib.compress(raw, wbits=31)  # 31: a gzip header and trailer around deflate
    if kind is Codec.SNAPPY:
        parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_VERSION)]
        for start in range(0, len(raw), _XERIAL_BLOCK_BYTES):
            block = bytes(cramjam.snappy.compress_raw(raw[start : start + _XERIAL_BLOCK_BYTES]))
            parts += (_INT32.pack(len(block)), block)
        return b"".join(parts)
    if kind is Codec.LZ4:
        # Independent blocks, as Kafka's KafkaLZ4BlockOutputStream writes (its reader refuses
        # linked ones).
        return bytes(lz4.frame.compress(raw, block_linked=False))
    return zstd.compress(raw)


def decompress(codec: int, data: Buffer, limit: int) -> bytes:
    """The bytes ``data`` (a batch's compressed records section) decompress to.

    Raises UnsupportedCompressionError for ids 5-7, DecompressionLimitError when the output
    would exceed ``limit`` bytes, and CorruptBatchError when ``data`` is not a whole, valid
    stream of ``codec`` (a bad checksum, a cut-off stream, bytes after it that are not another
    stream). ``Codec.NONE`` returns the bytes as they are.
    """
    kind = codec_of(codec)
    raw = bytes(data)
    if kind is Codec.NONE:
        return raw
    try:
        if kind is Codec.GZIP:
            return _gunzip(raw, limit)
        if kind is Codec.SNAPPY:
            return _unsnappy(raw, limit)
        if kind is Codec.LZ4:
            return _unlz4(raw, limit)
        return _unzstd(raw, limit)
    except (zlib.error, cramjam.DecompressionError, RuntimeError, zstd.ZstdError) as e:
        # lz4's errors are plain RuntimeErrors ("LZ4F_decompress failed with code ...").
        raise CorruptBatchError(
            f"{kind.name.lower()} records do not decompress: {e}", _BUFFER, BATCH_HEADER_SIZE
        ) from None


def _too_large(kind: str, limit: int) -> DecompressionLimitError:
    return DecompressionLimitError(
        f"{kind} records decompress to more than the limit of {limit} bytes",
        _BUFFER,
        BATCH_HEADER_SIZE,
    )


def _cut_short(kind: str) -> CorruptBatchError:
    return CorruptBatchError(f"{kind} stream is cut short", _BUFFER, BATCH_HEADER_SIZE)


def _frames(kind: str, data: bytes, limit: int, decoder: Callable[[], Any],
            decompress: Callable[[Any, bytes, int], bytes]) -> bytes:
    """Every frame of ``data`` (gzip members, LZ4 frames: a stream may hold several, one
    after another), each decoded by a fresh ``decoder()`` with its output bounded so that the
    whole never passes ``limit``."""
    out: list[bytes] = []
    size = 0
    rest = data
    # Every frame takes at least 7 bytes (gzip's 18), so this bound is loose.
    for _ in range(len(data) + 1):
        frame = decoder()
        chunk = decompress(frame, rest, limit - size + 1)
        size += len(chunk)
        if size > limit:
            raise _too_large(kind, limit)
        if not frame.eof:
            raise _cut_short(kind)
        out.append(chunk)
        rest = frame.unused_data
        if not rest:
            return b"".join(out)
    raise _cut_short(kind)  # unreachable: every frame consumes input


def _gunzip(data: bytes, limit: int) -> bytes:
    return _frames("gzip", data, limit, lambda: zlib.decompressobj(wbits=31),
                   lambda frame, rest, most: frame.decompress(rest, most))


def _unsnappy(data: bytes, limit: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block(data, limit, 0)
    if len(data) < _XERIAL_HEADER.size:
        raise _cut_short("snappy (xerial)")
    out: list[bytes] = []
    size = 0
    pos = _XERIAL_HEADER.size
    # Every block takes at least its 4-byte length, so there are fewer blocks than bytes.
    for _ in range(len(data)):
        if pos == len(data):
            return b"".join(out)
        if len(data) - pos < _INT32.size:
            raise _cut_short("snappy (xerial)")
        (length,) = _INT32.unpack_from(data, pos)
        pos += _INT32.size
        if length < 0 or pos + length > len(data):
            raise _cut_short("snappy (xerial)")
        block = _snappy_block(data[pos : pos + length], limit, size)
        size += len(block)
        out.append(block)
        pos += length
    return b"".join(out)


def _snappy_block(block: bytes, limit: int, before: int) -> bytes:
    """One raw snappy block; its declared length is checked before anything is expanded."""
    declared = cramjam.snappy.decompress_raw_len(block)
    if before + declared > limit:
        raise _too_large("snappy", limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unlz4(data: bytes, limit: int) -> bytes:
    return _frames("lz4", data, limit, lz4.frame.LZ4FrameDecompressor,
                   lambda frame, rest, most: frame.decompress(rest, max_length=most))


def _unzstd(data: bytes, limit: int) -> bytes:
    # A frame declares the window it needs, and libzstd allocates it before any output: a
    # window beyond the limit is refused (no output that fits the limit needs one).
    window_log = min(max(limit.bit_length(), _ZSTD_MIN_WINDOW_LOG), _ZSTD_MAX_WINDOW_LOG)
    options: dict[int, int] = {zstd.DecompressionParameter.window_log_max: window_log}
    out: list[bytes] = []
    size = 0
    rest = data
    for _ in range(len(data) + 1):  # every frame takes at least 9 bytes
        frame = zstd.ZstdDecompressor(options=options)
        chunk = frame.decompress(rest, max_length=limit - size + 1)
        size += len(chunk)
        if size > limit:
            raise _too_large("zstd", limit)
        if not frame.eof:
            raise _cut_short("zstd")
        out.append(chunk)
        rest = frame.unused_data
        if not rest:
            return b"".join(out)
    raise _cut_short("zstd")  # unreachable: every frame consumes input
