"""The codecs of compressed batches (``record_batch.compression``): round trips, the framings
Kafka's clients write (kafka-python's codec module is the independent writer and reader), the
decompression limit against zip bombs, and damaged or unknown data."""

from __future__ import annotations

import struct
import time
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
from kafka import codec as kafka_codec

from chunkraft.dataplane.record_batch import (
    DECOMPRESSION_RATIO,
    MAX_DECOMPRESSED_BYTES,
    Codec,
    CorruptBatchError,
    DecompressionLimitError,
    UnsupportedCompressionError,
    build_batch,
    codec_of,
    compress,
    decode_records,
    decompress,
    decompressed_limit,
    validate_batch,
)
from tests.unit.dataplane.record_batch.batches import SARAMA_COMPRESSED, SARAMA_UNCOMPRESSED

CODECS = [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
LIMIT = 1 << 20
# Text-like bytes (compressible, not trivially) and a size past two xerial blocks of 32 KiB.
SAMPLES = [b"", b"x", bytes(range(256)) * 3,
           b"".join(b"record-%06d:" % i + bytes([i % 251]) * (i % 37) for i in range(4_000))]

KAFKA_PYTHON_ENCODERS = {
    Codec.GZIP: kafka_codec.gzip_encode,
    Codec.SNAPPY: kafka_codec.snappy_encode,  # xerial framing, as the Java client
    Codec.LZ4: kafka_codec.lz4_encode,
    Codec.ZSTD: kafka_codec.zstd_encode,
}
KAFKA_PYTHON_DECODERS = {
    Codec.GZIP: kafka_codec.gzip_decode,
    Codec.SNAPPY: kafka_codec.snappy_decode,
    Codec.LZ4: kafka_codec.lz4_decode,
    Codec.ZSTD: kafka_codec.zstd_decode,
}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("sample", range(len(SAMPLES)))
def test_every_codec_round_trips(codec: Codec, sample: int) -> None:
    data = SAMPLES[sample]
    packed = compress(codec, data)
    assert decompress(codec, packed, LIMIT) == data
    assert decompress(codec, memoryview(packed), len(data)) == data  # exactly at the limit


@pytest.mark.parametrize("codec", CODECS)
def test_what_kafka_python_writes_is_read_and_the_other_way_round(codec: Codec) -> None:
    data = SAMPLES[-1]
    assert decompress(codec, KAFKA_PYTHON_ENCODERS[codec](data), LIMIT) == data
    assert KAFKA_PYTHON_DECODERS[codec](compress(codec, data)) == data


def test_snappy_is_read_in_xerial_framing_and_as_one_raw_block() -> None:
    data = SAMPLES[-1]
    xerial = kafka_codec.snappy_encode(data, xerial_compatible=True)
    raw = kafka_codec.snappy_encode(data, xerial_compatible=False)  # librdkafka's framing
    assert xerial.startswith(b"\x82SNAPPY\x00") and not raw.startswith(b"\x82SNAPPY\x00")
    assert decompress(Codec.SNAPPY, xerial, LIMIT) == data
    assert decompress(Codec.SNAPPY, raw, LIMIT) == data
    ours = compress(Codec.SNAPPY, data)
    assert ours.startswith(b"\x82SNAPPY\x00")  # written as Kafka's brokers and Java client do
    assert struct.unpack_from(">ii", ours, 8) == (1, 1)
    assert decompress(Codec.SNAPPY, compress(Codec.SNAPPY, b""), LIMIT) == b""


def test_lz4_frames_need_kip_57s_correct_header_checksum() -> None:
    # Before KIP-57 Kafka wrote a wrong header checksum (the byte after the magic number, the
    # flags, the block descriptor and the optional 8-byte content size); a magic 2 batch never
    # has one.
    frame = bytearray(kafka_codec.lz4_encode(SAMPLES[2]))
    has_size = bool(frame[4] & 0x08)
    assert has_size == (lz4.frame.get_frame_info(bytes(frame))["content_size"] > 0)
    frame[6 + 8 * has_size] ^= 0xFF
    with pytest.raises(CorruptBatchError, match="lz4 records do not decompress"):
        decompress(Codec.LZ4, bytes(frame), LIMIT)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.ZSTD])
def test_streams_one_after_another_are_read_in_turn(codec: Codec) -> None:
    first, second = SAMPLES[2], SAMPLES[3]
    joined = compress(codec, first) + compress(codec, second)
    assert decompress(codec, joined, LIMIT) == first + second
    with pytest.raises(DecompressionLimitError):
        decompress(codec, joined, len(first) + len(second) - 1)


