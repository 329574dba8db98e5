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

The log is built up in layers, one module each, imported one way: ``log_batches`` (the checks of
a batch), ``log_compression`` (a leader's decompression, check and recompression of a batch),
``log_state`` (segments, offsets, checkpoints, flushing), ``log_recovery`` (opening),
``log_truncation`` (truncation, deletion, retention), ``log_reads`` (reads); this module adds the
appends, as leader, of markers and as follower.

Not thread-safe: the broker calls a log from its one event loop only.
"""

from __future__ import annotations

from chunkraft.broker_agent.storage.config import NO_TIMESTAMP, LogAppendInfo
from chunkraft.broker_agent.storage.errors import UnexpectedAppendOffsetError
from chunkraft.broker_agent.storage.log_batches import (
    BATCH_LENGTH,
    MIN_BATCH_LENGTH,
    MIN_RECORD_BYTES,
    DescribedBatch,
    check_batch,
    check_offsets_fit,
    control_marker,
)
from chunkraft.broker_agent.storage.log_compression import conform_to_topic
from chunkraft.broker_agent.storage.log_reads import LogReads
from chunkraft.broker_agent.storage.log_truncation import LogTruncation
from chunkraft.broker_agent.storage.txn_index import AbortedTxn
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
    build_control_batch,
    parse_header,
    rewrite_base,
    set_log_append_time,
)
from chunkraft.error_codes import ApiException, Errors

__all__ = ["UnifiedLog"]


class UnifiedLog(LogTruncation, LogReads):
    """One partition replica's log: append, read, truncate, retain, recover.

    Offsets: ``log_start_offset`` is the first readable offset, ``log_end_offset`` (LEO) the next
    offset to write, ``high_watermark`` the first not yet replicated to the ISR, all exclusive
    upper bounds as in Kafka. Use :meth:`open`; the constructor is private.
    """

    def append_as_leader(
        self,
        batches: bytes | bytearray | memoryview,
        leader_epoch: int,
        *,
        now_ms: int | None = None,
    ) -> LogAppendInfo:
        """Validate producer batches, give them offsets from the LEO and append them.

        Each batch must be whole, magic 2, CRC-valid, of a codec Kafka has, not a control
        batch, and no larger than ``max_batch_bytes`` (CORRUPT_MESSAGE,
        UNSUPPORTED_COMPRESSION_TYPE, INVALID_RECORD, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE
        otherwise); a compressed batch's records are decompressed and checked, and a batch is
        stored as sent or recompressed to the log's ``compression`` (``log_compression``).
        Idempotent producers are checked as Kafka does: a retry of one of the producer's last
        five batches raises DuplicateSequenceError (nothing is written), a sequence gap
        OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch INVALID_PRODUCER_EPOCH, a non-transactional
        batch during a transaction INVALID_TXN_STATE.
        All or nothing: a refusal writes nothing. Base offsets and partition leader epochs are
        rewritten in place, and on a LogAppendTime log the timestamp type and maximum timestamp
        too (``now_ms``, with a new CRC); the epoch cache records ``leader_epoch`` at the first
        offset.
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
        described: list[DescribedBatch] = []
        # The batches as stored: views into ``buf`` unless one was recompressed.
        stored: list[bytearray | memoryview] = []
        rebuilt_any = False
        pos = 0
        records = 0
        max_ts = NO_TIMESTAMP
        while pos < total:
            if total - pos < BATCH_HEADER_SIZE:
                raise ApiException(
                    Errors.CORRUPT_MESSAGE, f"{total - pos} bytes after the last batch"
                )
            (length,) = BATCH_LENGTH.unpack_from(view, pos + 8)
            size = length + BATCH_OVERHEAD
            if length < MIN_BATCH_LENGTH or pos + size > total:
                raise ApiException(Errors.CORRUPT_MESSAGE, f"batch at byte {pos} is cut short")
            if size > config.max_batch_bytes:
                raise ApiException(
                    Errors.MESSAGE_TOO_LARGE,
                    f"batch of {size} bytes exceeds the maximum {config.max_batch_bytes}",
                )
            batch = view[pos : pos + size]
            header = check_batch(batch)
            if header.is_control:
                raise ApiException(Errors.INVALID_RECORD, "producers cannot write control batches")
            if header.record_count != header.last_offset_delta + 1:
                raise ApiException(
                    Errors.INVALID_RECORD,
                    f"record count {header.record_count} does not match last offset delta "
                    f"{header.last_offset_delta}",
                )
            if (not header.compression
                    and header.record_count * MIN_RECORD_BYTES > size - BATCH_HEADER_SIZE):
                # A header may claim up to 2^31 - 1 records; the records section says how
                # many it can hold. Without this check, one small batch takes 2^31 offsets.
                # (A compressed batch's records are counted once decompressed, below.)
                raise ApiException(
                    Errors.INVALID_RECORD,
                    f"a batch of {size} bytes cannot hold the {header.record_count} records "
                    f"its header claims",
                )
            rebuilt = conform_to_topic(batch, header, target=config.compression,
                                       max_batch_bytes=config.max_batch_bytes)
            if rebuilt is not None:
                if len(rebuilt) > config.max_batch_bytes:
                    raise ApiException(
                        Errors.MESSAGE_TOO_LARGE,
                        f"batch of {len(rebuilt)} bytes once recompressed exceeds the maximum "
                        f"{config.max_batch_bytes}",
                    )
                batch = memoryview(rebuilt)
                header = parse_header(batch)  # its max timestamp is the records' own
                rebuilt_any = True
            staging.check_duplicate(header)
            last = offset + header.last_offset_delta
            check_offsets_fit(offset, last)
            staging.append_data(header, offset, last)
            rewrite_base(batch, offset, leader_epoch)
            batch_ts = header.max_timestamp
            if config.log_append_time:
                set_log_append_time(batch, now)
                batch_ts = now
            described.append((offset, last, batch_ts, len(batch)))
            stored.append(batch)
            records += header.record_count
            max_ts = max(max_ts, batch_ts)
            offset = last + 1
            pos += size
        if not described:
            return LogAppendInfo(leo, leo - 1, NO_TIMESTAMP, -1, 0, 0)
        data: bytes | bytearray = b"".join(stored) if rebuilt_any else buf
        total = len(data)
        if total > config.segment_bytes:  # only a recompression can have grown it
            raise ApiException(
                Errors.RECORD_LIST_TOO_LARGE,
                f"{total} bytes once recompressed exceed the segment size {config.segment_bytes}",
            )
        self._maybe_roll(leo, offset - 1, total, max_ts)
        self._segments[-1].append(data, described)
        staging.commit()
        if leader_epoch > self.epoch_cache.latest_epoch:
            # Only a newer epoch starts an entry; an older one must not truncate the cache.
            self.epoch_cache.assign(leader_epoch, leo)
        self._after_append(records, now)
        append_time = now if config.log_append_time else -1
        return LogAppendInfo(leo, offset - 1, max_ts, append_time, records, total)

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
        check_offsets_fit(leo, leo)
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
        runs: list[
            tuple[int, int, list[DescribedBatch], list[tuple[BatchHeader, tuple[bool, int] | None]]]
        ]
        runs = []
        expected = self.log_end_offset
        pos = 0
        records = 0
        max_ts = NO_TIMESTAMP
        first_offset = -1
        while total - pos >= BATCH_HEADER_SIZE:
            (length,) = BATCH_LENGTH.unpack_from(view, pos + 8)
            size = length + BATCH_OVERHEAD
            if length < MIN_BATCH_LENGTH:
                raise ApiException(Errors.CORRUPT_MESSAGE, f"batch length {length} at byte {pos}")
            if pos + size > total:
                break
            batch = view[pos : pos + size]
            header = check_batch(batch)
            base = header.base_offset
            check_offsets_fit(base, header.last_offset)
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
                    marker = control_marker(batch)
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
