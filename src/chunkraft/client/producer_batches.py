"""The producer's records, batches, results and errors.

A :class:`PendingRecord` is one ``send``: its data, where it goes, and the future its caller
waits on. Records of one partition are collected in a :class:`ProducerBatch` until it is full
or lingered long enough; a sent batch keeps its producer id, epoch and base sequence for its
retries (the broker recognises a retried batch by them and answers the first offsets again),
until a KIP-253 re-partitioning takes its records back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
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


class PendingRecord:
    """One record on its way, and the caller's future of its outcome (what ``send`` returns,
    exported as :data:`FutureRecordMetadata`).

    ``get(timeout)`` / ``result(timeout)`` give the :class:`RecordMetadata` or raise the
    :class:`ProducerError` (TimeoutError if ``timeout`` passes first); ``exception(timeout)``,
    ``done()`` and ``add_done_callback(fn)`` work as ``concurrent.futures.Future``'s.
    ``explicit``: the caller chose the partition (a re-partitioning keeps it); ``order``: the
    producer-wide send order (a re-partitioning keeps it too).

    A record waits on its batch's event rather than owning a ``Future``: one event per batch
    is much cheaper than a condition variable per record. A KIP-253 re-partitioning moves the
    record to a new batch and wakes the old batch's waiters, who then wait on the new one.
    """

    __slots__ = ("_callbacks", "batch", "explicit", "headers", "index", "key", "order",
                 "partition", "timestamp_ms", "topic", "value")

    def __init__(self, topic: str, partition: int, key: bytes | None, value: bytes | None,
                 timestamp_ms: int, headers: tuple[tuple[str, bytes | None], ...],
                 explicit: bool, order: int) -> None:
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.timestamp_ms = timestamp_ms
        self.headers = headers
        self.explicit = explicit
        self.order = order
        self.batch: ProducerBatch | None = None
        self.index = 0
        self._callbacks: list[Callable[[PendingRecord], object]] | None = None

    def as_input(self) -> ProducerRecord:
        return ProducerRecord(self.key, self.value, self.timestamp_ms, self.headers)

    # ------------------------------------------------------------------ the future

    def done(self) -> bool:
        batch = self.batch
        return batch is not None and batch.finished and not batch.moved

    def _settled(self, timeout: float | None) -> ProducerBatch:
        ends = None if timeout is None else time.monotonic() + timeout
        while True:
            batch = self.batch
            assert batch is not None, "a record belongs to a batch from its send on"
            remaining = None if ends is None else max(ends - time.monotonic(), 0.0)
            if not batch.event.wait(remaining):
                raise TimeoutError(f"the record was not written within {timeout} s")
            if not batch.moved:
                return batch

    def get(self, timeout: float | None = None) -> RecordMetadata:
        batch = self._settled(timeout)
        if batch.error is not None:
            raise batch.error
        offset = batch.base_offset + self.index if batch.base_offset >= 0 else -1
        return RecordMetadata(self.topic, self.partition, offset, self.timestamp_ms)

    def result(self, timeout: float | None = None) -> RecordMetadata:
        return self.get(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._settled(timeout).error

    def add_done_callback(self, callback: Callable[[PendingRecord], object]) -> None:
        """``callback(self)`` once the record succeeded or failed (at once if it has; else
        on the producer's sender thread)."""
        with _CALLBACKS_LOCK:
            if not self.done():
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(callback)
                return
        callback(self)

    def run_callbacks(self) -> None:
        with _CALLBACKS_LOCK:
            callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            try:
                callback(self)
            except Exception:  # a caller's callback must not stop the sender
                _LOG.exception("a send callback failed")


FutureRecordMetadata = PendingRecord
"""What ``Producer.send`` returns: the record's future (see :class:`PendingRecord`)."""

_CALLBACKS_LOCK = threading.Lock()
_LOG = logging.getLogger(__name__)


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
    event: threading.Event = field(default_factory=threading.Event)
    finished: bool = False
    moved: bool = False
    base_offset: int = -1
    error: BaseException | None = None
    maybe_written: bool = False
    """An attempt ended with no answer: the broker may hold it (a retry is a duplicate)."""

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

    def add(self, record: PendingRecord) -> None:
        record.batch, record.index = self, len(self.records)
        self.records.append(record)

    def complete(self, base_offset: int) -> None:
        """Every record succeeded: record i is at ``base_offset + i`` (-1 stays -1)."""
        self._finish(base_offset, None)

    def fail(self, error: BaseException) -> None:
        self._finish(-1, error)

    def move_away(self) -> None:
        """Its records were moved to other batches (KIP-253): wake their waiters, who then
        wait on the new batches."""
        self.moved = True
        self.finished = True
        self.event.set()

    def _finish(self, base_offset: int, error: BaseException | None) -> None:
        if self.finished:
            return
        self.base_offset, self.error = base_offset, error
        self.finished = True
        self.event.set()
        for record in self.records:
            # Always under the callbacks' lock: a callback added while this batch finishes
            # is then either seen here or, added after ``finished``, run by the caller at once
            # (an unlocked look at ``_callbacks`` could miss one added in between).
            record.run_callbacks()
