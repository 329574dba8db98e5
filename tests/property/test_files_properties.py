"""Properties of the batch file format (chunkraft.records.files): what is written is read back,
and damage is always reported, never read as different records."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.errors import CorruptBatchError, TornTailError
from chunkraft.records.files import (
    Batch,
    LogWriter,
    encode_batch,
    read_batches,
    read_snapshot,
    scan_log,
    write_snapshot,
)

CLUSTER_ID = uuid.UUID("6d0c5bd6-2c3e-4f5a-9b7e-1a2b3c4d5e6f")

# Record sizes straddle the one-byte varint limit (127) so both prefix paths are exercised.
records_st = st.lists(
    st.one_of(st.binary(max_size=40), st.binary(min_size=120, max_size=300)), max_size=12
)
batches_st = st.lists(records_st, min_size=1, max_size=5)
fast = settings(max_examples=100, deadline=None)
with_files = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _encode(batches: list[list[bytes]], first_offset: int) -> tuple[bytes, list[int]]:
    """The file of ``batches`` from ``first_offset`` (epochs rising), and each batch's position."""
    data = b""
    positions = []
    offset = first_offset
    for epoch, records in enumerate(batches):
        positions.append(len(data))
        data += encode_batch(
            records, base_offset=offset, epoch=epoch, cluster_id=CLUSTER_ID, append_time_ms=epoch
        )
        offset += len(records)
    return data, positions


def _offsets_and_records(batches: list[Batch]) -> list[tuple[int, bytes]]:
    return [(b.base_offset + i, r) for b in batches for i, r in enumerate(b.records)]


def _expected(batches: list[list[bytes]], first_offset: int) -> list[tuple[int, bytes]]:
    flat = [record for records in batches for record in records]
    return list(enumerate(flat, first_offset))


@fast
@given(batches=batches_st, first_offset=st.integers(0, 2**40))
def test_what_is_written_is_read_back(batches: list[list[bytes]], first_offset: int) -> None:
    data, positions = _encode(batches, first_offset)

    read = list(read_batches(data))

    assert [batch.position for batch in read] == positions
    assert [list(batch.records) for batch in read] == batches
    assert [batch.epoch for batch in read] == list(range(len(batches)))
    assert _offsets_and_records(read) == _expected(batches, first_offset)
    scan = scan_log(data)
    assert scan.problem is None
    assert scan.valid_end_position == len(data)
    assert scan.next_offset == first_offset + sum(map(len, batches))


@fast
@given(batches=batches_st, data=st.data())
def test_a_cut_inside_the_last_batch_is_a_torn_tail(
    batches: list[list[bytes]], data: st.DataObject
) -> None:
    encoded, positions = _encode(batches, 0)
    last = positions[-1]
    cut = data.draw(st.integers(last + 1, len(encoded) - 1), label="cut")
    truncated = encoded[:cut]

    scan = scan_log(truncated)

    assert isinstance(scan.problem, TornTailError)
    assert scan.problem.position == last
    assert scan.valid_end_position == last
    assert scan.record_count == sum(map(len, batches[:-1]))
    read: list[Batch] = []
    try:
        read.extend(read_batches(truncated))
    except TornTailError:
        pass
    else:
        raise AssertionError("a torn tail was read as a complete file")
    assert [list(batch.records) for batch in read] == batches[:-1]


@fast
@given(batches=batches_st, data=st.data())
def test_a_flipped_byte_is_detected_never_read_as_other_records(
    batches: list[list[bytes]], data: st.DataObject
) -> None:
    encoded, _ = _encode(batches, 1000)
    position = data.draw(st.integers(0, len(encoded) - 1), label="position")
    mask = data.draw(st.integers(1, 255), label="mask")
    damaged = bytearray(encoded)
    damaged[position] ^= mask

    try:
        read = list(read_batches(bytes(damaged)))
    except (CorruptBatchError, TornTailError):
        return
    # Only the first batch's base offset is outside both the CRC and the offset-continuity check
    # (as in Kafka); a flip there moves the offsets but cannot change a record.
    assert position < 8, f"undetected flip at byte {position}"
    assert [list(batch.records) for batch in read] == batches
    assert read[0].base_offset != 1000


@fast
@given(batches=batches_st, data=st.data())
def test_scan_never_raises_on_damage(batches: list[list[bytes]], data: st.DataObject) -> None:
    encoded, _ = _encode(batches, 0)
    position = data.draw(st.integers(0, len(encoded) - 1), label="position")
    damaged = bytearray(encoded)
    damaged[position] ^= data.draw(st.integers(1, 255), label="mask")
    cut = data.draw(st.integers(0, len(encoded)), label="cut")

    scan = scan_log(bytes(damaged[:cut]))

    # Whatever it keeps is whole batches that read back cleanly.
    kept = list(read_batches(bytes(damaged[: scan.valid_end_position])))
    assert sum(batch.count for batch in kept) == scan.record_count


@with_files
@given(batches=batches_st, data=st.data())
def test_reopening_a_torn_segment_keeps_exactly_the_whole_batches(
    batches: list[list[bytes]], data: st.DataObject
) -> None:
    batches = [records or [b"r"] for records in batches]  # a log batch holds at least one record
    encoded, positions = _encode(batches, 0)
    cut = data.draw(st.integers(positions[-1] + 1, len(encoded) - 1), label="cut")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "seg.log"
        path.write_bytes(encoded[:cut])

        with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
            assert writer.recovery.truncated_bytes == cut - positions[-1]
            assert writer.next_offset == (sum(map(len, batches[:-1])) if len(batches) > 1 else None)

        assert path.read_bytes() == encoded[: positions[-1]]


@with_files
@given(
    records=st.lists(st.binary(max_size=200), max_size=60),
    per_batch=st.integers(1, 25),
    batch_bytes=st.integers(64, 2000),
)
def test_snapshot_round_trip(records: list[bytes], per_batch: int, batch_bytes: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = write_snapshot(
            directory,
            end_offset=len(records),
            epoch=2,
            cluster_id=CLUSTER_ID,
            records=records,
            records_per_batch=per_batch,
            batch_bytes=batch_bytes,
        )
        assert list(read_snapshot(path)) == records
