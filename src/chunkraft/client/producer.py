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
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import enum
import ssl
import threading
import time
import uuid
from collections import deque
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from chunkraft.client.broker_client import BrokerClientError
from chunkraft.client.metadata import ClusterMetadata, MetadataUnavailableError, PartitionInfo
from chunkraft.client.partitioner import StickyPartitioner, partition_for_key
from chunkraft.client.producer_batches import (
    FutureRecordMetadata,
    PendingRecord,
    ProducerBatch,
    ProducerError,
    ProducerFencedError,
    RecordMetadata,
    TransactionError,
)
from chunkraft.client.producer_rpc import BrokerRpc
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    GROUP_KEY,
    TRANSACTION_KEY,
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    EndTxnRequest,
    EndTxnResponse,
    OffsetCommitPartition,
    OffsetCommitTopic,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from chunkraft.protocol.data_plane import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProducePartitionData,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicData,
)

__all__ = [
    "FutureRecordMetadata",
    "Producer",
    "ProducerError",
    "ProducerFencedError",
    "RecordMetadata",
    "TransactionError",
]

T = TypeVar("T")

_LEADER_ERRORS = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE,
                            Errors.UNKNOWN_TOPIC_OR_PARTITION})
_RETRIABLE = _LEADER_ERRORS | {Errors.REQUEST_TIMED_OUT, Errors.NOT_ENOUGH_REPLICAS,
                               Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                               Errors.KAFKA_STORAGE_ERROR, Errors.NETWORK_EXCEPTION,
                               Errors.CONCURRENT_TRANSACTIONS}
_FENCED = frozenset({Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH})
_MAYBE_APPENDED = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.REQUEST_TIMED_OUT,
                             Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                             Errors.UNKNOWN_SERVER_ERROR, Errors.NETWORK_EXCEPTION})
"""Outcomes after which the batch may be on the log: no answer (NETWORK_EXCEPTION, or no
result for the partition), or an error a leader may answer after it appended the batch
(acks=all: the leader epoch changed, the ISR did not catch up in time or shrank while it
waited). The batch may be on the log, so a
KIP-253 re-partitioning must send it again as it was, never move its records (they would be
written twice, and the sequences after it reused)."""
_OUT_OF_ORDER_ATTEMPTS = 10
"""An OUT_OF_ORDER_SEQUENCE_NUMBER is retried this many times (an earlier batch overtaken on
another connection lands meanwhile); beyond, the sequence is lost and the batch fails."""


class _Txn(enum.Enum):
    NONE = "none"  # not transactional
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    FATAL = "fatal"


@dataclass
class _PartitionState:
    """The sender's state of one partition (event loop only)."""

    queue: deque[ProducerBatch] = field(default_factory=deque)
    in_flight: int = 0
    next_sequence: int = 0
    acked_sequence: int = 0  # the sequence after the highest acknowledged batch
    known: bool = False
    """The partition's leader acknowledged a batch of the current producer id and epoch. Until
    then one batch at a time: a leader accepts any first sequence of a producer it does not
    know, so a second batch overtaking the first on another connection would be taken."""
    backoff_until: float = 0.0


