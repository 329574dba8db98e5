"""UnifiedLog: one partition replica's log on disk, as Kafka's ``UnifiedLog`` + ``LocalLog``.

A directory ``<log.dir>/<topic>-<partition>/`` holds the segments (``<base:020d>.log`` with
``.index``, ``.timeindex``, ``.txnindex``), ``partition.metadata`` (the topic id), the checkpoints
``leader-epoch-checkpoint``, ``log-start-offset``, ``high-watermark`` and ``recovery-point``, and
producer-state snapshots ``<offset:020d>.snapshot``.

Offsets may have gaps: a broker holding chunk ``[0..9]`` and later chunk ``[50..]`` has a segment
ending at 9 and the next starting at 50; a segment never spans a gap. A read starting in a gap
continues at the next segment.

Durability: appends go to the page cache; a flush (on roll, close, :meth:`UnifiedLog.flush` or the
flush policy) fsyncs the data and writes the indexes, then moves the recovery point. On open,
everything from the recovery point on is CRC-checked and re-indexed and a torn or corrupt tail is
cut; producer state is replayed from the newest snapshot.

Not thread-safe: the broker calls a log from its one event loop only.
"""

from __future__ import annotations

import bisect
import logging
import shutil
import struct
import uuid
from collections.abc import Callable
from pathlib import Path

from chunkraft.broker_agent.storage.checkpoint import (
    fsync_dir,
    read_offset,
    read_text,
    write_atomic,
    write_atomic_at,
    write_offset,
)
from chunkraft.broker_agent.storage.config import (
    NO_TIMESTAMP,
    AbortedTransaction,
    LogAppendInfo,
    LogConfig,
    ReadResult,
    SegmentInfo,
    wall_clock_ms,
)
from chunkraft.broker_agent.storage.errors import (
    InconsistentTopicIdError,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)
from chunkraft.broker_agent.storage.leader_epoch import LeaderEpochCache
from chunkraft.broker_agent.storage.producer_state import (
    ProducerAppend,
    ProducerEntry,
    ProducerStateManager,
)
from chunkraft.broker_agent.storage.segment import (
    MAX_RELATIVE_OFFSET,
    LogSegment,
)
from chunkraft.broker_agent.storage.txn_index import AbortedTxn
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    MAX_OFFSET,
    BatchHeader,
    ControlType,
    CorruptBatchError,
    UnsupportedCompressionError,
    build_control_batch,
    decode_records,
    parse_header,
    rewrite_base,
    validate_batch,
)
from chunkraft.error_codes import ApiException, Errors

__all__ = ["UnifiedLog"]

_logger = logging.getLogger(__name__)

PARTITION_METADATA = "partition.metadata"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset"
HIGH_WATERMARK_CHECKPOINT = "high-watermark"
RECOVERY_POINT_CHECKPOINT = "recovery-point"

_LENGTH = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - BATCH_OVERHEAD
_MIN_RECORD_BYTES = 7
"""The smallest record a v2 batch can hold: a length, attributes, timestamp delta, offset delta,
key length, value length and header count, one byte each at the least."""

_Batch = tuple[int, int, int, int]  # base offset, last offset, max timestamp, size


def _marker(view: memoryview) -> tuple[bool, int]:
    """``(is_commit, coordinator_epoch)`` of a control batch."""
    records = decode_records(view)
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        raise CorruptBatchError("control batch without a control key", "<record batch>", 61)
    _version, kind = _CONTROL_KEY.unpack_from(records[0].key)
    coordinator_epoch = 0
    value = records[0].value
    if value is not None and len(value) >= _CONTROL_VALUE.size:
        _v, coordinator_epoch = _CONTROL_VALUE.unpack_from(value)
    return kind == ControlType.COMMIT, coordinator_epoch


def _check_batch(view: memoryview) -> BatchHeader:
    """``validate_batch`` with its failures as the Kafka errors a produce answers."""
    try:
        return validate_batch(view)
    except UnsupportedCompressionError as e:
        # Errors has no UNSUPPORTED_COMPRESSION_TYPE: chunkraft writes uncompressed batches only.
        raise ApiException(Errors.CORRUPT_MESSAGE, str(e)) from None
    except CorruptBatchError as e:
        raise ApiException(Errors.CORRUPT_MESSAGE, str(e)) from None


