"""The producer's records, batches, results and errors.

A :class:`PendingRecord` is one ``send``: its data, where it goes, and the future its caller
waits on. Records of one partition are collected in a :class:`ProducerBatch` until it is full
or lingered long enough; a sent batch keeps its producer id, epoch and base sequence for its
retries (the broker recognises a retried batch by them and answers the first offsets again),
until a KIP-253 re-partitioning takes its records back.
"""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass, field

from chunkraft.dataplane.record_batch import ProducerRecord, build_batch
from chunkraft.error_codes import Errors

__all__ = [
    "FutureRecordMetadata",
    "PendingRecord",
    "ProducerBatch",
    "ProducerError",
    "ProducerFencedError",
    "RecordMetadata",
    "TransactionError",
]


class ProducerError(Exception):
    """A record or an operation failed for good; ``error`` is the Kafka error (None: a
    client-side failure such as a closed producer or a timeout with no broker answer)."""

    def __init__(self, message: str, error: Errors | None = None) -> None:
        self.error = error
        super().__init__(message if error is None else f"{error.name}: {message}")


class ProducerFencedError(ProducerError):
    """A newer producer with the same transactional id exists (PRODUCER_FENCED or
    INVALID_PRODUCER_EPOCH): this producer can only be closed."""


class TransactionError(ProducerError):
    """A transactional operation failed or was called in the wrong state; after a failed
    send or commit the transaction can only be aborted."""


@dataclass(frozen=True)
class RecordMetadata:
    """Where a record was written: its partition, its offset (-1 with acks=0) and its
    timestamp."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int


class FutureRecordMetadata(concurrent.futures.Future[RecordMetadata]):
    """The outcome of one ``send``: ``get(timeout)`` (or ``result``) gives the
    :class:`RecordMetadata` or raises the :class:`ProducerError`."""

    def get(self, timeout: float | None = None) -> RecordMetadata:
        return self.result(timeout)


@dataclass
class PendingRecord:
    """One record on its way. ``explicit``: the caller chose the partition (a re-partitioning
    keeps it); ``order``: the producer-wide send order (a re-partitioning keeps it too)."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...]
    explicit: bool
    order: int
    future: FutureRecordMetadata

    def as_input(self) -> ProducerRecord:
        return ProducerRecord(self.key, self.value, self.timestamp_ms, self.headers)


@dataclass
class ProducerBatch:
    """Records of one partition sent together, built once (``encoded``) and kept for retries.

    ``partition_count``: the topic's partition count the records were partitioned with (the
    produce request carries it: KIP-253). ``base_sequence`` is -1 until the batch is first
    sent by an idempotent producer; ``attempts`` counts sends; ``deadline`` is the monotonic
    time after which its records fail (``delivery_timeout_ms``).
    """

    topic: str
    partition: int
    partition_count: int
    records: list[PendingRecord] = field(default_factory=list)
    created: float = field(default_factory=time.monotonic)
    deadline: float = 0.0
    base_sequence: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    attempts: int = 0
    encoded: bytes | None = None
    last_error: Errors | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def __len__(self) -> int:
        return len(self.records)

    def encode(self, *, transactional: bool) -> bytes:
        """The v2 batch (built on first call, with this batch's producer id, epoch and base
        sequence; the same bytes for every retry)."""
        if self.encoded is None:
            self.encoded = build_batch([r.as_input() for r in self.records],
                                       producer_id=self.producer_id,
                                       producer_epoch=self.producer_epoch,
                                       base_sequence=self.base_sequence,
                                       transactional=transactional)
        return self.encoded

    def complete(self, base_offset: int) -> None:
        """Every record succeeded: record i is at ``base_offset + i`` (-1 stays -1)."""
        for i, record in enumerate(self.records):
            if not record.future.done():
                offset = base_offset + i if base_offset >= 0 else -1
                record.future.set_result(RecordMetadata(record.topic, record.partition, offset,
                                                        record.timestamp_ms))

    def fail(self, error: BaseException) -> None:
        for record in self.records:
            if not record.future.done():
                record.future.set_exception(error)
