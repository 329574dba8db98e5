"""Properties of compressed batches (``record_batch.compression``): whatever the records and
the codec, a compressed batch reads back as the same records as the uncompressed one, with the
same header fields, and filters to the same records; the codecs round-trip any bytes in the
framings Kafka's clients write."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    Codec,
    ProducerRecord,
    build_batch,
    compress,
    decode_records,
    decompress,
    filter_by_key_hash,
    parse_header,
    validate_batch,
)
from tests.property.test_record_batch_properties import batch_args, records_st

SETTINGS = settings(max_examples=150, deadline=None)
codecs = st.sampled_from([Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
# Every header field but the batch length, CRC and attributes (which differ by the codec).
_SAME_FIELDS = slice(0, 1), slice(2, 4), slice(6, 13)


@SETTINGS
@given(records=records_st, args=batch_args, codec=codecs, transactional=st.booleans(),
       append_time=st.booleans())
def test_a_compressed_batch_reads_as_the_uncompressed_one(
    records: list[ProducerRecord], args: dict[str, int], codec: Codec, transactional: bool,
    append_time: bool,
) -> None:
    if transactional and args["producer_id"] < 0:
        args = {**args, "producer_id": 1}
    common = {**args, "transactional": transactional, "log_append_time": append_time}
    plain = build_batch(records, **common)  # type: ignore[arg-type]
    packed = build_batch(records, compression=codec, **common)  # type: ignore[arg-type]
    header = validate_batch(packed, deep=True)
    assert header.compression == codec
    plain_header = parse_header(plain)
    assert header.attributes == plain_header.attributes | codec
    for part in _SAME_FIELDS:
        assert header[part] == plain_header[part]
    assert decode_records(packed) == decode_records(plain)
    assert decompress(codec, memoryview(packed)[BATCH_HEADER_SIZE:], 1 << 24) == \
        plain[BATCH_HEADER_SIZE:]


@SETTINGS
@given(records=records_st, codec=codecs, bounds=st.tuples(st.integers(0, 2**31 - 1),
                                                          st.integers(0, 2**31 - 1)))
def test_a_compressed_batch_filters_to_the_records_the_uncompressed_one_keeps(
    records: list[ProducerRecord], codec: Codec, bounds: tuple[int, int]
) -> None:
    lo, hi = sorted(bounds)
    plain = build_batch(records)
    packed = build_batch(records, compression=codec)
    kept_plain = filter_by_key_hash(plain, lo, hi)
    kept_packed = filter_by_key_hash(packed, lo, hi)
    assert (kept_plain is None) == (kept_packed is None)
    if kept_plain is not None and kept_packed is not None:
        assert validate_batch(kept_packed, deep=True).compression == codec
        assert decode_records(kept_packed) == decode_records(kept_plain)
        assert all(lo <= (positive_hash(r.key) if r.key is not None else 0) <= hi
                   for r in decode_records(kept_packed))


# Past xerial's 32 KiB blocks by repetition: Hypothesis draws long random bytes slowly.
any_bytes = st.one_of(st.binary(max_size=2_000), st.tuples(
    st.binary(min_size=1, max_size=8), st.integers(1, 20_000)).map(lambda t: t[0] * t[1]))


@SETTINGS
@given(data=any_bytes, codec=codecs)
def test_any_bytes_round_trip_and_kafka_python_reads_them(data: bytes, codec: Codec) -> None:
    packed = compress(codec, data)
    assert decompress(codec, packed, len(data)) == data
    decoders = {Codec.GZIP: kafka_codec.gzip_decode, Codec.SNAPPY: kafka_codec.snappy_decode,
                Codec.LZ4: kafka_codec.lz4_decode, Codec.ZSTD: kafka_codec.zstd_decode}
    if data:  # a records section never is empty; kafka-python takes 16 bytes for raw snappy
        assert decoders[codec](packed) == data