class UnifiedLog:
    """One partition replica's log: append, read, truncate, retain, recover.

    Offsets: ``log_start_offset`` is the first readable offset, ``log_end_offset`` (LEO) the next
    offset to write, ``high_watermark`` the first not yet replicated to the ISR, all exclusive
    upper bounds as in Kafka. Use :meth:`open`; the constructor is private.
    """

    def __init__(
        self,
        directory: Path,
        topic_id: uuid.UUID,
        config: LogConfig,
        clock: Callable[[], int],
    ) -> None:
        self.dir = directory
        self.topic_id = topic_id
        self.config = config
        self._clock = clock
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.high_watermark = 0
        self._hw_checkpointed = -1
        self._recovery_point = 0
        self.epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT)
        self.producers = ProducerStateManager(directory)
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        self._closed = False

    # ================================================================== opening and recovery

    @classmethod
    def open(
        cls,
        directory: Path,
        topic_id: uuid.UUID,
        config: LogConfig,
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> UnifiedLog:
        """Open the log in ``directory``, creating it when missing, recovering it otherwise.

        Recovery CRC-checks every batch from the recovery point on, cuts the first torn or
        corrupt batch and everything after it, rebuilds the indexes of what it checked, the
        epoch cache entries of those batches, and the producer state from the newest snapshot.
        Raises InconsistentTopicIdError when the directory belongs to another topic id.
        """
        directory.mkdir(parents=True, exist_ok=True)
        meta = directory / PARTITION_METADATA
        text = read_text(meta)
        if text is None:
            write_atomic(meta, f"version: 0\ntopic_id: {topic_id}\n")
        else:
            found = _topic_id_of(text)
            if found != str(topic_id):
                raise InconsistentTopicIdError(found or "<unreadable>", str(topic_id))
        log = cls(directory, topic_id, config, now_ms)
        log._load()
        return log

    def _load(self) -> None:
        directory = self.dir
        for tmp in directory.glob("*.tmp"):
            tmp.unlink(missing_ok=True)
        bases = sorted(int(p.name[:-4]) for p in directory.glob("*.log") if p.name[:-4].isdigit())
        # Index files without their .log are leftovers of a deletion cut short.
        for suffix in (".index", ".timeindex", ".txnindex"):
            for p in directory.glob("*" + suffix):
                stem = p.name[: -len(suffix)]
                if stem.isdigit() and int(stem) not in bases:
                    p.unlink(missing_ok=True)
        self._recovery_point = read_offset(directory / RECOVERY_POINT_CHECKPOINT) or 0
        checkpointed_start = read_offset(directory / LOG_START_CHECKPOINT)
        cut_any = False
        truncated = False
        interval = self.config.index_interval_bytes
        for base in bases:
            segment = LogSegment(directory, base, interval)
            if truncated or (self._segments and base < self._segments[-1].next_offset):
                # After a cut (or an impossible overlap) later segments cannot be trusted.
                segment.delete()
                continue
            check_from = self._recovery_point
            if base == bases[-1]:
                # The last segment's tail is always CRC-checked (about one index interval): a
                # clean shutdown does not protect the last batch from a bit flip.
                check_from = min(check_from, segment.index.last_entry()[0])
            cut = segment.recover(check_from, self._assign_epoch_from)
            cut_any = cut_any or cut > 0
            truncated = cut > 0
            if truncated:
                # An operator should see what recovery removed, and from where.
                _logger.warning(
                    "recovery of %s: cut %d bytes of a torn or corrupt tail from "
                    "segment %d; the log now ends at offset %d",
                    directory.name,
                    cut,
                    base,
                    segment.next_offset,
                )
            if segment.size == 0 and self._segments:
                segment.delete()  # an empty segment after another one holds nothing
                continue
            if self._segments and self._segments[-1].size == 0:
                # An empty segment followed by another one holds nothing either.
                self._segments.pop().delete()
                self._bases.pop()
            self._append_segment(segment)
        if not self._segments:
            start = checkpointed_start if checkpointed_start is not None else 0
            self._append_segment(LogSegment(directory, start, interval))
        leo = self.log_end_offset
        first_base = self._segments[0].base_offset
        start = max(checkpointed_start or 0, first_base)
        self.log_start_offset = min(start, leo)
        self.epoch_cache.truncate_from_end(leo)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self._rebuild_producer_state()
        hw = read_offset(directory / HIGH_WATERMARK_CHECKPOINT)
        self.high_watermark = self._clamp(hw if hw is not None else self.log_start_offset)
        self._hw_checkpointed = hw if hw is not None else -1
        self.producers.on_high_watermark(self.high_watermark)
        if cut_any or self._recovery_point != leo:
            self.flush()

    def _append_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def _assign_epoch_from(self, header: BatchHeader, _view: memoryview) -> None:
        epoch = header.partition_leader_epoch
        if epoch >= 0 and epoch > self.epoch_cache.latest_epoch:
            self.epoch_cache.assign(epoch, header.base_offset)

    def _rebuild_producer_state(self) -> None:
        """Load the newest snapshot at or below LEO, then replay the batch headers after it.

        Aborted-transaction index entries at or after the snapshot are regenerated by the replay
        (they may not have reached the disk before a crash), the older ones are kept.
        """
        leo = self.log_end_offset
        snapshot = self.producers.load_snapshot(leo)
        start = snapshot if snapshot is not None else 0
        for segment in self._segments:
            segment.txn_index.truncate_to_offset(start)
        staging = self.producers.begin(verify=False)
        for segment in self._segments:
            if segment.next_offset <= start:
                continue
            for header, view in segment.iter_headers(start):
                marker = None
                if header.is_control and header.producer_id >= 0:
                    try:
                        marker = _marker(view)
                    except CorruptBatchError:
                        continue  # a CRC-valid control batch without a readable marker
                self._stage(staging, header, marker, segment)
        staging.commit()

    def _stage(
        self,
        staging: ProducerAppend,
        header: BatchHeader,
        marker: tuple[bool, int] | None,
        segment: LogSegment | None,
    ) -> AbortedTxn | None:
        """Apply a written or replicated batch to ``staging``; returns an aborted txn entry.

        ``marker`` is ``(is_commit, coordinator_epoch)`` for a control batch. With ``segment``
        the aborted entry is also added to that segment's transaction index.
        """
        if header.producer_id < 0:
            return None
        if not header.is_control:
            staging.append_data(header, header.base_offset, header.last_offset)
            return None
        if marker is None:
            return None
        commit, coordinator_epoch = marker
        txn = staging.append_marker(
            header.producer_id,
            header.producer_epoch,
            coordinator_epoch,
            commit,
            header.base_offset,
            header.max_timestamp,
        )
        if not txn.is_aborted:
            return None
        entry = AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset)
        if segment is not None:
            segment.txn_index.append(entry)
        return entry

    # ================================================================== offsets

    @property
    def log_end_offset(self) -> int:
        """The next offset to be written (exclusive end of the log)."""
        return self._segments[-1].next_offset

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch in the epoch cache, -1 when none."""
        return self.epoch_cache.latest_epoch

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open (or not yet replicated) transaction, if any."""
        return self.producers.first_unstable_offset()

    @property
    def last_stable_offset(self) -> int:
        """``min(first unstable offset, high watermark)``: read_committed consumers stop here."""
        first = self.producers.first_unstable_offset()
        return self.high_watermark if first is None else min(first, self.high_watermark)

    def _clamp(self, offset: int) -> int:
        return min(max(offset, self.log_start_offset), self.log_end_offset)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to ``[log_start_offset, LEO]``; returns it."""
        self.high_watermark = self._clamp(offset)
        self.producers.on_high_watermark(self.high_watermark)
        return self.high_watermark

    def checkpoint_high_watermark(self) -> None:
        """Persist the high watermark (atomically) when it changed since the last call."""
        if self.high_watermark != self._hw_checkpointed:
            write_offset(self.dir / HIGH_WATERMARK_CHECKPOINT, self.high_watermark)
            self._hw_checkpointed = self.high_watermark

    def high_watermark_checkpoint_due(self) -> int | None:
        """The high watermark to persist, or None when the checkpoint holds it (or the log is
        closed). With :meth:`write_high_watermark_at` and
        :meth:`high_watermark_checkpointed`, the checkpoint of
        :meth:`checkpoint_high_watermark` in three steps, so the file I/O can run off the event
        loop: the value is read on the loop, written anywhere, and recorded on the loop."""
        if self._closed or self.high_watermark == self._hw_checkpointed:
            return None
        return self.high_watermark

    @staticmethod
    def write_high_watermark_at(dir_fd: int, value: int) -> None:
        """Writes a high-watermark checkpoint of ``value`` into the log directory open as
        ``dir_fd``; touches no state of the log, so any thread may call it (one at a time per
        directory)."""
        write_atomic_at(dir_fd, HIGH_WATERMARK_CHECKPOINT, f"{value}\n")

    def high_watermark_checkpointed(self, value: int) -> None:
        """Records that the checkpoint now holds ``value`` (call on the log's thread)."""
        if not self._closed:
            self._hw_checkpointed = value

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record that ``leader_epoch`` starts at ``start_offset`` (a new leader calls this)."""
        self.epoch_cache.assign(leader_epoch, start_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` with Kafka's ``LeaderEpochFileCache.endOffsetFor`` meaning."""
        return self.epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    def producer_state(self, producer_id: int) -> ProducerEntry | None:
        """The producer's entry (live object: do not change it), or None."""
        return self.producers.entries.get(producer_id)

    @property
    def size_in_bytes(self) -> int:
        """Bytes of all segment .log files."""
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> list[SegmentInfo]:
        """The segments, oldest first."""
        return [
            SegmentInfo(s.base_offset, s.next_offset, s.size, s.max_timestamp)
            for s in self._segments
        ]

    # ================================================================== appending

    def _maybe_roll(self, first_offset: int, last_offset: int, size: int, max_ts: int) -> None:
        """Start a new segment when the batches would not fit or would start after a gap."""
        active = self._segments[-1]
        if active.size == 0:
            if first_offset != active.base_offset:
                # An empty segment at the wrong base (a gap, or a fresh log): replace it.
                self._replace_empty_active(first_offset)
            return
        config = self.config
        first_ts = active.first_batch_timestamp
        if (
            first_offset > active.next_offset
            or active.size + size > config.segment_bytes
            or last_offset - active.base_offset > MAX_RELATIVE_OFFSET
            or (first_ts is not None and max_ts - first_ts > config.segment_ms)
        ):
            self._roll(first_offset)

    def _replace_empty_active(self, base: int) -> None:
        old = self._segments.pop()
        self._bases.pop()
        old.delete()
        self._append_segment(LogSegment(self.dir, base, self.config.index_interval_bytes))
        if len(self._segments) == 1 and base > self.log_start_offset:
            # An empty log written from ``base`` on holds nothing below it (a reopen agrees).
            self.log_start_offset = base
            write_offset(self.dir / LOG_START_CHECKPOINT, base)
            self.high_watermark = max(self.high_watermark, base)

    def _roll(self, new_base: int) -> None:
        old = self._segments[-1]
        old.on_become_inactive()
        self._append_segment(LogSegment(self.dir, new_base, self.config.index_interval_bytes))
        # The old segment is durable: snapshot the producer state where the new one begins and
        # move the recovery point, so a restart checks only the new segment.
        self.producers.take_snapshot(new_base)
        self._set_recovery_point(new_base)

    def roll(self) -> None:
        """Close the active segment now; the next append starts a new one at the LEO.

        Called on chunk stop, so a chunk's data lines up with segment boundaries. A no-op when
        the active segment is empty.
        """
        if self._segments[-1].size:
            self._roll(self.log_end_offset)

    def start_at(self, offset: int) -> None:
        """Make ``offset`` the next offset, leaving a gap above the LEO for offsets that live in
        chunks held elsewhere; nothing happens when the LEO is already at or past it.

        An empty log restarts at ``offset``; a log holding older chunks gets an empty active
        segment based at ``offset`` (the same steps a follower append takes for a gap) and
        forgets its producers' state, which the chunks in the gap carried on.
        """
        if self.log_end_offset >= offset:
            return
        if self.log_end_offset == self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        self.roll()
        self._replace_empty_active(offset)
        # What producers wrote below the gap went on in chunks held elsewhere (later sequences,
        # the markers of their transactions): start their state afresh, as a new replica does,
        # or this log would refuse their next sequence and keep its LSO at an old transaction.
        self.producers.clear()
        self.producers.take_snapshot(offset)
        self._set_recovery_point(offset)

    def append_as_leader(
        self,
        batches: bytes | bytearray | memoryview,
        leader_epoch: int,
        *,
        now_ms: int | None = None,
    ) -> LogAppendInfo:
        """Validate producer batches, give them offsets from the LEO and append them.

        Each batch must be whole, magic 2, CRC-valid, uncompressed, not a control batch, and
        no larger than ``max_batch_bytes`` (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
        RECORD_LIST_TOO_LARGE otherwise). Idempotent producers are checked as Kafka does: a
        retry of one of the producer's last five batches raises DuplicateSequenceError (nothing
        is written), a sequence gap OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
        INVALID_PRODUCER_EPOCH, a non-transactional batch during a transaction INVALID_TXN_STATE.
        All or nothing: a refusal writes nothing. Base offsets and partition leader epochs are
        rewritten in place; the epoch cache records ``leader_epoch`` at the first offset.
        """
        now = self._clock() if now_ms is None else now_ms
        buf = bytearray(batches)
        view = memoryview(buf)
        total = len(buf)
        config = self.config
        if total > config.segment_bytes:
            raise ApiException(
                Errors.RECORD_LIST_TOO_LARGE,
                f"{total} bytes exceed the segment size {config.segment_bytes}",
            )
        leo = self.log_end_offset
        offset = leo
        staging = self.producers.begin(verify=True)
        described: list[_Batch] = []
        pos = 0
        records = 0
        max_ts = NO_TIMESTAMP
        while pos < total:
            if total - pos < BATCH_HEADER_SIZE:
                raise ApiException(
                    Errors.CORRUPT_MESSAGE, f"{total - pos} bytes after the last batch"
                )
            (length,) = _LENGTH.unpack_from(view, pos + 8)
            size = length + BATCH_OVERHEAD
            if length < _MIN_BATCH_LENGTH or pos + size > total:
                raise ApiException(Errors.CORRUPT_MESSAGE, f"batch at byte {pos} is cut short")
            if size > config.max_batch_bytes:
                raise ApiException(
                    Errors.MESSAGE_TOO_LARGE,
                    f"batch of {size} bytes exceeds the maximum {config.max_batch_bytes}",
                )
            batch = view[pos : pos + size]
            header = _check_batch(batch)
            if header.is_control:
                raise ApiException(Errors.INVALID_RECORD, "producers cannot write control batches")
            if header.record_count != header.last_offset_delta + 1:
                raise ApiException(
                    Errors.INVALID_RECORD,
                    f"record count {header.record_count} does not match last offset delta "
                    f"{header.last_offset_delta}",
                )
            if header.record_count * _MIN_RECORD_BYTES > size - BATCH_HEADER_SIZE:
                # A header may claim up to 2^31 - 1 records; the records section says how
                # many it can hold. Without this check, one small batch takes 2^31 offsets.
                raise ApiException(
                    Errors.INVALID_RECORD,
                    f"a batch of {size} bytes cannot hold the {header.record_count} records "
                    f"its header claims",
                )
            staging.check_duplicate(header)
            last = offset + header.last_offset_delta
            _check_offsets_fit(offset, last)
            staging.append_data(header, offset, last)
            rewrite_base(batch, offset, leader_epoch)
            described.append((offset, last, header.max_timestamp, size))
            records += header.record_count
            max_ts = max(max_ts, header.max_timestamp)
            offset = last + 1
            pos += size
        if not described:
            return LogAppendInfo(leo, leo - 1, NO_TIMESTAMP, -1, 0, 0)
        self._maybe_roll(leo, offset - 1, total, max_ts)
        self._segments[-1].append(buf, described)
        staging.commit()
        if leader_epoch > self.epoch_cache.latest_epoch:
            # Only a newer epoch starts an entry; an older one must not truncate the cache.
            self.epoch_cache.assign(leader_epoch, leo)
        self._after_append(records, now)
        return LogAppendInfo(leo, offset - 1, max_ts, -1, records, total)

    def append_control(
        self,
        commit: bool,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        leader_epoch: int,
        now_ms: int | None = None,
    ) -> LogAppendInfo:
        """Append a COMMIT or ABORT marker for the producer's transaction at the LEO.

        Checks the producer epoch (INVALID_PRODUCER_EPOCH) and the coordinator epoch
        (TRANSACTION_COORDINATOR_FENCED). Ends the open transaction; an ABORT adds an
        aborted-transaction index entry ``(producer_id, first offset of the txn, marker offset)``.
        """
        now = self._clock() if now_ms is None else now_ms
        leo = self.log_end_offset
        _check_offsets_fit(leo, leo)
        data = build_control_batch(
            commit,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            base_offset=leo,
            timestamp_ms=now,
            partition_leader_epoch=leader_epoch,
        )
        staging = self.producers.begin(verify=True)
        txn = staging.append_marker(
            producer_id, producer_epoch, coordinator_epoch, commit, leo, now
        )
        header = parse_header(data)
        self._maybe_roll(leo, header.last_offset, len(data), header.max_timestamp)
        active = self._segments[-1]
        active.append(data, [(leo, header.last_offset, header.max_timestamp, len(data))])
        if txn.is_aborted:
            active.txn_index.append(AbortedTxn(producer_id, txn.first_offset, txn.last_offset))
        staging.commit()
        if leader_epoch > self.epoch_cache.latest_epoch:
            self.epoch_cache.assign(leader_epoch, leo)
        self._after_append(1, now)
        return LogAppendInfo(leo, header.last_offset, header.max_timestamp, -1, 1, len(data))

    def append_as_follower(self, batches: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches that already carry offsets and epochs (replication or a chunk copy).

        The first batch must start at or above the LEO (else UnexpectedAppendOffsetError);
        starting above it, or a jump between batches, leaves a gap and starts a new segment.
        A partial batch at the end (a fetch response cut at its size limit) is ignored. Every
        whole batch is CRC-checked (CORRUPT_MESSAGE) before anything is written. The epoch
        cache, producer state and aborted-transaction index follow the batches without
        sequence checks.
        """
        view = memoryview(batches)
        total = len(view)
        # Runs of consecutive offsets: (start byte, end byte, batches, headers with markers).
        runs: list[tuple[int, int, list[_Batch], list[tuple[BatchHeader, tuple[bool, int] | None]]]]
        runs = []
        expected = self.log_end_offset
        pos = 0
        records = 0
        max_ts = NO_TIMESTAMP
        first_offset = -1
        while total - pos >= BATCH_HEADER_SIZE:
            (length,) = _LENGTH.unpack_from(view, pos + 8)
            size = length + BATCH_OVERHEAD
            if length < _MIN_BATCH_LENGTH:
                raise ApiException(Errors.CORRUPT_MESSAGE, f"batch length {length} at byte {pos}")
            if pos + size > total:
                break
            batch = view[pos : pos + size]
            header = _check_batch(batch)
            base = header.base_offset
            _check_offsets_fit(base, header.last_offset)
            if base < expected:
                if not runs:
                    raise UnexpectedAppendOffsetError(
                        f"first batch at offset {base} is below the log end offset {expected}"
                    )
                raise ApiException(
                    Errors.CORRUPT_MESSAGE, f"batch at offset {base} overlaps offset {expected - 1}"
                )
            marker = None
            if header.is_control and header.producer_id >= 0:
                try:
                    marker = _marker(batch)
                except CorruptBatchError as e:
                    raise ApiException(Errors.CORRUPT_MESSAGE, str(e)) from None
            if not runs or base > expected:
                runs.append((pos, pos, [], []))
            start, _end, described, headers = runs[-1]
            described.append((base, header.last_offset, header.max_timestamp, size))
            headers.append((header, marker))
            runs[-1] = (start, pos + size, described, headers)
            if first_offset < 0:
                first_offset = base
            records += header.record_count
            max_ts = max(max_ts, header.max_timestamp)
            expected = header.last_offset + 1
            pos += size
        if not runs:
            leo = self.log_end_offset
            return LogAppendInfo(leo, leo - 1, NO_TIMESTAMP, -1, 0, 0)
        written = 0
        for start, end, described, headers in runs:
            run_max_ts = max(d[2] for d in described)
            # Roll before staging: a roll snapshots the producer state, which must then hold
            # every earlier run and nothing of this one.
            self._maybe_roll(described[0][0], described[-1][1], end - start, run_max_ts)
            active = self._segments[-1]
            staging = self.producers.begin(verify=False)
            aborted = [self._stage(staging, h, m, None) for h, m in headers]
            active.append(view[start:end], described)
            for entry in aborted:
                if entry is not None:
                    active.txn_index.append(entry)
            staging.commit()
            for header, _marker_info in headers:
                epoch = header.partition_leader_epoch
                if epoch >= 0 and epoch > self.epoch_cache.latest_epoch:
                    self.epoch_cache.assign(epoch, header.base_offset)
            written += end - start
        self._after_append(records, self._clock())
        return LogAppendInfo(first_offset, expected - 1, max_ts, -1, records, written)

    def _after_append(self, records: int, now: int) -> None:
        self._unflushed_messages += records
        if self._unflushed_messages >= self.config.flush_interval_messages:
            self.flush(now)

    # ================================================================== reading

    def _check_readable(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.log_end_offset)

    def _segment_index(self, offset: int) -> int:
        """Index of the segment holding ``offset``, or of the first after it (0 at least)."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset_exclusive: int,
        *,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one holding ``start_offset``, as stored on disk.

        Batches are returned while their last offset is below ``max_offset_exclusive`` and the
        total stays within ``max_bytes``; with ``min_one_batch`` the first qualifying batch is
        returned whatever its size. A start inside a batch returns that whole batch (its base may
        be below the start); a start in a gap continues at the next segment; reads may cross
        segments. Raises OffsetOutOfRangeError for a start below the log start or above the LEO.
        """
        self._check_readable(start_offset)
        parts: list[bytes] = []
        total = 0
        first = -1
        next_offset = start_offset
        segments = self._segments
        i = self._segment_index(start_offset)
        while i < len(segments):
            segment = segments[i]
            start = max(start_offset, segment.base_offset)
            if start >= segment.next_offset:
                i += 1
                continue
            got = segment.read(
                start, max_bytes - total, max_offset_exclusive, min_one_batch and not parts
            )
            if got is None:
                break
            data, got_first, got_next = got
            parts.append(data)
            if first < 0:
                first = got_first
            next_offset = got_next
            total += len(data)
            if (
                total >= max_bytes
                or got_next >= max_offset_exclusive
                or got_next < segment.next_offset
            ):
                break
            i += 1
        if not parts:
            return ReadResult(b"", start_offset, start_offset)
        return ReadResult(parts[0] if len(parts) == 1 else b"".join(parts), first, next_offset)

    def aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[AbortedTransaction]:
        """Aborted transactions whose range meets ``[start_offset, upper_offset)``.

        A read_committed fetch of ``start_offset`` up to ``upper_offset`` (its LSO) needs these to
        drop aborted records; markers may lie beyond ``upper_offset``.
        """
        out: list[AbortedTransaction] = []
        for segment in self._segments[self._segment_index(start_offset) :]:
            for t in segment.txn_index.collect(start_offset, upper_offset):
                out.append(AbortedTransaction(t.producer_id, t.first_offset))
        return out

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``timestamp``, or None.

        Kafka's ListOffsets by timestamp: records below the log start offset are skipped.
        """
        for segment in self._segments:
            if segment.max_timestamp < timestamp or segment.next_offset <= self.log_start_offset:
                continue
            start = max(segment.time_index.lookup(timestamp), self.log_start_offset)
            for header, view in segment.iter_headers(start):
                if header.max_timestamp < timestamp or header.is_control:
                    continue
                for record in decode_records(view):
                    if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                        return record.offset, record.timestamp
        return None

    # ================================================================== truncation and deletion

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch whose last offset is >= ``offset``; returns whether anything changed.

        A batch holding ``offset`` goes whole. Below the log start the log is emptied and starts
        at ``offset``. The epoch cache, producer state (replayed from a snapshot at or below the
        new end) and aborted-transaction index follow; the high watermark is lowered if needed.
        """
        if offset >= self.log_end_offset:
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            self._segments.pop().delete()
            self._bases.pop()
        last = self._segments[-1]
        if last.base_offset >= offset:
            # Only the first segment is left and all of it goes: start empty where it began.
            self._replace_empty_active(offset)
        else:
            last.truncate_to(offset)
        leo = self.log_end_offset
        self.epoch_cache.truncate_from_end(leo)
        self.producers.delete_snapshots_above(leo)
        self._rebuild_producer_state()
        self.high_watermark = min(self.high_watermark, leo)
        self.producers.on_high_watermark(self.high_watermark)
        if self._recovery_point > leo:
            self._set_recovery_point(leo)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log; its log start, LEO and high watermark all become ``offset``.

        For a new replica of a chunk that starts at ``offset``. Producer state, snapshots and the
        epoch cache are cleared.
        """
        for segment in self._segments:
            segment.delete()
        self._segments.clear()
        self._bases.clear()
        self._append_segment(LogSegment(self.dir, offset, self.config.index_interval_bytes))
        self.epoch_cache.clear()
        self.producers.clear()
        self.producers.delete_all_snapshots()
        self.log_start_offset = offset
        write_offset(self.dir / LOG_START_CHECKPOINT, offset)
        self.high_watermark = offset
        self._set_recovery_point(offset)

    def delete_range(self, first: int, last: int) -> int:
        """Delete a chunk's data ``[first, last]`` (inclusive); returns bytes deleted.

        Removes the segments entirely inside the range (rolling first when that includes the
        active segment). When the range starts at or below the log start, the log start moves
        past ``last``; segments straddling it stay but are unreadable below it. A range reaching
        the LEO empties the log at ``last + 1``.
        """
        if first <= self.log_start_offset and last + 1 >= self.log_end_offset:
            removed = self.size_in_bytes
            self.truncate_fully_and_start_at(last + 1)
            return removed
        active = self._segments[-1]
        if active.size and active.base_offset >= first and active.next_offset <= last + 1:
            self._roll(self.log_end_offset)
        removed = 0
        keep: list[LogSegment] = []
        for segment in self._segments[:-1]:
            if segment.base_offset >= first and segment.next_offset <= last + 1:
                removed += segment.size
                segment.delete()
            else:
                keep.append(segment)
        keep.append(self._segments[-1])
        self._segments = keep
        self._bases = [s.base_offset for s in keep]
        if first <= self.log_start_offset:
            removed += self._advance_log_start(last + 1)
        fsync_dir(self.dir)
        return removed

    def _advance_log_start(self, offset: int) -> int:
        """Move the log start up to ``offset``, deleting non-active segments wholly below it."""
        if offset <= self.log_start_offset:
            return 0
        removed = 0
        while len(self._segments) > 1 and self._segments[0].next_offset <= offset:
            segment = self._segments.pop(0)
            self._bases.pop(0)
            removed += segment.size
            segment.delete()
        # Never below the first segment (as a reopen computes it): a start in a gap moves up.
        start = max(offset, self._segments[0].base_offset)
        self.log_start_offset = min(start, self.log_end_offset)
        write_offset(self.dir / LOG_START_CHECKPOINT, self.log_start_offset)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self.producers.delete_snapshots_below(self._segments[0].base_offset)
        self.high_watermark = max(self.high_watermark, self.log_start_offset)
        return removed

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete old non-active segments by time and size; returns bytes deleted.

        Time: a segment whose largest timestamp is more than ``retention_ms`` old. Size: the
        oldest segments while the log exceeds ``retention_bytes`` by at least their size. Only a
        prefix of segments wholly below the high watermark goes, and the log start moves to the
        first remaining segment. Idle producers past ``producer_id_expiration_ms`` are forgotten.
        """
        now = self._clock() if now_ms is None else now_ms
        config = self.config
        excess = self.size_in_bytes - config.retention_bytes if config.retention_bytes >= 0 else -1
        count = 0
        for segment in self._segments[:-1]:
            if segment.next_offset > self.high_watermark:
                break
            by_time = config.retention_ms >= 0 and now - segment.max_timestamp > config.retention_ms
            by_size = excess >= segment.size
            if not (by_time or by_size):
                break
            excess -= segment.size
            count += 1
        self.producers.remove_expired(now, config.producer_id_expiration_ms)
        if not count:
            return 0
        return self._advance_log_start(self._segments[count].base_offset)

    # ================================================================== flushing and closing

    def _set_recovery_point(self, offset: int) -> None:
        if offset != self._recovery_point:
            write_offset(self.dir / RECOVERY_POINT_CHECKPOINT, offset)
            self._recovery_point = offset

    def flush(self, now_ms: int | None = None) -> None:
        """fsync the data and indexes of every segment, then move the recovery point to LEO."""
        for segment in self._segments:
            segment.flush()
        self._set_recovery_point(self.log_end_offset)
        self._unflushed_messages = 0
        self._last_flush_ms = self._clock() if now_ms is None else now_ms

    def maybe_flush(self, now_ms: int | None = None) -> bool:
        """Flush when ``flush_interval_messages`` or ``flush_interval_ms`` says so."""
        now = self._clock() if now_ms is None else now_ms
        if self._unflushed_messages and (
            self._unflushed_messages >= self.config.flush_interval_messages
            or now - self._last_flush_ms >= self.config.flush_interval_ms
        ):
            self.flush(now)
            return True
        return False

    def close(self) -> None:
        """Flush, snapshot producer state at the LEO, checkpoint, close the files."""
        if self._closed:
            return
        self.flush()
        self.producers.take_snapshot(self.log_end_offset)
        self.checkpoint_high_watermark()
        for segment in self._segments:
            segment.close()
        self._closed = True

    def close_files(self) -> None:
        """Close the files without flushing (the log is about to be deleted)."""
        for segment in self._segments:
            segment.close_without_flush()
        self._closed = True

    def delete(self) -> None:
        """Close the files without flushing and remove the whole directory."""
        self.close_files()
        shutil.rmtree(self.dir, ignore_errors=True)
        parent = self.dir.parent
        if parent.exists():
            fsync_dir(parent)


def _topic_id_of(text: str) -> str | None:
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            return value.strip()
    return None


def _check_offsets_fit(first: int, last: int) -> None:
    """OFFSET_OUT_OF_RANGE unless offsets ``first .. last`` fit the log: the log end offset
    after them (``last + 1``) must still be an int64, so ``last`` < MAX_OFFSET (2^63 - 1).

    Kafka's offsets are int64 and it has no answer of its own for a log that is full (its
    segments fail with an overflow exception, UNKNOWN_SERVER_ERROR on the wire);
    OFFSET_OUT_OF_RANGE says what happened, is not retriable (a retry cannot fit either), and
    is answered per partition, so the other partitions of the request are unaffected.
    """
    if first < 0 or last >= MAX_OFFSET:
        raise ApiException(
            Errors.OFFSET_OUT_OF_RANGE,
            f"offsets {first}..{last} do not fit the log: its last offset can be at most "
            f"{MAX_OFFSET - 1} (2^63 - 2)",
        )
