"""Reading a file of batches: strict iteration (:func:`read_batches`) and recovery scans
(:func:`scan_log`).

Files are memory-mapped rather than read batch by batch: the kernel does the buffering, a batch
costs one slice, and a multi-gigabyte segment is never copied into the heap as a whole.
"""

from __future__ import annotations

import mmap
import os
import uuid
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkraft.errors import CorruptBatchError, LogFileError
from chunkraft.records.files.batch import Batch, parse_batch

__all__ = ["BatchSource", "ScanResult", "read_batches", "scan_log"]

BatchSource = str | os.PathLike[str] | bytes
"""A file to read batches from: its path, or its whole content already in memory."""


def _label(source: BatchSource) -> str:
    return "<bytes>" if isinstance(source, bytes) else str(Path(source))


@contextmanager
def _open_source(source: BatchSource) -> Iterator[tuple[Any, int, str]]:
    """``(data, length, label)``: the bytes (or a read-only mmap) and a name for error messages."""
    if isinstance(source, bytes):
        yield source, len(source), _label(source)
        return
    path = Path(source)
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:  # mmap refuses empty files
            yield b"", 0, _label(path)
            return
        with mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) as mapped:
            yield mapped, size, _label(path)


def read_batches(source: BatchSource, *, start: int = 0) -> Generator[Batch, None, None]:
    """Every batch from byte ``start`` to the end of ``source``, in order.

    Batches must follow one another without a gap in offsets. Raises
    :class:`~chunkraft.errors.TornTailError` where the file ends inside a batch and
    :class:`~chunkraft.errors.CorruptBatchError` for a batch that fails its CRC, has an impossible
    header or does not continue the previous batch's offsets; the batches before it have already
    been yielded by then.
    """
    with _open_source(source) as (data, end, label):
        if not 0 <= start <= end:
            raise ValueError(f"start {start} is outside the file's {end} bytes")
        position = start
        expected: int | None = None
        while position < end:
            batch = parse_batch(data, position, end, label)
            if expected is not None and batch.base_offset != expected:
                raise CorruptBatchError(
                    f"batch at base offset {batch.base_offset} does not continue the previous "
                    f"batch, which ends before offset {expected}",
                    label,
                    position,
                )
            yield batch
            position = batch.end_position
            expected = batch.next_offset


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What a recovery scan of a log file found; immutable.

    ``valid_end_position`` is the byte position just after the last good batch (where a writer
    may append, once anything beyond it is truncated). ``problem`` is the error that stopped the
    scan: a :class:`~chunkraft.errors.TornTailError`, a
    :class:`~chunkraft.errors.CorruptBatchError`, or a plain
    :class:`~chunkraft.errors.LogFileError` when a batch names another cluster than the first;
    None when the whole file is good. Offsets are None for a file without records.
    """

    valid_end_position: int
    file_size: int
    first_offset: int | None
    last_offset: int | None
    next_offset: int | None
    last_epoch: int | None
    cluster_id: uuid.UUID | None
    batch_count: int
    record_count: int
    problem: LogFileError | None


def scan_log(source: BatchSource) -> ScanResult:
    """Reads ``source`` up to its first bad batch and reports, never raising a LogFileError.

    OSError (the file cannot be opened or read) still propagates.
    """
    file_size = len(source) if isinstance(source, bytes) else os.stat(source).st_size
    valid_end = 0
    first_offset: int | None = None
    last_offset: int | None = None
    next_offset: int | None = None
    last_epoch: int | None = None
    cluster_id: uuid.UUID | None = None
    batch_count = 0
    record_count = 0
    problem: LogFileError | None = None
    try:
        with closing(read_batches(source)) as batches:
            for batch in batches:
                if cluster_id is None:
                    cluster_id = batch.cluster_id
                elif batch.cluster_id != cluster_id:
                    problem = LogFileError(
                        f"batch at base offset {batch.base_offset} belongs to cluster "
                        f"{batch.cluster_id}, the file's first batch to cluster {cluster_id}",
                        _label(source),
                        batch.position,
                    )
                    break
                if first_offset is None:
                    first_offset = batch.base_offset
                if batch.count:
                    last_offset = batch.last_offset
                next_offset = batch.next_offset
                last_epoch = batch.epoch
                batch_count += 1
                record_count += batch.count
                valid_end = batch.end_position
    except LogFileError as error:
        problem = error
    return ScanResult(
        valid_end_position=valid_end,
        file_size=file_size,
        first_offset=first_offset,
        last_offset=last_offset,
        next_offset=next_offset,
        last_epoch=last_epoch,
        cluster_id=cluster_id,
        batch_count=batch_count,
        record_count=record_count,
        problem=problem,
    )
