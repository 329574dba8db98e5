"""Appending batches to a metadata log segment file, with recovery of an interrupted tail."""

from __future__ import annotations

import fcntl
import logging
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO

from chunkraft.errors import CorruptBatchError, LogFileError, TornTailError
from chunkraft.records.codec import encode_record
from chunkraft.records.files._fsync import fsync_directory
from chunkraft.records.files.batch import MAX_BATCH_LENGTH, encode_batch
from chunkraft.records.files.reader import ScanResult, scan_log

if TYPE_CHECKING:
    from chunkraft.records import Record

__all__ = ["LogWriter", "Recovery"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Recovery:
    """What opening a segment did to it; immutable.

    ``truncated_bytes`` bytes from ``scan.valid_end_position`` on were cut off because of
    ``scan.problem`` (a torn tail or a corrupt batch); 0 for a clean or new file. ``created`` is
    True when opening created the file.
    """

    scan: ScanResult
    truncated_bytes: int
    created: bool


class LogWriter:
    """The one writer of an append-only metadata log segment file. Not thread-safe.

    Opening takes an exclusive ``flock`` on the file, scans it and truncates it at the first torn
    or corrupt batch (the tail of an interrupted write: everything after it is unreachable, as
    offsets must be consecutive); :attr:`recovery` says what was cut. A segment of another cluster,
    or one that mixes clusters, is refused with :class:`~chunkraft.errors.LogFileError` and left
    untouched.

    :meth:`append` writes one batch through to the operating system; it is durable only after
    :meth:`flush`. After a failed write the writer refuses further appends: reopen the file,
    which truncates the partial batch.
    """

    def __init__(
        self,
        path: Path,
        file: BinaryIO,
        *,
        cluster_id: uuid.UUID,
        recovery: Recovery,
        max_batch_length: int,
    ) -> None:
        """Use :meth:`open`; this only wires an already recovered, locked file."""
        self.path = path
        self.cluster_id = cluster_id
        self.recovery = recovery
        self.max_batch_length = max_batch_length
        self._file = file
        self._position = recovery.scan.valid_end_position
        self._next_offset = recovery.scan.next_offset
        self._last_epoch = recovery.scan.last_epoch
        self._failed = False

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        cluster_id: uuid.UUID,
        max_batch_length: int = MAX_BATCH_LENGTH,
    ) -> LogWriter:
        """Opens (creating it if needed) and recovers the segment at ``path``."""
        if not 0 < max_batch_length <= MAX_BATCH_LENGTH:
            raise ValueError(f"max batch length must be 1 .. {MAX_BATCH_LENGTH}")
        path = Path(path)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LogFileError(
                    "segment is already open by another writer", str(path), 0
                ) from None
            if created:
                fsync_directory(path.parent)
            scan = scan_log(path)
            truncated = _recover(fd, path, scan, cluster_id)
            file = os.fdopen(fd, "ab")
        except BaseException:
            os.close(fd)  # also drops the lock
            raise
        recovery = Recovery(scan=scan, truncated_bytes=truncated, created=created)
        return cls(
            path, file, cluster_id=cluster_id, recovery=recovery, max_batch_length=max_batch_length
        )

    @property
    def next_offset(self) -> int | None:
        """Offset the next batch must start at; None until a first batch fixes it."""
        return self._next_offset

    @property
    def last_epoch(self) -> int | None:
        """Epoch of the last batch, None for an empty segment; appends may not go below it."""
        return self._last_epoch

    @property
    def position(self) -> int:
        """Size of the segment: where the next batch will start."""
        return self._position

    def append(
        self,
        records: Sequence[bytes],
        *,
        base_offset: int,
        epoch: int,
        append_time_ms: int = 0,
    ) -> int:
        """Appends one batch of encoded records at ``base_offset``; returns its byte position.

        Raises ValueError, writing nothing, if the batch is empty, does not start at
        :attr:`next_offset`, goes back in epoch, or is longer than :attr:`max_batch_length`.
        """
        if self._file.closed:
            raise ValueError(f"{self.path}: the writer is closed")
        if self._failed:
            raise ValueError(f"{self.path}: an earlier write failed; reopen the segment")
        if not records:
            raise ValueError("a log batch needs at least one record")
        if self._next_offset is not None and base_offset != self._next_offset:
            raise ValueError(
                f"batch base offset {base_offset} is not the segment's next offset "
                f"{self._next_offset}"
            )
        if self._last_epoch is not None and epoch < self._last_epoch:
            raise ValueError(f"epoch {epoch} is below the segment's last epoch {self._last_epoch}")
        data = encode_batch(
            records,
            base_offset=base_offset,
            epoch=epoch,
            cluster_id=self.cluster_id,
            append_time_ms=append_time_ms,
            max_batch_length=self.max_batch_length,
        )
        position = self._position
        try:
            self._file.write(data)
            self._file.flush()
        except BaseException:
            self._failed = True
            raise
        self._position += len(data)
        self._next_offset = base_offset + len(records)
        self._last_epoch = epoch
        return position

    def append_records(
        self,
        records: Iterable[Record],
        *,
        base_offset: int,
        epoch: int,
        append_time_ms: int = 0,
    ) -> int:
        """Like :meth:`append`, but encodes record objects with the codec first."""
        return self.append(
            [encode_record(record) for record in records],
            base_offset=base_offset,
            epoch=epoch,
            append_time_ms=append_time_ms,
        )

    def flush(self) -> None:
        """Makes every appended batch durable (``fsync``)."""
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Flushes and closes the file, releasing the lock; closing twice is harmless."""
        if self._file.closed:
            return
        try:
            if not self._failed:
                self.flush()
        finally:
            self._file.close()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _recover(fd: int, path: Path, scan: ScanResult, cluster_id: uuid.UUID) -> int:
    """Truncates a torn or corrupt tail found by ``scan``; returns the bytes cut off."""
    if scan.cluster_id is not None and scan.cluster_id != cluster_id:
        raise LogFileError(
            f"segment belongs to cluster {scan.cluster_id}, not {cluster_id}", str(path), 0
        )
    problem = scan.problem
    if problem is None:
        return 0
    if not isinstance(problem, TornTailError | CorruptBatchError):
        raise problem  # not an interrupted write: a human must look at this file
    truncated = scan.file_size - scan.valid_end_position
    _log.warning(
        "%s: truncating %d bytes at byte %d: %s",
        path,
        truncated,
        scan.valid_end_position,
        problem,
    )
    os.ftruncate(fd, scan.valid_end_position)
    os.fsync(fd)
    return truncated
