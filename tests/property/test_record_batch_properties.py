"""Properties of the v2 record batch (chunkraft.dataplane.record_batch): what is built is parsed and
decoded back, rewriting and filtering keep batches valid, and damage is always detected."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    CorruptBatchError,
    ProducerRecord,
    Record,
    RecordInput,
    build_batch,
    build_control_batch,
    control_type,
    decode_records,
    filter_by_key_hash,
    iter_batches,
    parse_header,
    rewrite_base,
    valid_prefix_length,
    validate_batch,
)

SETTINGS = settings(max_examples=200, deadline=None)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
# Sizes straddle the one-byte varint limit (63 after zigzag) and the two-byte one (8191); big
# values are patterned rather than random, which Hypothesis generates far faster.
payload = st.one_of(
    st.none(),
    st.binary(max_size=70),
    st.tuples(st.binary(min_size=1, max_size=1), st.integers(8180, 8200)).map(
        lambda t: t[0] * t[1]
    ),
)
small_payload = st.one_of(st.none(), st.binary(max_size=70))
header_st = st.tuples(st.text(max_size=20), small_payload)
timestamp = st.integers(0, 2**45)
record_st = st.builds(
    ProducerRecord,
    key=small_payload,
    value=payload,
    timestamp_ms=timestamp,
    headers=st.lists(header_st, max_size=3).map(tuple),
)
records_st = st.lists(record_st, min_size=1, max_size=12)
batch_args = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, 2**62),
        "producer_id": st.integers(-1, 2**62),
        "producer_epoch": st.integers(-1, 2**15 - 1),
        "base_sequence": st.integers(-1, 2**31 - 1),
        "partition_leader_epoch": INT32,
    }
)


def _build(
    records: Sequence[RecordInput], args: dict[str, int], *, transactional: bool = False
) -> bytes:
    return build_batch(
        records,
        base_offset=args["base_offset"],
        producer_id=args["producer_id"],
        producer_epoch=args["producer_epoch"],
        base_sequence=args["base_sequence"],
        partition_leader_epoch=args["partition_leader_epoch"],
        transactional=transactional,
    )


def _expected(records: list[ProducerRecord], base_offset: int) -> list[Record]:
    return [
        Record(base_offset + i, r.timestamp_ms, r.key, r.value, r.headers)
        for i, r in enumerate(records)
    ]


@SETTINGS
@given(records=records_st, args=batch_args, transactional=st.booleans())
def test_build_parse_decode_round_trip(
    records: list[ProducerRecord], args: dict[str, int], transactional: bool
) -> None:
    if transactional and args["producer_id"] < 0:
        args = {**args, "producer_id": 1}
    data = _build(records, args, transactional=transactional)
    header = validate_batch(data, deep=True)
    assert header == parse_header(data)
    assert header.size_in_bytes == len(data)
    assert header.base_offset == args["base_offset"]
    assert header.partition_leader_epoch == args["partition_leader_epoch"]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
        args["producer_id"],
        args["producer_epoch"],
        args["base_sequence"],
    )
    assert header.is_transactional == transactional and not header.is_control
    assert header.record_count == len(records)
    assert header.last_offset == args["base_offset"] + len(records) - 1
    assert header.base_timestamp == records[0].timestamp_ms
    assert header.max_timestamp == max(r.timestamp_ms for r in records)
    assert decode_records(data) == _expected(records, args["base_offset"])
    assert control_type(data) is None
    # plain (key, value, timestamp) tuples build the same bytes when there are no headers
    if all(not r.headers for r in records):
        plain = [(r.key, r.value, r.timestamp_ms) for r in records]
        assert _build(plain, args, transactional=transactional) == data


@SETTINGS
@given(
    commit=st.booleans(),
    producer_id=st.integers(0, 2**62),
    producer_epoch=st.integers(0, 2**15 - 1),
    coordinator_epoch=INT32,
    base_offset=st.integers(0, 2**62),
    timestamp_ms=timestamp,
)
def test_control_batch_round_trip(
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int,
    timestamp_ms: int,
) -> None:
    data = build_control_batch(
        commit,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        coordinator_epoch=coordinator_epoch,
        base_offset=base_offset,
        timestamp_ms=timestamp_ms,
    )
    header = validate_batch(data, deep=True)
    assert header.is_control and header.is_transactional
    assert control_type(data) == (1 if commit else 0)
    [record] = decode_records(data)
    assert record.offset == base_offset and record.timestamp == timestamp_ms
    assert record.value == b"\x00\x00" + coordinator_epoch.to_bytes(4, "big", signed=True)
    assert filter_by_key_hash(data, 5, 4) == data


@SETTINGS
@given(records=records_st, args=batch_args, new_base=st.integers(0, 2**62), new_epoch=INT32)
def test_rewrite_base_keeps_the_crc_valid(
    records: list[ProducerRecord], args: dict[str, int], new_base: int, new_epoch: int
) -> None:
    data = bytearray(_build(records, args))
    crc_part = bytes(data[16:])
    rewrite_base(data, new_base, new_epoch)
    header = validate_batch(data, deep=True)
    assert (header.base_offset, header.partition_leader_epoch) == (new_base, new_epoch)
    assert bytes(data[16:]) == crc_part  # nothing under the CRC moved
    assert decode_records(data) == _expected(records, new_base)


@SETTINGS
@given(
    records=records_st,
    args=batch_args,
    bounds=st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)),
)
def test_filter_by_key_hash_keeps_exactly_the_matching_records(
    records: list[ProducerRecord], args: dict[str, int], bounds: tuple[int, int]
) -> None:
    lo, hi = min(bounds), max(bounds)
    data = _build(records, args)
    everything = _expected(records, args["base_offset"])
    wanted = [r for r in everything if lo <= (0 if r.key is None else positive_hash(r.key)) <= hi]
    filtered = filter_by_key_hash(data, lo, hi)
    if not wanted:
        assert filtered is None
        return
    assert filtered is not None
    header = validate_batch(filtered, deep=True)
    original = parse_header(data)
    assert decode_records(filtered) == wanted
    assert header.record_count == len(wanted)
    # the batch still spans the same offsets, so a reader moves past the dropped records
    assert (header.base_offset, header.last_offset) == (original.base_offset, original.last_offset)
    assert (header.producer_id, header.base_sequence) == (
        original.producer_id,
        original.base_sequence,
    )
    assert (header.base_timestamp, header.max_timestamp) == (
        original.base_timestamp,
        original.max_timestamp,
    )
    if len(wanted) == len(everything):
        assert filtered == data


@SETTINGS
@given(records=records_st, args=batch_args, data=st.data())
def test_a_bit_flip_under_the_crc_is_detected(
    records: list[ProducerRecord], args: dict[str, int], data: st.DataObject
) -> None:
    batch = bytearray(_build(records, args))
    # bytes 17.. are the CRC itself and everything it covers
    position = data.draw(st.integers(17, len(batch) - 1), label="position")
    bit = data.draw(st.integers(0, 7), label="bit")
    batch[position] ^= 1 << bit
    try:
        validate_batch(batch)
    except CorruptBatchError:
        pass
    else:
        raise AssertionError(f"flip of bit {bit} at byte {position} not detected")
    assert valid_prefix_length(batch) == 0


@SETTINGS
@given(
    batches=st.lists(
        st.tuples(st.lists(record_st, min_size=1, max_size=4), batch_args), min_size=1, max_size=4
    ),
    data=st.data(),
)
def test_truncated_tails_stop_iteration_cleanly(
    batches: list[tuple[list[ProducerRecord], dict[str, int]]], data: st.DataObject
) -> None:
    built = [_build(records, args) for records, args in batches]
    joined = b"".join(built)
    ends = [sum(len(b) for b in built[: i + 1]) for i in range(len(built))]
    cut = data.draw(st.integers(0, len(joined)), label="cut")
    whole = [end for end in ends if end <= cut]
    seen = list(iter_batches(joined[:cut]))
    assert [bytes(view) for _, view in seen] == built[: len(whole)]
    for header, view in seen:
        assert validate_batch(view) == header
    assert valid_prefix_length(joined[:cut]) == (whole[-1] if whole else 0)


@SETTINGS
@given(records=records_st, args=batch_args, tail=st.binary(min_size=1, max_size=200))
def test_valid_prefix_ignores_any_garbage_tail(
    records: list[ProducerRecord], args: dict[str, int], tail: bytes
) -> None:
    batch = _build(records, args)
    # garbage after a whole batch never makes a longer valid prefix unless it is a batch itself
    assert valid_prefix_length(batch + tail) in (len(batch), len(batch) + len(tail))
    if len(tail) < BATCH_HEADER_SIZE:
        assert valid_prefix_length(batch + tail) == len(batch)


@SETTINGS
@given(records=records_st, args=batch_args, data=st.data())
def test_filter_bounds_at_key_hashes_split_the_batch(
    records: list[ProducerRecord], args: dict[str, int], data: st.DataObject
) -> None:
    hashes = sorted({0 if r.key is None else positive_hash(r.key) for r in records})
    lo = data.draw(st.sampled_from(hashes), label="lo")
    hi = data.draw(st.sampled_from([h for h in hashes if h >= lo]), label="hi")
    filtered = filter_by_key_hash(_build(records, args), lo, hi)
    assert filtered is not None  # the records hashing to lo are always kept
    kept = decode_records(filtered)
    assert kept == [
        r
        for r in _expected(records, args["base_offset"])
        if lo <= (0 if r.key is None else positive_hash(r.key)) <= hi
    ]
