"""The producer's sender: batches to requests per leader, outcomes, retries and KIP-253.

Runs on the producer's event loop only: moves complete batches to their partitions' queues,
sends per leader one request with at most one batch per partition, handles each partition's
outcome (sequence bookkeeping, retries in sequence order, delivery timeouts, fencing), and holds
and re-partitions a topic whose partition count grew (KIP-253).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import deque

import httpx

from chunkraft.client.broker_client import BrokerClientError
from chunkraft.client.partitioner import partition_for_key
from chunkraft.client.producer_batches import ProducerBatch, ProducerError, ProducerFencedError
from chunkraft.client.producer_core import FENCED, TxnState
from chunkraft.client.producer_transactions import ProducerTransactions
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProducePartitionData,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicData,
)

__all__ = ["ProducerSender"]

_LEADER_ERRORS = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE,
                            Errors.UNKNOWN_TOPIC_OR_PARTITION})
_RETRIABLE = _LEADER_ERRORS | {Errors.REQUEST_TIMED_OUT, Errors.NOT_ENOUGH_REPLICAS,
                               Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                               Errors.KAFKA_STORAGE_ERROR, Errors.NETWORK_EXCEPTION,
                               Errors.CONCURRENT_TRANSACTIONS}
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



logger = logging.getLogger(__name__)

class ProducerSender(ProducerTransactions):
    """:class:`ProducerTransactions` plus the sender's loop and what it does each round; every
    method here runs on the event loop thread only."""

    async def _sender(self) -> None:
        while True:
            timeout = self._drain()
            if self._executor_gone is not None:
                self._stop_at_interpreter_exit(self._executor_gone)
                return
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
                                     index=b.partition, records=b.encode(
                                         transactional=transactional)) for b in group))
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
        if error in FENCED:
            failure = ProducerFencedError(message or error.name, error)
            self._fatal = failure
            self._txn = TxnState.FATAL if self._txn is not TxnState.NONE else self._txn
        else:
            failure = ProducerError(message or error.name, error)
        self._txn_error = self._txn_error or failure
        batch.fail(failure)
        self._finished(len(batch))

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

    def _stop_at_interpreter_exit(self, why: RuntimeError) -> None:
        """The interpreter is exiting (no worker thread can be had): every record still queued
        fails, the producer refuses new ones, and the sender ends (once, logged once) instead
        of retrying what can no longer succeed."""
        error = ProducerError(f"the producer stopped: the Python interpreter is exiting "
                              f"({why}); close() the producer before the program ends")
        logger.warning("%s: %s", self.client_id, error)
        self._fatal = self._fatal or error
        self._stopping = True
        self._drain()  # every open batch too, as closing does
        self._fail_everything(error)

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

