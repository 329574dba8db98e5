"""Producer: Kafka's producer for chunkraft's brokers, idempotent and transactional.

A synchronous API over a sender that runs its own asyncio event loop in a daemon thread:

- :meth:`Producer.send` picks the partition (the caller's, Kafka's murmur2 of the key, or the
  topic's sticky partition for unkeyed records: :mod:`.partitioner`), appends the record to
  that partition's open batch and returns a :class:`FutureRecordMetadata`. A batch is sent
  once it holds ``batch_size`` records or is ``linger_ms`` old (or on :meth:`flush`).
- The sender sends, per leader broker, one produce request carrying at most one batch per
  partition, with the topic's partition count (KIP-253); an idempotent producer keeps up to
  ``max_in_flight`` (5) batches in flight per partition, each with its sequence numbers, so
  the broker drops retried duplicates and refuses gaps (OUT_OF_ORDER_SEQUENCE_NUMBER, retried:
  concurrent HTTP requests may arrive out of order). A batch that failed retriably is sent
  again alone before the next ones, after ``retry_backoff_ms``, until
  ``delivery_timeout_ms`` after its creation; leader errors refresh the metadata first.
- INVALID_PARTITION_COUNT (KIP-253: the topic grew): the sender holds the topic, waits until
  none of its batches is in flight, refreshes the metadata, and re-partitions every record
  of the topic not yet acknowledged with the new count (keyed records move to the key's new
  partition; explicit partitions and unkeyed records stay), in send order. A batch that may
  have been written (an attempt got no answer, or an error a leader can answer after its
  append, such as NOT_LEADER_OR_FOLLOWER when the expansion bumped the leader epoch while it
  waited for the ISR) is not re-partitioned: it goes again as it
  was, with the new count, and the broker answers it as a duplicate if it holds it; the
  sequences of the other batches continue after it (or after the last acknowledged one).
- Transactions (KIP-98): :meth:`init_transactions` gets the producer id and a new epoch from
  the transaction coordinator (fencing older producers of the same ``transactional_id``);
  each partition is added to the transaction (AddPartitionsToTxn) before its first batch;
  :meth:`send_offsets_to_transaction` adds a group's offsets (AddOffsetsToTxn, then
  TxnOffsetCommit at the group coordinator); :meth:`commit_transaction` flushes then ends the
  transaction (EndTxn); :meth:`abort_transaction` flushes and aborts. A send that failed makes
  the transaction abortable only; PRODUCER_FENCED / INVALID_PRODUCER_EPOCH make the producer
  unusable (:class:`ProducerFencedError`).

Thread-safety: :meth:`send` may be called from any thread; the transactional calls, flush and
close from one thread at a time.

The producer is built in layers, one module each, imported one way: ``producer_core`` (shared
state, the loop thread, metadata), ``producer_transactions`` (the coordinator calls),
``producer_sender`` (the sender); this module is the public API.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from chunkraft.client.metadata import PartitionInfo
from chunkraft.client.producer_batches import (
    FutureRecordMetadata,
    PendingRecord,
    ProducerBatch,
    ProducerError,
    ProducerFencedError,
    RecordMetadata,
    TransactionError,
)
from chunkraft.client.producer_core import TxnState
from chunkraft.client.producer_sender import ProducerSender
from chunkraft.error_codes import Errors

__all__ = [
    "FutureRecordMetadata",
    "Producer",
    "ProducerError",
    "ProducerFencedError",
    "RecordMetadata",
    "TransactionError",
]


def _bytes(data: bytes | str | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


class Producer(ProducerSender):
    """Kafka's producer (see the module docstring).

    ``bootstrap``: broker URLs. ``acks``: -1 (all in-sync replicas), 1 or 0; an idempotent or
    transactional producer needs -1 (with ``acks`` != -1 idempotence is off). ``batch_size``
    counts records. ``delivery_timeout_ms`` bounds a record's retries; ``max_block_ms`` how
    long ``send`` waits for a topic's metadata. ``transport`` / ``async_transport``: httpx
    transports for tests.
    """

    # ------------------------------------------------------------------ public API

    def send(self, topic: str, value: bytes | str | None, key: bytes | str | None = None,
             partition: int | None = None, timestamp_ms: int | None = None,
             headers: Iterable[tuple[str, bytes | None]] = ()) -> FutureRecordMetadata:
        """Queues one record; the future gives its :class:`RecordMetadata` once written (or
        raises its :class:`ProducerError`). Raises at once if the producer is closed or
        fenced, outside a transaction of a transactional producer, for an unknown topic (after
        ``max_block_ms``) or a partition out of range."""
        if self._fatal is not None:
            raise ProducerError(f"the producer failed: {self._fatal}")
        if self._closed:
            raise ProducerError("the producer is closed")
        if self._txn is not TxnState.NONE and self._txn is not TxnState.IN_TRANSACTION:
            raise TransactionError(f"send needs an ongoing transaction (state: "
                                   f"{self._txn.value}); call begin_transaction()")
        count = self._partition_count(topic)
        key_bytes = _bytes(key)
        explicit = partition is not None
        if partition is None:
            partition = self._partitioner.partition(topic, key_bytes, count)
        elif not 0 <= partition < count:
            raise ProducerError(f"partition {partition} of {topic!r} does not exist (it has "
                                f"{count})", Errors.UNKNOWN_TOPIC_OR_PARTITION)
        stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        wake = False
        with self._lock:
            self._order += 1
            record = PendingRecord(topic, partition, key_bytes, _bytes(value), stamp,
                                   tuple(headers), explicit, self._order)
            batch = self._open.get((topic, partition))
            if batch is not None and batch.partition_count != count:
                self._closed_batches.append(self._open.pop((topic, partition)))
                batch, wake = None, True
            if batch is None:
                batch = ProducerBatch(topic, partition, count)
                batch.deadline = batch.created + self.delivery_timeout
                self._open[(topic, partition)] = batch
                # The sender wakes by itself within linger_ms unless it is idle.
                wake = wake or self._idle
                self._idle = False
            batch.add(record)
            self._unfinished += 1
            full = len(batch) >= self.batch_size
            if full:
                self._closed_batches.append(self._open.pop((topic, partition)))
        if full and key_bytes is None and not explicit:
            self._partitioner.next_batch(topic, count, partition)
        if wake or full:
            self._wake()
        return record

    def flush(self, timeout: float | None = None) -> None:
        """Sends every queued record now and waits until each has succeeded or failed."""
        ends = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._flushing += 1
        try:
            self._wake()
            with self._done:
                while self._unfinished > 0:
                    if not self._thread.is_alive():
                        raise ProducerError(f"flush: the sender has stopped with "
                                            f"{self._unfinished} records unfinished: "
                                            f"{self._fatal or 'closed'}")
                    remaining = None if ends is None else ends - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise ProducerError(f"flush: {self._unfinished} records still "
                                            "unfinished", Errors.REQUEST_TIMED_OUT)
                    self._done.wait(0.5 if remaining is None else min(0.5, remaining))
        finally:
            with self._lock:
                self._flushing -= 1

    def close(self, timeout: float | None = None) -> None:
        """Flushes (unless the producer failed), then stops the sender; idempotent."""
        if self._closed and not self._thread.is_alive():
            return
        try:
            if self._fatal is None:
                self.flush(timeout)
        finally:
            self._closed = True
            self._stopping = True
            self._wake()
            self._thread.join(timeout=30)
            self.metadata.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def partitions_for(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions (from the metadata, fetched if unknown)."""
        self._partition_count(topic)
        return self.metadata.partitions_for(topic)

    @property
    def producer_id(self) -> tuple[int, int]:
        """(producer id, epoch); (-1, -1) before the first send / init_transactions."""
        return self._producer_id, self._producer_epoch

    # ------------------------------------------------------------------ transactions

    def init_transactions(self) -> None:
        """Gets the producer id and a new epoch from the transaction coordinator (fencing
        older producers of this transactional id; their open transaction is aborted)."""
        self._need_txn((TxnState.UNINITIALIZED, TxnState.READY), "init_transactions")
        self._call(self._init_transactional_id())
        self._txn = TxnState.READY

    def begin_transaction(self) -> None:
        self._need_txn((TxnState.READY,), "begin_transaction")
        self._txn_partitions.clear()
        self._txn_offsets = False
        self._txn_error = None
        self._txn = TxnState.IN_TRANSACTION

    def send_offsets_to_transaction(self, offsets: Mapping[tuple[str, int], int],
                                    group_id: str) -> None:
        """Commits ``offsets`` (the next offset to read, by (topic, partition)) of
        ``group_id`` as part of the transaction: visible only if it commits."""
        self._need_txn((TxnState.IN_TRANSACTION,), "send_offsets_to_transaction")
        self._call(self._send_offsets(dict(offsets), group_id))

    def commit_transaction(self) -> None:
        """Flushes, then commits. A failed send raises :class:`TransactionError`: abort."""
        self._need_txn((TxnState.IN_TRANSACTION,), "commit_transaction")
        self.flush()
        if self._fatal is not None:
            raise ProducerFencedError(str(self._fatal))
        if self._txn_error is not None:
            raise TransactionError(f"a record of the transaction failed ({self._txn_error}); "
                                   "abort_transaction() is the only way on")
        self._call(self._end_txn(committed=True))
        self._txn = TxnState.READY

    def abort_transaction(self) -> None:
        """Flushes (the records are written, then hidden by the abort marker) and aborts."""
        self._need_txn((TxnState.IN_TRANSACTION,), "abort_transaction")
        self.flush()
        if self._fatal is not None:
            raise ProducerFencedError(str(self._fatal))
        self._call(self._end_txn(committed=False))
        self._txn = TxnState.READY