def _bytes(data: bytes | str | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


class Producer:
    """Kafka's producer (see the module docstring).

    ``bootstrap``: broker URLs. ``acks``: -1 (all in-sync replicas), 1 or 0; an idempotent or
    transactional producer needs -1 (with ``acks`` != -1 idempotence is off). ``batch_size``
    counts records. ``delivery_timeout_ms`` bounds a record's retries; ``max_block_ms`` how
    long ``send`` waits for a topic's metadata. ``transport`` / ``async_transport``: httpx
    transports for tests.
    """

    def __init__(self, bootstrap: list[str], *, token: str | None = None,
                 verify: ssl.SSLContext | bool = True, acks: int = -1,
                 enable_idempotence: bool = True, transactional_id: str | None = None,
                 transaction_timeout_ms: int = 60_000, linger_ms: float = 5,
                 batch_size: int = 100, delivery_timeout_ms: int = 120_000,
                 retry_backoff_ms: int = 100, request_timeout_ms: int = 30_000,
                 max_in_flight: int = 5, max_block_ms: int = 60_000,
                 metadata_max_age_ms: int = 300_000, client_id: str | None = None,
                 transport: httpx.BaseTransport | None = None,
                 async_transport: httpx.AsyncBaseTransport | None = None) -> None:
        if acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1, 0 or 1, not {acks}")
        if transactional_id is not None and acks != -1:
            raise ValueError("a transactional producer needs acks=-1")
        if batch_size < 1 or max_in_flight < 1:
            raise ValueError("batch_size and max_in_flight must be positive")
        self.client_id = client_id or f"producer-{uuid.uuid4().hex[:8]}"
        self.acks = acks
        self.transactional_id = transactional_id
        self.idempotent = transactional_id is not None or (enable_idempotence and acks == -1)
        self.transaction_timeout_ms = transaction_timeout_ms
        self.linger = linger_ms / 1000
        self.batch_size = batch_size
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self.max_block = max_block_ms / 1000
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.metadata = ClusterMetadata(bootstrap, token=token, verify=verify,
                                        timeout=request_timeout_ms / 1000 + 5,
                                        transport=transport)
        self._partitioner = StickyPartitioner(start=hash(self.client_id) & 0xFFFF)
        # Shared with send() callers: guarded by _lock.
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._open: dict[tuple[str, int], ProducerBatch] = {}
        self._closed_batches: list[ProducerBatch] = []
        self._unfinished = 0
        self._flushing = 0
        self._order = 0
        self._closed = False
        self._idle = True  # the sender waits for a wake-up, not for a lingering batch
        # The event loop's own state.
        self._states: dict[tuple[str, int], _PartitionState] = {}
        self._producer_id = -1
        self._producer_epoch = -1
        self._held: dict[str, list[ProducerBatch]] = {}
        self._held_at: dict[str, int] = {}
        self._refreshes = 0
        self._refresh_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._txn = _Txn.NONE if transactional_id is None else _Txn.UNINITIALIZED
        self._txn_partitions: set[tuple[str, int]] = set()
        self._txn_offsets = False
        self._txn_error: BaseException | None = None
        self._fatal: BaseException | None = None
        self._stopping = False
        self._rpc_options = {"token": token, "verify": verify,
                             "timeout": request_timeout_ms / 1000 + 5,
                             "retry_backoff": self.retry_backoff, "transport": async_transport}
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, name=f"{self.client_id}-sender",
                                        daemon=True)
        self._thread.start()
        self._ready.wait()

    # ------------------------------------------------------------------ the loop thread

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._wake_event = asyncio.Event()
        self._rpc = BrokerRpc(**self._rpc_options)  # type: ignore[arg-type]
        self._sender_task = self._loop.create_task(self._sender())
        self._ready.set()
        self._loop.run_until_complete(self._sender_task)
        self._loop.run_until_complete(self._shutdown())
        self._loop.close()

    async def _shutdown(self) -> None:
        """Lets a metadata refresh under way end (it runs in a worker thread and cannot be
        cancelled) and cancels what else is left, then closes the connections."""
        if self._refresh_task is not None:
            await asyncio.gather(self._refresh_task, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._rpc.aclose()

    def _call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs ``coroutine`` on the sender's loop and waits for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _wake(self) -> None:
        # A closed loop (RuntimeError) means a closed producer: nothing to wake.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._wake_event.set)

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
        if self._txn is not _Txn.NONE and self._txn is not _Txn.IN_TRANSACTION:
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
        self._need_txn((_Txn.UNINITIALIZED, _Txn.READY), "init_transactions")
        self._call(self._init_transactional_id())
        self._txn = _Txn.READY

    def begin_transaction(self) -> None:
        self._need_txn((_Txn.READY,), "begin_transaction")
        self._txn_partitions.clear()
        self._txn_offsets = False
        self._txn_error = None
        self._txn = _Txn.IN_TRANSACTION

    def send_offsets_to_transaction(self, offsets: Mapping[tuple[str, int], int],
                                    group_id: str) -> None:
        """Commits ``offsets`` (the next offset to read, by (topic, partition)) of
        ``group_id`` as part of the transaction: visible only if it commits."""
        self._need_txn((_Txn.IN_TRANSACTION,), "send_offsets_to_transaction")
        self._call(self._send_offsets(dict(offsets), group_id))

    def commit_transaction(self) -> None:
        """Flushes, then commits. A failed send raises :class:`TransactionError`: abort."""
        self._need_txn((_Txn.IN_TRANSACTION,), "commit_transaction")
        self.flush()
        if self._fatal is not None:
            raise ProducerFencedError(str(self._fatal))
        if self._txn_error is not None:
            raise TransactionError(f"a record of the transaction failed ({self._txn_error}); "
                                   "abort_transaction() is the only way on")
        self._call(self._end_txn(committed=True))
        self._txn = _Txn.READY

    def abort_transaction(self) -> None:
        """Flushes (the records are written, then hidden by the abort marker) and aborts."""
        self._need_txn((_Txn.IN_TRANSACTION,), "abort_transaction")
        self.flush()
        if self._fatal is not None:
            raise ProducerFencedError(str(self._fatal))
        self._call(self._end_txn(committed=False))
        self._txn = _Txn.READY

    def _need_txn(self, states: tuple[_Txn, ...], operation: str) -> None:
        if self._txn is _Txn.NONE:
            raise TransactionError(f"{operation} needs a transactional_id")
        if self._fatal is not None:
            raise ProducerFencedError(f"{operation}: the producer failed: {self._fatal}")
        if self._txn not in states:
            raise TransactionError(f"{operation} is not allowed in state {self._txn.value}",
                                   Errors.INVALID_TXN_STATE)

    def _txn_id(self) -> str:
        assert self.transactional_id is not None
        return self.transactional_id

    def _raise_txn_error(self, operation: str, error: Errors, message: str | None) -> None:
        if error is Errors.NONE:
            return
        text = f"{operation}: {message or error.name}"
        if error in _FENCED:
            self._fatal = ProducerFencedError(text, error)
            self._txn = _Txn.FATAL
            raise self._fatal
        raise TransactionError(text, error)

    async def _init_transactional_id(self) -> None:
        deadline = time.monotonic() + self.max_block
        answer = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls, "init-producer-id",
            InitProducerIdRequest(transactional_id=self._txn_id(),
                                  transaction_timeout_ms=self.transaction_timeout_ms,
                                  producer_id=self._producer_id,
                                  producer_epoch=self._producer_epoch),
            InitProducerIdResponse, lambda a: Errors.for_code(a.error_code), deadline)
        self._raise_txn_error("init_transactions", Errors.for_code(answer.error_code),
                              answer.error_message)
        self._set_producer(answer.producer_id, answer.producer_epoch)

    def _set_producer(self, producer_id: int, epoch: int) -> None:
        self._producer_id, self._producer_epoch = producer_id, epoch
        for state in self._states.values():  # a new id or epoch starts every sequence at 0
            state.next_sequence = state.acked_sequence = 0
            state.known = False

    async def _add_partitions(self, keys: set[tuple[str, int]]) -> None:
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(keys):
            topics.setdefault(topic, []).append(partition)
        request = AddPartitionsToTxnRequest(
            transactional_id=self._txn_id(), producer_id=self._producer_id,
            producer_epoch=self._producer_epoch, topics=tuple(
                AddPartitionsToTxnTopic(name=name, partitions=tuple(parts))
                for name, parts in topics.items()))

        def error_of(answer: AddPartitionsToTxnResponse) -> Errors:
            if answer.error_code:
                return Errors.for_code(answer.error_code)
            codes = [Errors.for_code(r.error_code) for t in answer.results for r in t.results
                     if r.error_code]
            return next((c for c in codes if c.retriable), codes[0] if codes else Errors.NONE)

        answer = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls,
            "add-partitions-to-txn", request, AddPartitionsToTxnResponse, error_of,
            time.monotonic() + self.delivery_timeout)
        error = error_of(answer)
        if error is Errors.NONE:
            self._txn_partitions.update(keys)
            return
        message = answer.error_message or next(
            (r.error_message for t in answer.results for r in t.results if r.error_message),
            None)
        self._raise_txn_error("add-partitions-to-txn", error, message)

    async def _send_offsets(self, offsets: dict[tuple[str, int], int], group_id: str) -> None:
        deadline = time.monotonic() + self.delivery_timeout
        added = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls,
            "add-offsets-to-txn", AddOffsetsToTxnRequest(
                transactional_id=self._txn_id(), producer_id=self._producer_id,
                producer_epoch=self._producer_epoch, group_id=group_id),
            AddOffsetsToTxnResponse, lambda a: Errors.for_code(a.error_code), deadline)
        self._raise_txn_error("add-offsets-to-txn", Errors.for_code(added.error_code),
                              added.error_message)
        self._txn_offsets = True
        topics: dict[str, list[OffsetCommitPartition]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append(OffsetCommitPartition(
                partition_index=partition, committed_offset=offset))
        request = TxnOffsetCommitRequest(
            transactional_id=self._txn_id(), group_id=group_id, producer_id=self._producer_id,
            producer_epoch=self._producer_epoch, topics=tuple(
                OffsetCommitTopic(name=name, partitions=tuple(parts))
                for name, parts in topics.items()))

        def error_of(answer: TxnOffsetCommitResponse) -> Errors:
            codes = [Errors.for_code(p.error_code) for t in answer.topics for p in t.partitions
                     if p.error_code]
            return next((c for c in codes if c.retriable), codes[0] if codes else Errors.NONE)

        committed = await self._rpc.coordinator_call(
            GROUP_KEY, group_id, self.metadata.candidate_urls, "txn-offset-commit", request,
            TxnOffsetCommitResponse, error_of, deadline)
        self._raise_txn_error("txn-offset-commit", error_of(committed), None)

    async def _end_txn(self, *, committed: bool) -> None:
        if not self._txn_partitions and not self._txn_offsets:
            return  # nothing joined the transaction: the coordinator has nothing to end
        answer = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls, "end-txn",
            EndTxnRequest(transactional_id=self._txn_id(), producer_id=self._producer_id,
                          producer_epoch=self._producer_epoch, committed=committed),
            EndTxnResponse, lambda a: Errors.for_code(a.error_code),
            time.monotonic() + self.delivery_timeout)
        self._raise_txn_error("commit_transaction" if committed else "abort_transaction",
                              Errors.for_code(answer.error_code), answer.error_message)
        self._txn_partitions.clear()
        self._txn_offsets = False

    # ------------------------------------------------------------------ metadata

    def _partition_count(self, topic: str) -> int:
        count = self.metadata.partition_count(topic)
        if count is not None:
            return count
        ends = time.monotonic() + self.max_block
        while True:
            problem = ""
            try:
                self.metadata.refresh([topic])
            except MetadataUnavailableError as unavailable:
                problem = str(unavailable)
            count = self.metadata.partition_count(topic)
            if count is not None:
                return count
            topic_error = self.metadata.topic_error(topic)
            if topic_error is not None and not topic_error.retriable:
                raise ProducerError(f"topic {topic!r}", topic_error)
            if time.monotonic() + self.retry_backoff > ends:
                raise ProducerError(f"no metadata for topic {topic!r} within "
                                    f"{self.max_block} s {problem}",
                                    topic_error or Errors.UNKNOWN_TOPIC_OR_PARTITION)
            time.sleep(self.retry_backoff)

    def _request_refresh(self) -> None:
        if self._refresh_task is None or self._refresh_task.done():
            self._refresh_task = self._loop.create_task(self._refresh())

    async def _refresh(self) -> None:
        try:
            await self._loop.run_in_executor(None, self.metadata.refresh)
            self._refreshes += 1
        except MetadataUnavailableError:
            await asyncio.sleep(self.retry_backoff)
        self._wake_event.set()

    # ------------------------------------------------------------------ the sender

    def _state(self, key: tuple[str, int]) -> _PartitionState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _PartitionState()
        return state

    async def _sender(self) -> None:
        while True:
            timeout = self._drain()
            if self._stopping and not self._states_busy():
                return
            try:
                await self._prepare()
                self._repartition_ready()
                self._dispatch()
                self._expire()
            except ProducerError as error:
                self._fail_everything(error)
            if self.metadata.age > self.metadata_max_age and self.metadata.metadata_offset >= 0:
                self._request_refresh()  # periodic (metadata.max.age.ms), once there is any
            now = time.monotonic()
            backoffs = [s.backoff_until - now for s in self._states.values()
                        if s.queue and s.backoff_until > now]
            if backoffs:
                timeout = min(timeout, max(min(backoffs), 0.001))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake_event.wait(), timeout)
            self._wake_event.clear()

    def _states_busy(self) -> bool:
        with self._lock:
            if self._open or self._closed_batches:
                return True
        return bool(self._held) or any(s.queue or s.in_flight for s in self._states.values())

    def _drain(self) -> float:
        """Moves complete batches (full, lingered, or all when flushing or closing) to their
        partitions' queues; the seconds until the next open batch lingered enough."""
        now = time.monotonic()
        moved: list[ProducerBatch] = []
        timeout = 1.0
        with self._lock:
            moved.extend(self._closed_batches)
            self._closed_batches.clear()
            everything = self._flushing > 0 or self._stopping
            self._idle = False
            for key, batch in list(self._open.items()):
                age = now - batch.created
                if everything or age >= self.linger:
                    moved.append(self._open.pop(key))
                    self._partitioner.next_batch(batch.topic, batch.partition_count,
                                                 batch.partition)
                else:
                    timeout = min(timeout, self.linger - age)
            if not self._open:
                self._idle = True
        for batch in moved:
            if batch.topic in self._held:
                self._held[batch.topic].append(batch)
            else:
                self._state(batch.key).queue.append(batch)
        return max(timeout, 0.0005)

    async def _prepare(self) -> None:
        """The producer id (idempotent, lazily) and, in a transaction, AddPartitionsToTxn for
        partitions about to get their first batch."""
        waiting = [key for key, state in self._states.items() if state.queue]
        if not waiting:
            return
        if self.idempotent and self._producer_id < 0 and self.transactional_id is None:
            answer = await self._init_producer_id()
            self._set_producer(answer.producer_id, answer.producer_epoch)
        if self.transactional_id is not None:
            new = {key for key in waiting if key not in self._txn_partitions}
            if new:
                try:
                    await self._add_partitions(new)
                except ProducerError as error:
                    self._txn_error = error
                    for key in new:
                        self._fail_queue(key, error)
                    if isinstance(error, ProducerFencedError):
                        raise

    async def _init_producer_id(self) -> InitProducerIdResponse:
        deadline = time.monotonic() + self.delivery_timeout
        last = ""
        while True:
            for url in self.metadata.candidate_urls():
                try:
                    answer = await self._rpc.post(url, "init-producer-id",
                                                  InitProducerIdRequest(),
                                                  InitProducerIdResponse)
                except BrokerClientError as error:
                    if error.status in (400, 401, 403):
                        raise ProducerError(f"init-producer-id: {error}",
                                            error.error) from error
                    last = str(error)
                    continue
                except httpx.HTTPError as error:
                    last = f"{url}: {type(error).__name__}: {error}"
                    continue
                error_code = Errors.for_code(answer.error_code)
                if error_code is Errors.NONE:
                    return answer
                if not error_code.retriable:
                    raise ProducerError(f"init-producer-id: {answer.error_message}", error_code)
                last = error_code.name
            if time.monotonic() > deadline:
                raise ProducerError(f"init-producer-id: gave up; last: {last}",
                                    Errors.REQUEST_TIMED_OUT)
            await asyncio.sleep(self.retry_backoff)

    def _dispatch(self) -> None:
        """Sends what may be sent: per leader, requests with at most one batch per partition
        and one partition count per topic."""
        if self.idempotent and self._producer_id < 0:
            return
        now = time.monotonic()
        requests: dict[str, list[dict[tuple[str, int], ProducerBatch]]] = {}
        for key, state in self._states.items():
            if not state.queue or key[0] in self._held or now < state.backoff_until:
                continue
            if self.transactional_id is not None and key not in self._txn_partitions:
                continue
            url = self.metadata.leader_url(*key)
            if url is None:
                self._request_refresh()
                continue
            slots = requests.setdefault(url, [])
            index = 0
            limit = self.max_in_flight if state.known or not self.idempotent else 1
            while state.queue and state.in_flight < limit:
                batch = state.queue[0]
                if batch.attempts > 0 and state.in_flight > 0:
                    break  # a retried batch goes alone, ahead of the ones after it
                state.queue.popleft()
                if self.idempotent and batch.base_sequence < 0:
                    batch.base_sequence = state.next_sequence
                    batch.producer_id, batch.producer_epoch = (self._producer_id,
                                                               self._producer_epoch)
                    state.next_sequence += len(batch)
                state.in_flight += 1
                while index < len(slots) and not _fits(slots[index], batch):
                    index += 1
                if index == len(slots):
                    slots.append({})
                slots[index][key] = batch
                index += 1
                if batch.attempts > 0:
                    break
        for url, slots in requests.items():
            for slot in slots:
                if slot:
                    task = self._loop.create_task(self._produce(url, list(slot.values())))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

    async def _produce(self, url: str, batches: list[ProducerBatch]) -> None:
        transactional = self.transactional_id is not None
        topics: dict[str, list[ProducerBatch]] = {}
        for batch in batches:
            batch.attempts += 1
            topics.setdefault(batch.topic, []).append(batch)
        request = ProduceRequest(
            transactional_id=self.transactional_id, acks=self.acks,
            timeout_ms=self.request_timeout_ms, topics=tuple(
                ProduceTopicData(name=name, partition_count=group[0].partition_count,
                                 partitions=tuple(ProducePartitionData(
                                     index=b.partition, records=_b64(b.encode(
                                         transactional=transactional))) for b in group))
                for name, group in topics.items()))
        try:
            answer = await self._rpc.post(url, "produce", request, ProduceResponse)
        except BrokerClientError as error:
            fatal = error.status in (400, 401, 403, 413)
            for batch in batches:  # no answer: _outcome marks them as maybe written
                self._outcome(batch, error.error if fatal else Errors.NETWORK_EXCEPTION,
                              -1, str(error))
            return
        except httpx.HTTPError as error:
            self._request_refresh()
            for batch in batches:
                self._outcome(batch, Errors.NETWORK_EXCEPTION, -1,
                              f"{type(error).__name__}: {error}")
            return
        results = {(t.name, p.index): p for t in answer.topics for p in t.partitions}
        for batch in batches:
            result = results.get(batch.key)
            if result is None:
                self._outcome(batch, Errors.UNKNOWN_SERVER_ERROR, -1, "no answer")
            else:
                self._outcome(batch, Errors.for_code(result.error_code), result.base_offset,
                              result.error_message)
        self._wake_event.set()

    def _outcome(self, batch: ProducerBatch, error: Errors, base_offset: int,
                 message: str | None) -> None:
        state = self._state(batch.key)
        state.in_flight -= 1
        batch.last_error = error
        batch.maybe_written = batch.maybe_written or error in _MAYBE_APPENDED
        if error in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
            if batch.base_sequence >= 0:
                state.acked_sequence = max(state.acked_sequence,
                                           batch.base_sequence + len(batch))
                state.known = True
            batch.complete(base_offset)
            self._finished(len(batch))
            return
        if error is Errors.INVALID_PARTITION_COUNT:
            if batch.topic not in self._held:
                self._held[batch.topic] = []
                self._held_at[batch.topic] = self._refreshes
                self._request_refresh()
            self._held[batch.topic].append(batch)
            self._wake_event.set()
            return
        retriable = error in _RETRIABLE or (
            error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
            and batch.attempts < _OUT_OF_ORDER_ATTEMPTS)
        if retriable and time.monotonic() + self.retry_backoff < batch.deadline:
            if error in _LEADER_ERRORS or error is Errors.NETWORK_EXCEPTION:
                self._request_refresh()
            _requeue(state.queue, batch)
            state.backoff_until = time.monotonic() + self.retry_backoff
            self._wake_event.set()
            return
        failure: ProducerError
        if error in _FENCED:
            failure = ProducerFencedError(message or error.name, error)
            self._fatal = failure
            self._txn = _Txn.FATAL if self._txn is not _Txn.NONE else self._txn
        else:
            failure = ProducerError(message or error.name, error)
        self._txn_error = self._txn_error or failure
        batch.fail(failure)
        self._finished(len(batch))

    def _finished(self, count: int) -> None:
        with self._done:
            self._unfinished -= count
            if self._unfinished <= 0:
                self._done.notify_all()

    def _repartition_ready(self) -> None:
        """KIP-253: re-partitions each held topic once none of its batches is in flight and
        the metadata was refreshed after the hold."""
        for topic in list(self._held):
            keys = [key for key in self._states if key[0] == topic]
            if any(self._states[key].in_flight for key in keys):
                continue
            if self._refreshes <= self._held_at[topic]:
                self._request_refresh()
                continue
            count = self.metadata.partition_count(topic)
            if count is None:
                self._request_refresh()
                continue
            batches = self._held.pop(topic)
            del self._held_at[topic]
            for key in keys:
                batches.extend(self._states[key].queue)
                self._states[key].queue.clear()
            with self._lock:
                for key in [k for k in self._open if k[0] == topic]:
                    batches.append(self._open.pop(key))
            kept = _maybe_written(batches)
            for key in keys:
                state = self._states[key]
                mine = [b for b in kept if b.key == key]
                # Kept batches go again as they were (same partition and sequence, the new
                # count): the broker answers a written one as a duplicate.
                for batch in mine:
                    batch.partition_count = count
                state.queue.extend(mine)
                state.next_sequence = max([state.acked_sequence] + [
                    b.base_sequence + len(b) for b in mine])
            kept_ids = {id(b) for b in kept}
            self._requeue_records(topic, count, [b for b in batches if id(b) not in kept_ids])

    def _requeue_records(self, topic: str, count: int, batches: list[ProducerBatch]) -> None:
        deadline_of = {id(r): b.deadline for b in batches for r in b.records}
        records = sorted((r for b in batches for r in b.records), key=lambda r: r.order)
        fresh: dict[int, ProducerBatch] = {}
        for record in records:
            if record.key is not None and not record.explicit:
                record.partition = partition_for_key(record.key, count)
            elif record.partition >= count:  # cannot happen: partitions are only ever added
                record.partition = self._partitioner.partition(topic, None, count)
            batch = fresh.get(record.partition)
            if batch is None or len(batch) >= self.batch_size:
                if batch is not None:
                    self._state((topic, batch.partition)).queue.append(batch)
                batch = fresh[record.partition] = ProducerBatch(topic, record.partition, count)
                batch.deadline = deadline_of[id(record)]
            batch.add(record)
            batch.deadline = min(batch.deadline, deadline_of[id(record)])
        for batch in fresh.values():
            self._state((topic, batch.partition)).queue.append(batch)
        for old in batches:
            old.move_away()

    def _expire(self) -> None:
        now = time.monotonic()
        for state in self._states.values():
            while state.queue and state.queue[0].deadline < now:
                batch = state.queue.popleft()
                error = ProducerError(
                    f"not written within delivery_timeout_ms (last error: "
                    f"{batch.last_error.name if batch.last_error else 'none'})",
                    Errors.REQUEST_TIMED_OUT)
                self._txn_error = self._txn_error or error
                batch.fail(error)
                self._finished(len(batch))

    def _fail_queue(self, key: tuple[str, int], error: BaseException) -> None:
        state = self._state(key)
        while state.queue:
            batch = state.queue.popleft()
            batch.fail(error)
            self._finished(len(batch))

    def _fail_everything(self, error: ProducerError) -> None:
        """A failure of the producer itself (no producer id, fenced): every queued record
        fails with it."""
        for key in list(self._states):
            self._fail_queue(key, error)
        for batches in self._held.values():
            for batch in batches:
                batch.fail(error)
                self._finished(len(batch))
        self._held.clear()
        self._held_at.clear()
        if isinstance(error, ProducerFencedError):
            self._fatal = error


