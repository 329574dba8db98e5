"""One log segment: a .log file of whole record batches plus its three index files.

The segment starting at base offset ``B`` is ``<B:020d>.log`` with ``.index`` (offset ->
position), ``.timeindex`` (timestamp -> offset) and ``.txnindex`` (aborted transactions) beside it.
Only the log's active (last) segment is appended to; appends are one ``write`` on an ``O_APPEND``
descriptor, reads are ``pread`` calls, so a segment never moves a file position. A segment holds
consecutive batches with increasing offsets; offsets may jump between batches only where a writer
put them (the log never lets a segment span a gap between chunks). Not thread-safe.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from chunkraft.broker_agent.storage.offset_index import OffsetIndex
from chunkraft.broker_agent.storage.time_index import TimeIndex
from chunkraft.broker_agent.storage.txn_index import TxnIndex
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
    parse_header,
    validate_batch,
)

__all__ = ["MAX_RELATIVE_OFFSET", "LogSegment", "segment_file_name"]

MAX_RELATIVE_OFFSET = 2**31 - 1
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - BATCH_OVERHEAD
# Private header peeks (base offset + batch length, last offset delta, max timestamp): the read
# and scan paths need only these fields, and building a BatchHeader per batch would dominate a
# read of many small batches. The record batch codec itself stays in chunkraft.dataplane.
_BASE_AND_LENGTH = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_MAX_TIMESTAMP = struct.Struct(">q")
_LAST_DELTA_POS = 23
_MAX_TIMESTAMP_POS = 35
_SCAN_CHUNK = 64 * 1024
_TRUSTED = 2**63  # a recovery start beyond every offset: rescan the tail without CRC checks


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``<20-digit base offset><suffix>``, Kafka's segment file naming."""
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """A segment's files and what the log needs to know about them without reading them.

    ``next_offset`` is one past the last offset held (``base_offset`` when empty);
    ``max_timestamp`` is the largest batch max timestamp (-1 when empty).
    """

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        """Open (creating when missing) the files of the segment; no data is read yet."""
        self.base_offset = base_offset
        self.directory = directory
        self.log_path = directory / segment_file_name(base_offset, ".log")
        self._interval = index_interval_bytes
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.index = OffsetIndex(directory / segment_file_name(base_offset, ".index"), base_offset)
        self.time_index = TimeIndex(
            directory / segment_file_name(base_offset, ".timeindex"), base_offset
        )
        self.txn_index = TxnIndex(directory / segment_file_name(base_offset, ".txnindex"))
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        self._bytes_since_index = 0
        self._dirty = False

    # ------------------------------------------------------------------ loading and recovery

    def recover(
        self,
        from_offset: int,
        on_batch: Callable[[BatchHeader, memoryview], None] | None = None,
    ) -> int:
        """Bring the in-memory state and indexes in line with the .log file; return bytes cut.

        Batches before ``from_offset`` are trusted (they were flushed with their index); from the
        batch holding ``from_offset`` on, each batch is CRC-checked, must follow its predecessor
        in offsets and fit a relative offset, and is re-indexed and passed to ``on_batch``. The
        file is cut at the first torn, corrupt or out-of-order batch.
        """
        if not self.index.is_sane(self.size):
            self.index.reset()
            self.time_index.reset()
        start_offset, pos = self.index.lookup(from_offset)
        # The walk starts at the indexed batch ``start_offset`` (all of a segment's offsets are
        # consecutive, so everything before it ends at ``start_offset - 1``); time index entries
        # name the batch holding their timestamp, so those before it stay true.
        self.index.truncate_to_position(pos + 1)
        self.time_index.truncate_to_offset(start_offset)
        self._reset_stats_from_indexes()
        self.next_offset = start_offset
        self._bytes_since_index = 0
        expected = start_offset
        end = pos
        for position, view in self._iter_batches(pos, self.size):
            header = parse_header(view)
            last = header.last_offset
            if last >= from_offset:
                try:
                    validate_batch(view)
                except CorruptBatchError:
                    break
                # The base offset is outside the CRC: a segment's batches are consecutive (the
                # log rolls at every gap), so any other base offset is damage.
                if header.base_offset != expected or last - self.base_offset > MAX_RELATIVE_OFFSET:
                    break
                if on_batch is not None:
                    on_batch(header, view)
            self._track(header.base_offset, last, header.max_timestamp, position, len(view))
            expected = last + 1
            end = position + len(view)
        cut = self.size - end
        if cut:
            os.ftruncate(self._fd, end)
            self.size = end
            self._dirty = True
        self._read_first_timestamp()
        return cut

    def _reset_stats_from_indexes(self) -> None:
        last_ts = self.time_index.last_entry()
        if last_ts is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_ts
        else:
            self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.next_offset = self.base_offset

    def _read_first_timestamp(self) -> None:
        if self.size >= BATCH_HEADER_SIZE:
            data = os.pread(self._fd, BATCH_HEADER_SIZE, 0)
            (self.first_batch_timestamp,) = _MAX_TIMESTAMP.unpack_from(data, _MAX_TIMESTAMP_POS)
        else:
            self.first_batch_timestamp = None

    def _track(self, base: int, last: int, max_timestamp: int, position: int, size: int) -> None:
        # Kafka's rule: an index entry when at least index.interval.bytes were appended since the
        # last one, pointing at the batch that crossed the line; the time index follows it with
        # the largest timestamp so far.
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = base
        if self._bytes_since_index >= self._interval:
            self.index.append_entry(base, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += size
        self.next_offset = last + 1

    # ------------------------------------------------------------------ appending

    def append(
        self, data: bytes | bytearray | memoryview, batches: Sequence[tuple[int, int, int, int]]
    ) -> None:
        """Append whole batches ``data``, described in order by ``batches``.

        Each item is ``(base offset, last offset, max timestamp, size in bytes)``. The caller has
        checked them: offsets increasing from ``next_offset`` on, relative offsets within int32,
        the segment not over its size limit.
        """
        position = self.size
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        if self.size == 0 and batches:
            self.first_batch_timestamp = batches[0][2]
        for base, last, max_timestamp, size in batches:
            self._track(base, last, max_timestamp, position, size)
            position += size
        self.size = position
        self._dirty = True

    # ------------------------------------------------------------------ reading

    def _iter_batches(
        self, position: int, end: int, chunk: int = _SCAN_CHUNK
    ) -> Iterator[tuple[int, memoryview]]:
        """``(position, whole batch)`` from ``position`` up to ``end``; stops at a torn tail.

        Reads ``chunk`` bytes at a time (batches larger than that alone), so a short walk is one
        ``pread``.
        """
        while end - position >= BATCH_HEADER_SIZE:
            buf = os.pread(self._fd, min(chunk, end - position), position)
            view = memoryview(buf)
            i = 0
            n = len(buf)
            while n - i >= BATCH_HEADER_SIZE:
                _base, length = _BASE_AND_LENGTH.unpack_from(view, i)
                if length < _MIN_BATCH_LENGTH:
                    return
                size = length + BATCH_OVERHEAD
                if n - i < size:
                    if i == 0:
                        # One batch larger than the chunk: read exactly it.
                        if end - position < size:
                            return
                        whole = os.pread(self._fd, size, position)
                        if len(whole) < size:
                            return
                        yield position, memoryview(whole)
                        i = size
                    break
                yield position + i, view[i : i + size]
                i += size
            if i == 0:
                return
            position += i

    def _walk(self, position: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """``(position, base offset, last offset, size)`` of each whole batch, headers only.

        Reads a 64 KiB window at a time while batches are small, and only the 61-byte header
        of the next batch after a large one, so walking past big batches costs one small
        ``pread`` each instead of reading their records.
        """
        window = b""
        window_pos = position
        small = True
        while end - position >= BATCH_HEADER_SIZE:
            off = position - window_pos
            if off + BATCH_HEADER_SIZE > len(window):
                want = _SCAN_CHUNK if small else BATCH_HEADER_SIZE
                window = os.pread(self._fd, min(want, end - position), position)
                window_pos = position
                off = 0
                if len(window) < BATCH_HEADER_SIZE:
                    return
            base, length = _BASE_AND_LENGTH.unpack_from(window, off)
            if length < _MIN_BATCH_LENGTH:
                return
            size = length + BATCH_OVERHEAD
            if position + size > end:
                return
            (delta,) = _LAST_DELTA.unpack_from(window, off + _LAST_DELTA_POS)
            yield position, base, base + delta, size
            position += size
            small = size < _SCAN_CHUNK // 4

    def find_batch(self, offset: int) -> tuple[int, int] | None:
        """``(position, base offset)`` of the first batch whose last offset is >= ``offset``."""
        _, pos = self.index.lookup(offset)
        for position, base, last, _size in self._walk(pos, self.size):
            if last >= offset:
                return position, base
        return None

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int, min_one_batch: bool
    ) -> tuple[bytes, int, int] | None:
        """Whole batches from the one holding ``start_offset``: ``(data, first, next offset)``.

        Batches are taken while their last offset is below ``max_offset`` and the total stays
        within ``max_bytes``, except that the first batch is taken whatever its size when
        ``min_one_batch``. None when no batch of the segment qualifies. The batches are found
        from their headers, then read with one ``pread`` (the answer is copied once).
        """
        if start_offset >= self.next_offset:
            return None
        _, pos = self.index.lookup(start_offset)
        first_pos = -1
        total = 0
        first = -1
        next_offset = -1
        for position, base, last, size in self._walk(pos, self.size):
            if last < start_offset:
                continue
            if last >= max_offset:
                break
            if total + size > max_bytes and (first_pos >= 0 or not min_one_batch):
                break
            if first_pos < 0:
                first_pos = position
                first = base
            total += size
            next_offset = last + 1
        if first_pos < 0:
            return None
        data = os.pread(self._fd, total, first_pos)
        if len(data) < total:
            return None  # the file shrank under us: only possible if someone else cut it
        return data, first, next_offset

    def iter_headers(self, from_offset: int) -> Iterator[tuple[BatchHeader, memoryview]]:
        """Headers and bytes of the batches whose last offset is >= ``from_offset``."""
        _, pos = self.index.lookup(from_offset)
        for _position, view in self._iter_batches(pos, self.size):
            header = parse_header(view)
            if header.last_offset >= from_offset:
                yield header, view

    # ------------------------------------------------------------------ changing

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset``; return the bytes removed.

        A batch holding ``offset`` goes whole, so the segment ends at a batch boundary at or
        below ``offset``.
        """
        found = self.find_batch(offset)
        if found is None:
            return 0
        position, base = found
        removed = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        self.index.truncate_to_position(position)
        self.time_index.truncate_to_offset(base)
        self.txn_index.truncate_to_offset(base)
        self._dirty = True
        # Recompute the tail statistics from what is left (a short scan from the last entry).
        self.recover(_TRUSTED)
        return removed

    def on_become_inactive(self) -> None:
        """Seal the segment (the log rolled past it): final time index entry, then flush."""
        if self.size:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush()

    def flush(self) -> None:
        """fsync the .log file and write and fsync the index files."""
        if self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Flush and close the descriptor."""
        if self._fd >= 0:
            self.flush()
            os.close(self._fd)
            self._fd = -1

    def close_without_flush(self) -> None:
        """Close the descriptor, dropping unflushed index entries (the files are going away)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        """Close without flushing and remove every file of the segment."""
        self.close_without_flush()
        self.log_path.unlink(missing_ok=True)
        self.index.delete()
        self.time_index.delete()
        self.txn_index.delete()
