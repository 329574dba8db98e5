"""Settings of a log and the small value types its methods return."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "NO_TIMESTAMP",
    "AbortedTransaction",
    "LogAppendInfo",
    "LogConfig",
    "ReadResult",
    "SegmentInfo",
    "wall_clock_ms",
]

NO_TIMESTAMP = -1
_NEVER = 2**63 - 1


def wall_clock_ms() -> int:
    """Milliseconds since the epoch, the default clock of a log."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-log settings, named after Kafka's broker properties; immutable.

    The flush defaults are Kafka's: never forced by count or time, so data reaches the disk when
    a segment rolls, on :meth:`UnifiedLog.flush` and on close (replication is the durability).
    ``retention_ms`` / ``retention_bytes`` of -1 mean unlimited. ``log_append_time`` is
    ``message.timestamp.type=LogAppendTime``: a leader stamps each produced batch with its own
    clock at the append instead of keeping the producer's create time. ``compression`` is
    ``compression.type``: None for ``producer`` (each batch kept as the producer compressed it),
    else the codec id a leader stores every produced batch with (0 for ``uncompressed``),
    recompressing those sent otherwise.
    """

    segment_bytes: int = 1 << 30  # log.segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # log.roll.ms
    retention_ms: int = 7 * 24 * 3600 * 1000  # log.retention.ms
    retention_bytes: int = -1  # log.retention.bytes
    flush_interval_messages: int = _NEVER  # log.flush.interval.messages
    flush_interval_ms: int = _NEVER  # log.flush.interval.ms
    index_interval_bytes: int = 4096  # log.index.interval.bytes
    max_batch_bytes: int = 1_048_588  # message.max.bytes (Kafka's default: 1 MiB + 12)
    producer_id_expiration_ms: int = 24 * 3600 * 1000  # producer.id.expiration.ms
    log_append_time: bool = False  # log.message.timestamp.type=LogAppendTime
    compression: int | None = None  # compression.type (None: producer)

    def __post_init__(self) -> None:
        if not 0 < self.segment_bytes <= 2**31 - 1:
            raise ValueError("segment_bytes must be in 1 .. 2**31-1 (positions are int32)")
        if self.index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must be >= 0")


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """What an append wrote: offsets (inclusive), largest timestamp, records and bytes.

    ``log_append_time_ms`` is the time a LogAppendTime log stamped the batches with, -1 when
    the log keeps the producers' create times (``CreateTime``, Kafka's default). An empty
    append has ``record_count == 0`` and ``first_offset == last_offset + 1 ==`` the log end
    offset.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int
    record_count: int
    valid_bytes: int


class ReadResult(NamedTuple):
    """Whole batches read from a log.

    ``first_offset`` is the base offset of the first batch (the start offset asked for when
    nothing was read); ``next_offset`` is one past the last batch (the start offset asked for
    when nothing was read).
    """

    records: bytes
    first_offset: int
    next_offset: int


class AbortedTransaction(NamedTuple):
    """An aborted transaction as a read_committed fetch reports it."""

    producer_id: int
    first_offset: int


class SegmentInfo(NamedTuple):
    """Read-only facts about one segment."""

    base_offset: int
    next_offset: int
    size_in_bytes: int
    max_timestamp: int

    @property
    def last_offset(self) -> int:
        """The last offset held (``base_offset - 1`` when empty)."""
        return self.next_offset - 1