def _maybe_written(batches: list[ProducerBatch]) -> list[ProducerBatch]:
    """The batches of a held topic that may have been written (an attempt ended without an
    answer), per partition in sequence order up to the first one surely not written: the
    broker refuses a sequence gap, so nothing after that one was written either."""
    out: list[ProducerBatch] = []
    by_key: dict[tuple[str, int], list[ProducerBatch]] = {}
    for batch in batches:
        if batch.base_sequence >= 0:
            by_key.setdefault(batch.key, []).append(batch)
    for group in by_key.values():
        for batch in sorted(group, key=lambda b: b.base_sequence):
            if not batch.maybe_written:
                break
            out.append(batch)
    return out


def _fits(slot: dict[tuple[str, int], ProducerBatch], batch: ProducerBatch) -> bool:
    """A request may take ``batch``: no batch of its partition yet, and the same partition
    count as the request's other batches of its topic."""
    if batch.key in slot:
        return False
    return all(other.partition_count == batch.partition_count
               for other in slot.values() if other.topic == batch.topic)


def _requeue(queue: deque[ProducerBatch], batch: ProducerBatch) -> None:
    """Puts a retried batch back in sequence order, ahead of the batches never sent."""
    sequenced = [b.base_sequence for b in queue if b.attempts > 0]
    position = bisect.bisect_left(sequenced, batch.base_sequence) if batch.base_sequence >= 0 \
        else len(sequenced)
    queue.insert(position, batch)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
