"""murmur2 gives Kafka's Java client hashes bit for bit: partitions and key ranges depend on it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _java_int(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _reference(data: bytes) -> int:
    """A line-by-line transliteration of Utils.murmur2 with Java int semantics (>>> unsigned)."""
    length = len(data)
    seed = _java_int(0x9747B28C)
    m = 0x5BD1E995
    r = 24
    h = _java_int(seed ^ length)
    for i in range(length // 4):
        i4 = i * 4
        k = data[i4] + (data[i4 + 1] << 8) + (data[i4 + 2] << 16) + (data[i4 + 3] << 24)
        k = _java_int(k * m)
        k = _java_int(k ^ ((k & 0xFFFFFFFF) >> r))
        k = _java_int(k * m)
        h = _java_int(h * m)
        h = _java_int(h ^ k)
    rest = length % 4
    if rest == 3:
        h = _java_int(h ^ (data[(length & ~3) + 2] << 16))
    if rest >= 2:
        h = _java_int(h ^ (data[(length & ~3) + 1] << 8))
    if rest >= 1:
        h = _java_int(h ^ data[length & ~3])
        h = _java_int(h * m)
    h = _java_int(h ^ ((h & 0xFFFFFFFF) >> 13))
    h = _java_int(h * m)
    h = _java_int(h ^ ((h & 0xFFFFFFFF) >> 15))
    return h


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=40), st.binary(min_size=250, max_size=600)))
def test_matches_a_transliteration_of_the_java_code(key: bytes) -> None:
    expected = _reference(key)
    assert murmur2(key) == expected  # memoized path for short bytes
    assert murmur2(bytearray(key)) == expected  # direct path
    assert murmur2(memoryview(key)) == expected


def test_reference_agrees_with_the_kafka_vectors() -> None:
    for key, expected in KAFKA_UTILS_TEST:
        assert _reference(key) == expected
