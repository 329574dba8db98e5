"""Strict reading and recovery scans of batch files (chunkraft.records.files.reader)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.errors import CorruptBatchError, LogFileError, TornTailError
from chunkraft.records.files import encode_batch, read_batches, scan_log

from .support import CLUSTER_ID, OTHER_CLUSTER_ID, patch, sample_encoded


def _log(*sizes: int, first_offset: int = 0) -> tuple[bytes, list[int]]:
    """A segment of batches holding ``sizes`` records each, and each batch's byte position."""
    data = b""
    positions = []
    offset = first_offset
    for epoch, size in enumerate(sizes):
        positions.append(len(data))
        data += encode_batch(
            sample_encoded(size), base_offset=offset, epoch=epoch, cluster_id=CLUSTER_ID
        )
        offset += size
    return data, positions


def test_reads_every_batch_from_a_file(tmp_path: Path) -> None:
    data, positions = _log(3, 1, 4, first_offset=100)
    path = tmp_path / "seg.log"
    path.write_bytes(data)

    batches = list(read_batches(path))

    assert [batch.position for batch in batches] == positions
    assert [(batch.base_offset, batch.count) for batch in batches] == [(100, 3), (103, 1), (104, 4)]
    assert [batch.epoch for batch in batches] == [0, 1, 2]
    assert batches[-1].end_position == len(data)


def test_file_and_bytes_read_the_same(tmp_path: Path) -> None:
    data, _ = _log(2, 5)
    path = tmp_path / "seg.log"
    path.write_bytes(data)

    assert list(read_batches(path)) == list(read_batches(data))
    assert list(read_batches(str(path))) == list(read_batches(data))


def test_start_skips_to_a_batch_boundary() -> None:
    data, positions = _log(2, 5, 1)

    batches = list(read_batches(data, start=positions[1]))

    assert [batch.base_offset for batch in batches] == [2, 7]


def test_start_outside_the_file_is_refused() -> None:
    data, _ = _log(1)
    with pytest.raises(ValueError, match="outside"):
        list(read_batches(data, start=len(data) + 1))


def test_empty_file_has_no_batches(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")

    assert list(read_batches(path)) == []
    scan = scan_log(path)
    assert (scan.valid_end_position, scan.batch_count, scan.problem) == (0, 0, None)
    assert scan.next_offset is None and scan.last_offset is None


def test_missing_file_raises_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        list(read_batches(tmp_path / "nope.log"))


def test_gap_in_offsets_is_corrupt() -> None:
    first = encode_batch([b"a", b"b"], base_offset=0, epoch=0, cluster_id=CLUSTER_ID)
    second = encode_batch([b"c"], base_offset=3, epoch=0, cluster_id=CLUSTER_ID)
    reader = read_batches(first + second)

    assert next(reader).base_offset == 0
    with pytest.raises(CorruptBatchError, match=r"offset 3 does not continue .* before offset 2"):
        next(reader)


def test_torn_tail_is_raised_after_the_good_batches() -> None:
    data, positions = _log(2, 3)
    seen = []

    with pytest.raises(TornTailError) as caught:
        for batch in read_batches(data[:-7]):
            seen.append(batch.base_offset)

    assert seen == [0]
    assert caught.value.position == positions[1]
    assert caught.value.path == "<bytes>"


def test_scan_of_a_clean_file() -> None:
    data, _ = _log(2, 3, first_offset=10)

    scan = scan_log(data)

    assert scan.problem is None
    assert scan.valid_end_position == scan.file_size == len(data)
    assert (scan.first_offset, scan.last_offset, scan.next_offset) == (10, 14, 15)
    assert (scan.last_epoch, scan.cluster_id) == (1, CLUSTER_ID)
    assert (scan.batch_count, scan.record_count) == (2, 5)


@pytest.mark.parametrize("cut", [1, 12, 30, 60])
def test_scan_stops_at_a_torn_tail(tmp_path: Path, cut: int) -> None:
    data, positions = _log(2, 3)
    path = tmp_path / "seg.log"
    path.write_bytes(data[: positions[1] + cut])

    scan = scan_log(path)

    assert isinstance(scan.problem, TornTailError)
    assert scan.problem.path == str(path)
    assert scan.valid_end_position == positions[1] == scan.problem.position
    assert (scan.last_offset, scan.next_offset, scan.batch_count) == (1, 2, 1)


def test_scan_stops_at_a_corrupt_batch_in_the_middle() -> None:
    data, positions = _log(2, 3, 4)
    damaged = patch(data, positions[1] + 60, b"\xff")

    scan = scan_log(damaged)

    assert isinstance(scan.problem, CorruptBatchError)
    assert "base offset 2 fails its CRC" in str(scan.problem)
    assert (scan.valid_end_position, scan.record_count) == (positions[1], 2)


def test_scan_reports_a_batch_of_another_cluster() -> None:
    data, _ = _log(2)
    other = encode_batch([b"x"], base_offset=2, epoch=1, cluster_id=OTHER_CLUSTER_ID)

    scan = scan_log(data + other)

    assert type(scan.problem) is LogFileError
    assert str(OTHER_CLUSTER_ID) in str(scan.problem)
    assert (scan.valid_end_position, scan.batch_count) == (len(data), 1)
