"""Snapshot names, writing and checked reading (chunkraft.records.files.snapshot)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.errors import CorruptBatchError, SnapshotError, TornTailError
from chunkraft.records import decode_record
from chunkraft.records.files import (
    SnapshotFile,
    SnapshotId,
    encode_batch,
    latest_snapshot,
    list_snapshots,
    parse_snapshot_name,
    read_snapshot,
    read_snapshot_batches,
    remove_partial_snapshots,
    snapshot_name,
    write_snapshot,
)

from .support import CLUSTER_ID, OTHER_CLUSTER_ID, patch, sample_encoded, sample_records

NAME = "00000000000000001234-0000000007.checkpoint"


def test_name_is_kafkas() -> None:
    assert snapshot_name(1234, 7) == NAME
    assert snapshot_name(0, 0) == "00000000000000000000-0000000000.checkpoint"
    assert parse_snapshot_name(NAME) == SnapshotId(end_offset=1234, epoch=7)
    assert parse_snapshot_name(Path("/some/dir") / NAME) == (1234, 7)


@pytest.mark.parametrize(
    "name",
    [
        NAME + ".part",
        "1234-7.checkpoint",
        "00000000000000001234-0000000007.log",
        "0000000000000000123x-0000000007.checkpoint",
        "00000000000000001234_0000000007.checkpoint",
        "000000000000000001234-0000000007.checkpoint",
        "00000000000000001234-9999999999.checkpoint",  # epoch beyond int32
        "x" + NAME,
    ],
)
def test_malformed_names_are_refused(name: str) -> None:
    with pytest.raises(SnapshotError) as caught:
        parse_snapshot_name(name)
    assert caught.value.path == name


@pytest.mark.parametrize(("end_offset", "epoch"), [(-1, 0), (10**20, 0), (0, -1), (0, 2**31)])
def test_names_out_of_range_are_refused(end_offset: int, epoch: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        snapshot_name(end_offset, epoch)


def test_round_trip_of_real_records(tmp_path: Path) -> None:
    records = sample_records(50)
    encoded = sample_encoded(50)

    path = write_snapshot(
        tmp_path, end_offset=1234, epoch=7, cluster_id=CLUSTER_ID, records=iter(encoded)
    )

    assert path == tmp_path / NAME
    assert list(read_snapshot(path)) == encoded
    assert [decode_record(data) for data in read_snapshot(path)] == records
    assert os.listdir(tmp_path) == [NAME]


@pytest.mark.parametrize(
    ("count", "per_batch", "counts"),
    [(10, 4, [4, 4, 2]), (8, 4, [4, 4]), (1, 4, [1]), (0, 4, [0]), (4, 1, [1, 1, 1, 1])],
)
def test_batches_count_from_zero_and_only_the_last_ends_the_snapshot(
    tmp_path: Path, count: int, per_batch: int, counts: list[int]
) -> None:
    path = write_snapshot(
        tmp_path,
        end_offset=99,
        epoch=3,
        cluster_id=CLUSTER_ID,
        records=sample_encoded(count) if count else [],
        records_per_batch=per_batch,
    )

    batches = list(read_snapshot_batches(path))

    assert [batch.count for batch in batches] == counts
    assert [batch.base_offset for batch in batches] == [sum(counts[:i]) for i in range(len(counts))]
    assert [batch.is_end_of_snapshot for batch in batches] == [False] * (len(counts) - 1) + [True]
    assert all(batch.epoch == 3 and batch.cluster_id == CLUSTER_ID for batch in batches)


def test_batches_are_also_cut_by_bytes(tmp_path: Path) -> None:
    records = [bytes([n]) * 100 for n in range(10)] + [b"big" * 200]

    path = write_snapshot(
        tmp_path, end_offset=1, epoch=0, cluster_id=CLUSTER_ID, records=records, batch_bytes=250
    )

    batches = list(read_snapshot_batches(path))
    assert [batch.count for batch in batches] == [2, 2, 2, 2, 2, 1]
    assert list(read_snapshot(path)) == records


def test_bad_batch_parameters_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="records_per_batch"):
        write_snapshot(
            tmp_path, end_offset=1, epoch=0, cluster_id=CLUSTER_ID, records=[], records_per_batch=0
        )
    with pytest.raises(ValueError, match="batch_bytes"):
        write_snapshot(
            tmp_path, end_offset=1, epoch=0, cluster_id=CLUSTER_ID, records=[], batch_bytes=10
        )


def test_existing_snapshot_is_not_overwritten(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, end_offset=5, epoch=1, cluster_id=CLUSTER_ID, records=[b"a"])

    with pytest.raises(FileExistsError):
        write_snapshot(tmp_path, end_offset=5, epoch=1, cluster_id=CLUSTER_ID, records=[b"b"])

    assert list(read_snapshot(path)) == [b"a"]


def test_a_failed_write_leaves_neither_part_nor_checkpoint(tmp_path: Path) -> None:
    def records() -> Iterator[bytes]:
        yield from [b"a"] * 5000
        raise RuntimeError("image went away")

    with pytest.raises(RuntimeError, match="image went away"):
        write_snapshot(tmp_path, end_offset=5, epoch=1, cluster_id=CLUSTER_ID, records=records())

    assert os.listdir(tmp_path) == []


def test_write_syncs_the_file_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real_fsync(fd)

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        events.append(f"rename {Path(source).name} -> {Path(target).name}")
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)

    write_snapshot(tmp_path, end_offset=1234, epoch=7, cluster_id=CLUSTER_ID, records=[b"r"])

    assert events == ["fsync file", f"rename {NAME}.part -> {NAME}", "fsync dir"]


def _write_raw(directory: Path, *batches: bytes, name: str = NAME) -> Path:
    path = directory / name
    path.write_bytes(b"".join(batches))
    return path


def test_missing_end_marker_is_an_incomplete_snapshot(tmp_path: Path) -> None:
    written = write_snapshot(
        tmp_path,
        end_offset=1234,
        epoch=7,
        cluster_id=CLUSTER_ID,
        records=sample_encoded(10),
        records_per_batch=4,
    )
    last = list(read_snapshot_batches(written))[-1]
    path = _write_raw(tmp_path, written.read_bytes()[: last.position], name=snapshot_name(1, 7))

    with pytest.raises(SnapshotError, match="incomplete snapshot: no end-of-snapshot marker") as e:
        list(read_snapshot(path))
    assert e.value.position == last.position


def test_torn_snapshot_is_an_incomplete_snapshot(tmp_path: Path) -> None:
    written = write_snapshot(
        tmp_path, end_offset=1234, epoch=7, cluster_id=CLUSTER_ID, records=sample_encoded(10)
    )
    os.truncate(written, written.stat().st_size - 1)

    with pytest.raises(SnapshotError, match="incomplete snapshot: the file ends inside") as caught:
        list(read_snapshot(written))
    assert isinstance(caught.value.__cause__, TornTailError)


def test_empty_file_is_an_incomplete_snapshot(tmp_path: Path) -> None:
    path = _write_raw(tmp_path)

    with pytest.raises(SnapshotError, match="no end-of-snapshot marker"):
        list(read_snapshot(path))


def test_cluster_id_must_not_change_between_batches(tmp_path: Path) -> None:
    path = _write_raw(
        tmp_path,
        encode_batch([b"a"], base_offset=0, epoch=7, cluster_id=CLUSTER_ID),
        encode_batch(
            [b"b"], base_offset=1, epoch=7, cluster_id=OTHER_CLUSTER_ID, end_of_snapshot=True
        ),
    )

    with pytest.raises(SnapshotError, match=f"belongs to cluster {OTHER_CLUSTER_ID}"):
        list(read_snapshot(path))


def test_batch_epoch_must_match_the_name(tmp_path: Path) -> None:
    end = encode_batch([b"a"], base_offset=0, epoch=6, cluster_id=CLUSTER_ID, end_of_snapshot=True)
    path = _write_raw(tmp_path, end)

    with pytest.raises(SnapshotError, match="has epoch 6, the snapshot's name says 7"):
        list(read_snapshot(path))


def test_first_batch_must_start_at_zero(tmp_path: Path) -> None:
    end = encode_batch([b"a"], base_offset=12, epoch=7, cluster_id=CLUSTER_ID, end_of_snapshot=True)
    path = _write_raw(tmp_path, end)

    with pytest.raises(SnapshotError, match="first batch starts at offset 12, not 0"):
        list(read_snapshot(path))


def test_nothing_may_follow_the_end_marker(tmp_path: Path) -> None:
    path = _write_raw(
        tmp_path,
        encode_batch([b"a"], base_offset=0, epoch=7, cluster_id=CLUSTER_ID, end_of_snapshot=True),
        encode_batch([b"b"], base_offset=1, epoch=7, cluster_id=CLUSTER_ID, end_of_snapshot=True),
    )

    with pytest.raises(SnapshotError, match="data after the end-of-snapshot marker"):
        list(read_snapshot(path))


def test_corrupt_batch_in_a_snapshot(tmp_path: Path) -> None:
    written = write_snapshot(
        tmp_path, end_offset=1234, epoch=7, cluster_id=CLUSTER_ID, records=sample_encoded(3)
    )
    written.write_bytes(patch(written.read_bytes(), 60, b"\xee"))

    with pytest.raises(CorruptBatchError, match="fails its CRC"):
        list(read_snapshot(written))


def test_malformed_name_is_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="not a snapshot name"):
        read_snapshot(tmp_path / "does-not-exist.checkpoint")


def test_list_and_latest(tmp_path: Path) -> None:
    for end_offset, epoch in [(300, 2), (100, 1), (300, 3), (20, 1)]:
        write_snapshot(
            tmp_path, end_offset=end_offset, epoch=epoch, cluster_id=CLUSTER_ID, records=[]
        )
    (tmp_path / (snapshot_name(900, 9) + ".part")).write_bytes(b"half")
    (tmp_path / "junk.checkpoint").write_bytes(b"")
    (tmp_path / "00000000000000000001.log").write_bytes(b"")
    (tmp_path / snapshot_name(901, 9)).mkdir()

    found = list_snapshots(tmp_path)

    assert [(s.end_offset, s.epoch) for s in found] == [(20, 1), (100, 1), (300, 2), (300, 3)]
    assert found[0].path == tmp_path / snapshot_name(20, 1)
    assert latest_snapshot(tmp_path) == SnapshotFile(300, 3, tmp_path / snapshot_name(300, 3))


def test_latest_of_an_empty_directory_is_none(tmp_path: Path) -> None:
    assert latest_snapshot(tmp_path) is None
    assert list_snapshots(tmp_path) == []


def test_remove_partial_snapshots(tmp_path: Path) -> None:
    kept = write_snapshot(tmp_path, end_offset=1, epoch=1, cluster_id=CLUSTER_ID, records=[])
    parts = [tmp_path / (snapshot_name(n, 1) + ".part") for n in (5, 2)]
    for part in parts:
        part.write_bytes(b"partial")
    other = tmp_path / "notes.part"
    other.write_bytes(b"")

    assert remove_partial_snapshots(tmp_path) == sorted(parts)
    assert sorted(os.listdir(tmp_path)) == sorted([kept.name, other.name])
    assert remove_partial_snapshots(tmp_path) == []
