"""Snapshot files: the metadata image written as records, named and made durable as Kafka does.

A snapshot is ``<end offset:020d>-<epoch:010d>.checkpoint``: it holds the image as of every log
record below ``end offset`` (exclusive), taken at leader ``epoch``. Its batches count records from
0 within the snapshot, all carry the snapshot's epoch and one cluster id, and the last one (even
an empty image gets one) is flagged END_OF_SNAPSHOT, so a truncated file cannot pass for complete.
It is written as ``<name>.part``, fsynced, renamed and its directory fsynced: a crash leaves
either the whole snapshot or a ``.part`` leftover, never a short ``.checkpoint``.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from pathlib import Path
from typing import NamedTuple

from chunkraft.errors import SnapshotError, TornTailError
from chunkraft.records.files._fsync import fsync_directory
from chunkraft.records.files.batch import MIN_BATCH_LENGTH, Batch, encode_batch
from chunkraft.records.files.reader import read_batches

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_RECORDS_PER_BATCH",
    "PART_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "SnapshotFile",
    "SnapshotId",
    "latest_snapshot",
    "list_snapshots",
    "parse_snapshot_name",
    "read_embedded_snapshot_batches",
    "read_snapshot",
    "read_snapshot_batches",
    "remove_partial_snapshots",
    "snapshot_batches",
    "snapshot_name",
    "write_snapshot",
]

SNAPSHOT_SUFFIX = ".checkpoint"
PART_SUFFIX = ".part"
DEFAULT_RECORDS_PER_BATCH = 2000
DEFAULT_BATCH_BYTES = 1024 * 1024

_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
_MAX_END_OFFSET = 10**20 - 1
_MAX_EPOCH = 2**31 - 1


class SnapshotId(NamedTuple):
    """Which snapshot: the exclusive end offset of the log it covers, and its epoch."""

    end_offset: int
    epoch: int


class SnapshotFile(NamedTuple):
    """A snapshot found in a directory; sorts by end offset, then epoch."""

    end_offset: int
    epoch: int
    path: Path


def snapshot_name(end_offset: int, epoch: int) -> str:
    """The file name of snapshot ``(end_offset, epoch)``.

    End offset 42 at epoch 3 is ``00000000000000000042-0000000003.checkpoint``.
    """
    if not 0 <= end_offset <= _MAX_END_OFFSET:
        raise ValueError(f"snapshot end offset {end_offset} is out of range")
    if not 0 <= epoch <= _MAX_EPOCH:
        raise ValueError(f"snapshot epoch {epoch} is out of range")
    return f"{end_offset:020d}-{epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_name(name: str | os.PathLike[str]) -> SnapshotId:
    """The id in a snapshot file name (a path's directories are ignored).

    Raises :class:`~chunkraft.errors.SnapshotError` for any other name, ``.part`` files included.
    """
    match = _NAME.fullmatch(Path(name).name)
    if match is None:
        raise SnapshotError(
            "not a snapshot name (want <20-digit end offset>-<10-digit epoch>.checkpoint)",
            str(name),
            0,
        )
    epoch = int(match[2])
    if epoch > _MAX_EPOCH:
        raise SnapshotError(f"snapshot epoch {epoch} is out of range", str(name), 0)
    return SnapshotId(int(match[1]), epoch)


def list_snapshots(directory: str | os.PathLike[str]) -> list[SnapshotFile]:
    """Every complete snapshot in ``directory``, oldest first; other files are ignored."""
    found: list[SnapshotFile] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if not entry.name.endswith(SNAPSHOT_SUFFIX) or not entry.is_file():
                continue
            try:
                end_offset, epoch = parse_snapshot_name(entry.name)
            except SnapshotError:
                continue
            found.append(SnapshotFile(end_offset, epoch, Path(entry.path)))
    return sorted(found)


def latest_snapshot(directory: str | os.PathLike[str]) -> SnapshotFile | None:
    """The snapshot with the highest end offset (then epoch), or None if there is none."""
    snapshots = list_snapshots(directory)
    return snapshots[-1] if snapshots else None


def remove_partial_snapshots(directory: str | os.PathLike[str]) -> list[Path]:
    """Deletes the ``.checkpoint.part`` leftovers of interrupted writes; returns what it removed.

    Call it only while no snapshot is being written into ``directory``.
    """
    removed: list[Path] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(SNAPSHOT_SUFFIX + PART_SUFFIX) and entry.is_file():
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    if removed:
        fsync_directory(directory)
    return sorted(removed)


def snapshot_batches(
    records: Iterable[bytes],
    *,
    epoch: int,
    cluster_id: uuid.UUID,
    append_time_ms: int,
    records_per_batch: int,
    batch_bytes: int,
) -> Iterator[bytes]:
    """The encoded batches of a snapshot; the last one, possibly empty, ends the snapshot.

    :func:`write_snapshot` writes these to a named file; a file that embeds a snapshot behind a
    header of its own (the Raft dump) writes them itself and reads them back with
    :func:`read_embedded_snapshot_batches`.
    """
    iterator = iter(records)
    offset = 0
    # One chunk of look-ahead: a batch can only be flagged as the last once the next is known empty.
    pending: list[bytes] = []
    while True:
        chunk = list(islice(iterator, records_per_batch))
        for part in _split_by_bytes(chunk, batch_bytes):
            if pending:
                yield encode_batch(
                    pending,
                    base_offset=offset,
                    epoch=epoch,
                    cluster_id=cluster_id,
                    append_time_ms=append_time_ms,
                )
                offset += len(pending)
            pending = part
        if not chunk:
            break
    yield encode_batch(
        pending,
        base_offset=offset,
        epoch=epoch,
        cluster_id=cluster_id,
        append_time_ms=append_time_ms,
        end_of_snapshot=True,
    )


def _split_by_bytes(chunk: list[bytes], batch_bytes: int) -> Iterator[list[bytes]]:
    """``chunk`` cut so that each part's records take about ``batch_bytes`` at most (a record
    larger than that still gets a batch of its own)."""
    # Prefixes are ignored in the fast check: they add at most 5 bytes a record to a soft limit.
    if sum(map(len, chunk)) <= batch_bytes:
        if chunk:
            yield chunk
        return
    part: list[bytes] = []
    size = 0
    for record in chunk:
        if part and size + len(record) > batch_bytes:
            yield part
            part = []
            size = 0
        part.append(record)
        size += len(record)
    if part:
        yield part


def write_snapshot(
    directory: str | os.PathLike[str],
    *,
    end_offset: int,
    epoch: int,
    cluster_id: uuid.UUID,
    records: Iterable[bytes],
    records_per_batch: int = DEFAULT_RECORDS_PER_BATCH,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    append_time_ms: int = 0,
) -> Path:
    """Writes the encoded ``records`` as snapshot ``(end_offset, epoch)``; returns its path.

    ``records`` is consumed once, streaming. Raises FileExistsError if that snapshot already
    exists; on any failure the ``.part`` file is removed and no ``.checkpoint`` appears.
    """
    if records_per_batch < 1:
        raise ValueError("records_per_batch must be at least 1")
    if batch_bytes < MIN_BATCH_LENGTH:
        raise ValueError(f"batch_bytes must be at least {MIN_BATCH_LENGTH}")
    directory = Path(directory)
    final = directory / snapshot_name(end_offset, epoch)
    if final.exists():
        raise FileExistsError(f"{final}: snapshot already exists")
    part = final.with_name(final.name + PART_SUFFIX)
    try:
        with part.open("wb") as file:
            for batch in snapshot_batches(
                records,
                epoch=epoch,
                cluster_id=cluster_id,
                append_time_ms=append_time_ms,
                records_per_batch=records_per_batch,
                batch_bytes=batch_bytes,
            ):
                file.write(batch)
            file.flush()
            os.fsync(file.fileno())
        os.replace(part, final)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    fsync_directory(directory)
    return final


def read_snapshot_batches(path: str | os.PathLike[str]) -> Iterator[Batch]:
    """The batches of the snapshot at ``path``, checked as a whole.

    The name is checked at once; the rest as the batches are read, so an error can come after
    batches were yielded: apply nothing until the iterator is exhausted. Raises
    :class:`~chunkraft.errors.SnapshotError` for a bad name, a first batch not at offset 0, a
    batch with another epoch or cluster id, data after the end marker, or a file that stops
    before it (a torn tail included); :class:`~chunkraft.errors.CorruptBatchError` for a batch
    that fails its CRC.
    """
    snapshot_id = parse_snapshot_name(path)
    return _checked_batches(Path(path), snapshot_id.epoch, "the snapshot's name says")


def read_embedded_snapshot_batches(
    path: str | os.PathLike[str], *, start: int, epoch: int
) -> Iterator[Batch]:
    """Like :func:`read_snapshot_batches`, for snapshot batches that begin at byte ``start`` of a
    file with a header of its own; ``epoch`` is what every batch must carry."""
    return _checked_batches(Path(path), epoch, "the file's header says", start)


def _checked_batches(
    path: Path, expected_epoch: int, epoch_source: str, start: int = 0
) -> Iterator[Batch]:
    label = str(path)
    cluster_id: uuid.UUID | None = None
    end: Batch | None = None
    position = start
    try:
        for batch in read_batches(path, start=start):
            position = batch.end_position
            if end is not None:
                raise SnapshotError(
                    f"data after the end-of-snapshot marker of the batch at byte {end.position}",
                    label,
                    batch.position,
                )
            if cluster_id is None:
                if batch.base_offset != 0:
                    raise SnapshotError(
                        f"first batch starts at offset {batch.base_offset}, not 0",
                        label,
                        batch.position,
                    )
                cluster_id = batch.cluster_id
            elif batch.cluster_id != cluster_id:
                raise SnapshotError(
                    f"batch at base offset {batch.base_offset} belongs to cluster "
                    f"{batch.cluster_id}, the snapshot's first batch to cluster {cluster_id}",
                    label,
                    batch.position,
                )
            if batch.epoch != expected_epoch:
                raise SnapshotError(
                    f"batch at base offset {batch.base_offset} has epoch {batch.epoch}, "
                    f"{epoch_source} {expected_epoch}",
                    label,
                    batch.position,
                )
            if batch.is_end_of_snapshot:
                end = batch
            yield batch
    except TornTailError as torn:
        raise SnapshotError(
            f"incomplete snapshot: the file ends inside the batch at byte {torn.position}",
            label,
            torn.position,
        ) from torn
    if end is None:
        raise SnapshotError("incomplete snapshot: no end-of-snapshot marker", label, position)


def read_snapshot(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """Every encoded record of the snapshot at ``path``, in order; checked and raising as
    :func:`read_snapshot_batches` does."""
    batches = read_snapshot_batches(path)
    return chain.from_iterable(batch.records for batch in batches)