def _bomb(codec: Codec, size: int) -> bytes:
    """``size`` zero bytes compressed, built without holding them all at once."""
    piece = bytes(1 << 20)
    count = size // len(piece)
    if codec is Codec.GZIP:
        deflater = zlib.compressobj(9, wbits=31)
        return b"".join([deflater.compress(piece) for _ in range(count)] + [deflater.flush()])
    if codec is Codec.LZ4:
        compressor = lz4.frame.LZ4FrameCompressor(block_linked=False)
        parts = [compressor.begin()] + [compressor.compress(piece) for _ in range(count)]
        return b"".join([*parts, compressor.flush()])
    if codec is Codec.ZSTD:
        compressor = cramjam.zstd.Compressor()
        for _ in range(count):
            compressor.compress(piece)
        return bytes(compressor.finish())
    # Snappy: one raw block declares its length up front; a bomb claims the most it can.
    return bytes(cramjam.snappy.compress_raw(piece))


@pytest.mark.parametrize("codec", CODECS)
def test_a_zip_bomb_stops_at_the_limit_without_expanding(codec: Codec) -> None:
    bomb = _bomb(codec, 256 << 20)  # 256 MiB of zeros
    assert len(bomb) * 200 < 256 << 20  # lz4's ratio is the lowest, about 250
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(DecompressionLimitError, match="more than the limit of 65536 bytes"):
            decompress(codec, bomb, 1 << 16)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(bomb) * 4 + (1 << 20), f"{peak} bytes held checking a bomb"
    assert time.monotonic() - started < 5


def test_a_raw_snappy_block_claiming_gigabytes_is_refused_before_it_is_expanded() -> None:
    claim = bytearray()
    length = MAX_DECOMPRESSED_BYTES
    while length >= 0x80:
        claim.append(length & 0x7F | 0x80)
        length >>= 7
    claim.append(length)
    with pytest.raises(DecompressionLimitError):
        decompress(Codec.SNAPPY, bytes(claim) + b"\x00" * 16, LIMIT)
    xerial = compress(Codec.SNAPPY, SAMPLES[-1])
    with pytest.raises(DecompressionLimitError):
        decompress(Codec.SNAPPY, xerial, 40 * 1024)  # the second 32 KiB block crosses it


@pytest.mark.parametrize("codec", CODECS)
def test_damaged_and_cut_streams_are_corrupt(codec: Codec) -> None:
    packed = bytearray(compress(codec, SAMPLES[-1]))
    with pytest.raises(CorruptBatchError) as cut:
        decompress(codec, bytes(packed[: len(packed) // 2]), LIMIT)
    assert not isinstance(cut.value, UnsupportedCompressionError | DecompressionLimitError)
    assert cut.value.position == 61
    with pytest.raises(CorruptBatchError):
        decompress(codec, b"not compressed at all, not even close", LIMIT)
    with pytest.raises(CorruptBatchError):
        decompress(codec, bytes(packed) + b"trailing junk", LIMIT)
    if codec is not Codec.SNAPPY:  # xerial blocks are empty here; snappy has no end marker
        with pytest.raises(CorruptBatchError):
            decompress(codec, b"", LIMIT)


def test_gzip_checks_its_crc() -> None:
    packed = bytearray(compress(Codec.GZIP, SAMPLES[-1]))
    packed[-8] ^= 0xFF  # the trailer's CRC-32 of the data
    with pytest.raises(CorruptBatchError, match="gzip records do not decompress"):
        decompress(Codec.GZIP, bytes(packed), LIMIT)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_codec_ids_kafka_does_not_have_are_unsupported(codec_id: int) -> None:
    with pytest.raises(UnsupportedCompressionError) as info:
        decompress(codec_id, b"anything", LIMIT)
    assert info.value.position == 21
    with pytest.raises(UnsupportedCompressionError):
        compress(codec_id, b"anything")
    with pytest.raises(UnsupportedCompressionError):
        codec_of(0x10 | codec_id)  # other attribute bits do not matter
    with pytest.raises(ValueError, match="does not exist"):
        build_batch([(b"k", b"v", 1)], compression=codec_id)


def test_none_is_the_bytes_as_they_are() -> None:
    assert compress(Codec.NONE, b"abc") == b"abc" == decompress(Codec.NONE, b"abc", 0)
    assert codec_of(0x18) is Codec.NONE


def test_the_leaders_limit_follows_max_message_bytes() -> None:
    assert decompressed_limit(1_048_588) == 1_048_588 * DECOMPRESSION_RATIO
    assert decompressed_limit(0) == DECOMPRESSION_RATIO  # max.message.bytes may be 0
    assert decompressed_limit(2**31 - 1) == MAX_DECOMPRESSED_BYTES


@pytest.mark.parametrize("codec", sorted(SARAMA_COMPRESSED))
def test_saramas_compressed_batches_read_as_its_uncompressed_one(codec: int) -> None:
    batch = SARAMA_COMPRESSED[codec]
    header = validate_batch(batch, deep=True)
    assert header.compression == codec
    assert decode_records(batch) == decode_records(SARAMA_UNCOMPRESSED)
