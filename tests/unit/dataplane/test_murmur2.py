"""murmur2 gives Kafka's Java client hashes bit for bit: partitions and key ranges depend on it."""

from __future__ import annotations

import pytest

from chunkraft.dataplane.murmur2 import murmur2, partition_for_key, positive_hash

# Kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
KAFKA_UTILS_TEST = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

# librdkafka src/rdmurmur2.c unittest_murmur2, "java_murmur2_results" (uint32 spelling): every
# tail length 0..3 and unaligned starts.
LIBRDKAFKA = [
    (b"kafka", 0xD067CF64),
    (b"giberish123456789", 0x8F552B0C),
    (b"1234", 0x9FC97B14),
    (b"234", 0xE7C009CA),
    (b"34", 0x873930DA),
    (b"4", 0x5A4B5CA1),
    (b"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x78424F1C),
    (b"reAmbleWillBeRemoved,ThePrePartThatIs", 0x4A62B377),
    (b"eAmbleWillBeRemoved,ThePrePartThatIs", 0xE0E4E09E),
    (b"AmbleWillBeRemoved,ThePrePartThatIs", 0x62B8B43F),
    (b"", 0x106E08D9),
]


@pytest.mark.parametrize(("key", "expected"), KAFKA_UTILS_TEST)
def test_kafka_utils_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@pytest.mark.parametrize(("key", "expected"), LIBRDKAFKA)
def test_librdkafka_vectors(key: bytes, expected: int) -> None:
    signed = expected - (1 << 32) if expected >= 1 << 31 else expected
    assert murmur2(key) == signed
    assert positive_hash(key) == expected & 0x7FFFFFFF


def test_result_is_signed_32_bit_and_buffers_agree() -> None:
    for n in range(0, 40):
        key = bytes(range(200, 200 + n % 50)) * 2
        h = murmur2(key)
        assert -(2**31) <= h < 2**31
        assert murmur2(bytearray(key)) == h
        assert murmur2(memoryview(key)) == h
        assert 0 <= positive_hash(key) < 2**31


def test_partition_for_key() -> None:
    # Kafka: Utils.toPositive(Utils.murmur2(key)) % numPartitions.
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    assert partition_for_key(b"kafka", 1) == 0
    with pytest.raises(ValueError):
        partition_for_key(b"kafka", 0)
