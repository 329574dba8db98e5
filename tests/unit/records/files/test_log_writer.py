"""The append-only segment writer and its recovery (chunkraft.records.files.log_writer)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, cast

import pytest

from chunkraft.errors import CorruptBatchError, LogFileError, TornTailError
from chunkraft.records.files import LogWriter, Recovery, encode_batch, read_batches, scan_log

from .support import CLUSTER_ID, OTHER_CLUSTER_ID, patch, sample_encoded, sample_records


def _write(path: Path, *sizes: int) -> list[int]:
    """Appends batches of ``sizes`` records through a writer; returns their positions."""
    positions = []
    with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
        for size in sizes:
            offset = writer.next_offset or 0
            positions.append(writer.append(sample_encoded(size), base_offset=offset, epoch=1))
    return positions


def test_new_segment_is_created_written_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
        assert writer.recovery.created
        assert (writer.next_offset, writer.last_epoch, writer.position) == (None, None, 0)
        first = writer.append(sample_encoded(3), base_offset=10, epoch=2)
        second = writer.append(sample_encoded(2), base_offset=13, epoch=2)
        assert (writer.next_offset, writer.last_epoch) == (15, 2)
        assert writer.position == path.stat().st_size

    batches = list(read_batches(path))
    assert [(b.position, b.base_offset, b.count) for b in batches] == [
        (first, 10, 3),
        (second, 13, 2),
    ]
    assert all(b.cluster_id == CLUSTER_ID and b.epoch == 2 for b in batches)


def test_record_objects_are_encoded_for_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    records = sample_records(4)
    with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
        writer.append_records(records, base_offset=0, epoch=0, append_time_ms=99)

    (batch,) = read_batches(path)
    assert batch.decode_records() == records
    assert batch.append_time_ms == 99


def test_reopening_continues_where_the_segment_ends(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    _write(path, 3, 2)

    with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
        assert not writer.recovery.created
        assert writer.recovery.truncated_bytes == 0
        assert (writer.next_offset, writer.last_epoch) == (5, 1)
        with pytest.raises(ValueError, match="not the segment's next offset 5"):
            writer.append([b"x"], base_offset=0, epoch=1)
        writer.append([b"x"], base_offset=5, epoch=1)

    assert scan_log(path).next_offset == 6


def test_offsets_must_be_consecutive(tmp_path: Path) -> None:
    with LogWriter.open(tmp_path / "seg.log", cluster_id=CLUSTER_ID) as writer:
        writer.append([b"a", b"b"], base_offset=0, epoch=0)
        for wrong in (0, 1, 3):
            with pytest.raises(ValueError, match=f"batch base offset {wrong} is not"):
                writer.append([b"c"], base_offset=wrong, epoch=0)
        writer.append([b"c"], base_offset=2, epoch=0)


def test_epoch_may_not_go_back(tmp_path: Path) -> None:
    with LogWriter.open(tmp_path / "seg.log", cluster_id=CLUSTER_ID) as writer:
        writer.append([b"a"], base_offset=0, epoch=4)
        with pytest.raises(ValueError, match="epoch 3 is below the segment's last epoch 4"):
            writer.append([b"b"], base_offset=1, epoch=3)
        writer.append([b"b"], base_offset=1, epoch=5)


def test_empty_and_oversized_batches_are_refused_and_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    with LogWriter.open(path, cluster_id=CLUSTER_ID, max_batch_length=1000) as writer:
        with pytest.raises(ValueError, match="at least one record"):
            writer.append([], base_offset=0, epoch=0)
        with pytest.raises(ValueError, match="over the limit of 1000 bytes"):
            writer.append([b"x" * 1000], base_offset=0, epoch=0)
        assert (writer.position, writer.next_offset) == (0, None)
    assert path.stat().st_size == 0


def test_max_batch_length_beyond_the_format_limit_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max batch length"):
        LogWriter.open(tmp_path / "seg.log", cluster_id=CLUSTER_ID, max_batch_length=2**31)
    assert not (tmp_path / "seg.log").exists()


def test_torn_tail_is_truncated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    positions = _write(path, 3, 4)
    size = path.stat().st_size
    os.truncate(path, size - 10)

    with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
        recovery = writer.recovery
        assert isinstance(recovery.scan.problem, TornTailError)
        assert recovery.scan.valid_end_position == positions[1]
        assert recovery.truncated_bytes == size - 10 - positions[1]
        assert path.stat().st_size == positions[1]
        assert writer.next_offset == 3
        writer.append([b"again"], base_offset=3, epoch=1)

    scan = scan_log(path)
    assert (scan.problem, scan.record_count, scan.next_offset) == (None, 4, 4)


def test_corrupt_batch_and_everything_after_it_are_truncated(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    positions = _write(path, 2, 2, 2)
    path.write_bytes(patch(path.read_bytes(), positions[1] + 55, b"\x00\x00"))

    with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
        assert isinstance(writer.recovery.scan.problem, CorruptBatchError)
        assert writer.next_offset == 2

    assert path.stat().st_size == positions[1]


def test_segment_of_another_cluster_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    _write(path, 2)
    before = path.read_bytes() + b"torn"
    path.write_bytes(before)

    with pytest.raises(
        LogFileError, match=f"belongs to cluster {CLUSTER_ID}, not {OTHER_CLUSTER_ID}"
    ):
        LogWriter.open(path, cluster_id=OTHER_CLUSTER_ID)

    assert path.read_bytes() == before


def test_segment_mixing_clusters_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    data = encode_batch([b"a"], base_offset=0, epoch=0, cluster_id=CLUSTER_ID)
    data += encode_batch([b"b"], base_offset=1, epoch=0, cluster_id=OTHER_CLUSTER_ID)
    path.write_bytes(data)

    with pytest.raises(LogFileError, match="belongs to cluster"):
        LogWriter.open(path, cluster_id=CLUSTER_ID)

    assert path.read_bytes() == data


def test_a_second_writer_is_refused_while_the_first_is_open(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    with (
        LogWriter.open(path, cluster_id=CLUSTER_ID),
        pytest.raises(LogFileError, match="already open by another writer"),
    ):
        LogWriter.open(path, cluster_id=CLUSTER_ID)
    with LogWriter.open(path, cluster_id=CLUSTER_ID):
        pass


def test_flush_fsyncs_the_file_and_creation_fsyncs_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    writer = LogWriter.open(tmp_path / "seg.log", cluster_id=CLUSTER_ID)
    assert synced == ["dir"]
    writer.append([b"a"], base_offset=0, epoch=0)
    assert synced == ["dir"]
    writer.flush()
    assert synced == ["dir", "file"]
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.append([b"b"], base_offset=1, epoch=0)


class _FullDisk:
    """A file whose writes fail as on a full disk, after the first ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.written = b""
        self.limit = limit
        self.closed = False

    def write(self, data: bytes) -> int:
        if len(self.written) + len(data) > self.limit:
            raise OSError(28, "No space left on device")
        self.written += data
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_after_a_failed_write_the_writer_refuses_appends(tmp_path: Path) -> None:
    file = _FullDisk(limit=100)
    writer = LogWriter(
        tmp_path / "seg.log",
        cast(BinaryIO, file),
        cluster_id=CLUSTER_ID,
        recovery=Recovery(scan=scan_log(b""), truncated_bytes=0, created=True),
        max_batch_length=1000,
    )
    writer.append([b"a"], base_offset=0, epoch=0)

    with pytest.raises(OSError, match="No space left"):
        writer.append([b"b" * 100], base_offset=1, epoch=0)
    with pytest.raises(ValueError, match="an earlier write failed; reopen"):
        writer.append([b"c"], base_offset=1, epoch=0)
    assert (writer.next_offset, writer.position) == (1, len(file.written))
    writer.close()
    assert file.closed
