"""The transaction coordinator (KIP-98) of one broker agent.

This broker coordinates the transactional ids whose ``__transaction_state`` partition it leads
(``partition_for_key(id) % partitions``). Their states (:class:`TxnMetadata`) live in that
partition's log, written through the ReplicaManager's leader path with acks=all
(:mod:`.transaction_log`), and in memory once loaded.

The state machine (Kafka's): InitProducerId gives a new producer id with epoch 0 on first use,
else the same id with the epoch + 1 (an ongoing transaction of the old epoch is aborted first,
with a bumped epoch, so the old producer is fenced everywhere its marker lands); a transaction
becomes ONGOING with its first AddPartitionsToTxn / AddOffsetsToTxn; EndTxn writes
PREPARE_COMMIT / PREPARE_ABORT, answers, and then the markers go to every partition
(:class:`~.marker_sender.MarkerSender`); once all are written, COMPLETE_COMMIT /
COMPLETE_ABORT. A transaction ONGOING for longer than its timeout is aborted the same way by a
background check (epoch bumped). Becoming leader of a state partition (noticed after each
metadata delta: the coordinator is a listener of the metadata follower, after the
ReplicaManager) loads it from the log (log start to log end: everything the new leader has
will be committed by its followers) and resumes the markers of PREPARE_* states; losing it drops
its states (the next leader takes over).

Errors as Kafka's: NOT_COORDINATOR (not the leader of the id's partition), COORDINATOR_LOAD_IN
_PROGRESS (loading), CONCURRENT_TRANSACTIONS (a state write or the markers of the previous
transaction in flight beyond a short wait), PRODUCER_FENCED (an older epoch),
INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, INVALID_TRANSACTION_TIMEOUT. Everything runs on
the broker's event loop; nothing here locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from chunkraft.broker_agent.config import BrokerConfig
from chunkraft.broker_agent.coordinator.internal_topics import (
    CONSUMER_OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    InternalTopics,
    partition_for_key,
)
from chunkraft.broker_agent.coordinator.marker_sender import MarkerSender
from chunkraft.broker_agent.coordinator.transaction_log import (
    TopicPartition,
    TxnMetadata,
    TxnState,
    encode_record,
    read_states,
)
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.data_plane import ProducePartitionData, ProduceRequest, ProduceTopicData

__all__ = [
    "MAX_PRODUCER_EPOCH",
    "TransactionCoordinator",
    "internal_topics_of",
    "transaction_coordinator_of",
]

log = logging.getLogger(__name__)

MAX_PRODUCER_EPOCH = 32_767
MAX_TIMEOUT_MS = 900_000
"""Kafka's ``transaction.max.timeout.ms`` default (15 minutes)."""
WRITE_TIMEOUT_MS = 10_000
COMPLETION_WAIT_S = 5.0
"""How long a request waits for the previous transaction's markers before answering
CONCURRENT_TRANSACTIONS (the client retries): most finish well within it."""
LOAD_WAIT_S = 30.0

_coordinators: weakref.WeakKeyDictionary[Any, TransactionCoordinator] = (
    weakref.WeakKeyDictionary())


def transaction_coordinator_of(replica_manager: Any) -> TransactionCoordinator | None:
    """The coordinator attached to a broker's ReplicaManager (None: none attached)."""
    try:
        return _coordinators.get(replica_manager)
    except TypeError:
        return None


def internal_topics_of(replica_manager: Any) -> InternalTopics | None:
    """The broker's :class:`InternalTopics` (the group coordinator may share it)."""
    coordinator = transaction_coordinator_of(replica_manager)
    return coordinator.topics if coordinator is not None else None


def _now_ms() -> int:
    return int(time.time() * 1000)


class TransactionCoordinator:
    """The KIP-98 coordinator; see the module docstring for the contract.

    ``replica_manager`` is the broker's ReplicaManager (``partitions``, ``produce``,
    ``write_txn_markers``), ``producer_ids`` its ProducerIdManager (``await next_id()``),
    ``topics`` the internal topics, ``markers`` the marker sender. Register it as a metadata
    listener (``follower.add_listener``) after the ReplicaManager; :meth:`for_broker` does the
    wiring of a broker process.
    """

    def __init__(self, node_id: int, replica_manager: Any, producer_ids: Any,
                 topics: InternalTopics, markers: MarkerSender, *,
                 time_ms: Callable[[], int] = _now_ms, abort_check_interval_s: float = 1.0,
                 max_timeout_ms: int = MAX_TIMEOUT_MS) -> None:
        self.node_id = node_id
        self.replica_manager = replica_manager
        self.producer_ids = producer_ids
        self.topics = topics
        self.markers = markers
        self.time_ms = time_ms
        self.abort_check_interval_s = abort_check_interval_s
        self.max_timeout_ms = max_timeout_ms
        self._states: dict[int, dict[str, TxnMetadata]] = {}  # by loaded partition
        self._loaded_epoch: dict[int, int] = {}  # partition -> leader epoch it was loaded at
        self._loading: dict[int, tuple[int, asyncio.Task[None]]] = {}
        self._pending: set[str] = set()  # ids with a state write in flight
        self._completions: dict[str, asyncio.Task[None]] = {}
        self._checker: asyncio.Task[None] | None = None
        self._closed = False
        with contextlib.suppress(TypeError):
            _coordinators[replica_manager] = self

    @classmethod
    def for_broker(cls, follower: Any, replica_manager: Any, producer_ids: Any,
                   controller: Any, config: BrokerConfig, *, token: str | None = None,
                   verify: ssl.SSLContext | bool = True) -> TransactionCoordinator:
        """Builds the coordinator of a broker process (``transaction.state.log.num
        .partitions``, ``offsets.topic.num.partitions``, ``transaction.max.timeout.ms`` from
        ``config``) and makes it a listener of ``follower`` (the metadata follower)."""

        def image() -> MetadataImage:
            current: MetadataImage = follower.image
            return current

        node_id = config.node_id
        topics = InternalTopics(controller, image, {
            TRANSACTION_STATE_TOPIC: config.transaction_state_log_num_partitions,
            CONSUMER_OFFSETS_TOPIC: config.offsets_topic_num_partitions})
        coordinator = cls(node_id, replica_manager, producer_ids, topics,
                          MarkerSender(node_id, image, replica_manager, token=token,
                                       verify=verify),
                          max_timeout_ms=config.transaction_max_timeout_ms)
        follower.add_listener(coordinator)
        return coordinator

    # ------------------------------------------------------------------ leadership

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Metadata listener: loads newly led state partitions, drops lost ones."""
        if self._closed:
            return
        if self._checker is None or self._checker.done():
            self._checker = asyncio.get_running_loop().create_task(self._check_timeouts())
        try:
            self.check_leadership()
        except Exception:
            # Never raise to the follower: a failing listener makes the broker ask to be fenced.
            log.exception("transaction coordinator %d: leadership check failed", self.node_id)

    def _state_partition(self, index: int) -> Any:
        return self.replica_manager.partitions.get((TRANSACTION_STATE_TOPIC, index))

    def _leader_epoch(self, index: int) -> int | None:
        """This broker's leader epoch of state partition ``index``, None if not its leader."""
        partition = self._state_partition(index)
        if partition is None or partition.closed or not partition.is_leader:
            return None
        epoch: int = partition.leader_epoch
        return epoch

    def check_leadership(self) -> None:
        """Starts loading each state partition this broker now leads at a new epoch; forgets
        the ones it does not lead any more."""
        led: set[int] = set()
        for topic, index in list(getattr(self.replica_manager, "partitions", {})):
            if topic != TRANSACTION_STATE_TOPIC:
                continue
            epoch = self._leader_epoch(index)
            if epoch is None:
                continue
            led.add(index)
            if self._loaded_epoch.get(index) == epoch:
                continue
            loading = self._loading.get(index)
            if loading is not None and loading[0] == epoch and not loading[1].done():
                continue
            self._unload(index)
            task = asyncio.get_running_loop().create_task(self._load(index, epoch))
            self._loading[index] = (epoch, task)
        for index in set(self._loaded_epoch) | set(self._loading):
            if index not in led:
                self._unload(index)

    def _unload(self, index: int) -> None:
        states = self._states.pop(index, {})
        self._loaded_epoch.pop(index, None)
        loading = self._loading.pop(index, None)
        if loading is not None and not loading[1].done():
            loading[1].cancel()
        if states:
            log.info("transaction coordinator %d: resigned partition %d (%d ids)",
                     self.node_id, index, len(states))

    async def _load(self, index: int, epoch: int) -> None:
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + LOAD_WAIT_S
            while True:  # a new active chunk may first copy its overlap
                partition = self._state_partition(index)
                if self._leader_epoch(index) != epoch:
                    return
                if partition.accepts_appends() or loop.time() > deadline:
                    break
                await partition.signal.wait(0.2)
            log_ = partition.log
            states: dict[str, TxnMetadata] = {}
            for metadata in read_states(log_, log_.log_end_offset):
                states[metadata.transactional_id] = metadata
            if self._leader_epoch(index) != epoch:
                return
            self._states[index] = states
            self._loaded_epoch[index] = epoch
            log.info("transaction coordinator %d: loaded partition %d at epoch %d (%d ids)",
                     self.node_id, index, epoch, len(states))
            for metadata in states.values():
                if metadata.state.is_prepare:
                    self._start_completion(index, epoch, metadata)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading transaction state partition %d failed", index)
        finally:
            loading = self._loading.get(index)
            if loading is not None and loading[0] == epoch:
                self._loading.pop(index, None)

    # ------------------------------------------------------------------ lookups

    def _owned(self, transactional_id: str) -> tuple[int, int, dict[str, TxnMetadata]]:
        """(partition, coordinator epoch, states) of the id's partition; raises NOT_COORDINATOR
        or COORDINATOR_LOAD_IN_PROGRESS."""
        count = self.topics.partition_count(TRANSACTION_STATE_TOPIC)
        if not count:
            raise ApiException(Errors.NOT_COORDINATOR,
                               f"{TRANSACTION_STATE_TOPIC} does not exist yet")
        index = partition_for_key(transactional_id, count)
        epoch = self._leader_epoch(index)
        if epoch is None:
            raise ApiException(Errors.NOT_COORDINATOR,
                               f"broker {self.node_id} does not lead "
                               f"{TRANSACTION_STATE_TOPIC}-{index}")
        if self._loaded_epoch.get(index) != epoch:
            self.check_leadership()
            raise ApiException(Errors.COORDINATOR_LOAD_IN_PROGRESS,
                               f"{TRANSACTION_STATE_TOPIC}-{index} is loading")
        return index, epoch, self._states[index]

    def state_of(self, transactional_id: str) -> TxnMetadata | None:
        """The id's current state if this broker coordinates it and has loaded it."""
        try:
            _, _, states = self._owned(transactional_id)
        except ApiException:
            return None
        return states.get(transactional_id)

    # ------------------------------------------------------------------ writes

    async def _write(self, index: int, epoch: int, metadata: TxnMetadata) -> None:
        """Appends ``metadata`` to the state partition with acks=all, then makes it the
        current state. Raises ApiException (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE)."""
        tid = metadata.transactional_id
        self._pending.add(tid)
        try:
            count = self.topics.partition_count(TRANSACTION_STATE_TOPIC) or 0
            records = encode_record(metadata, self.time_ms())
            request = ProduceRequest(acks=-1, timeout_ms=WRITE_TIMEOUT_MS, topics=(
                ProduceTopicData(name=TRANSACTION_STATE_TOPIC, partition_count=max(1, count),
                                 partitions=(ProducePartitionData(index=index,
                                                                  records=records),)),))
            response = await self.replica_manager.produce(request)
            code = response.topics[0].partitions[0].error_code
        finally:
            self._pending.discard(tid)
        if code != 0:
            error = Errors.for_code(code)
            log.info("writing the state of %r failed: %s", tid, error.name)
            if error in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.INVALID_PARTITION_COUNT):
                raise ApiException(Errors.NOT_COORDINATOR, "the coordinator moved")
            raise ApiException(Errors.COORDINATOR_NOT_AVAILABLE,
                               f"the transaction log write failed: {error.name}")
        if self._loaded_epoch.get(index) != epoch:
            raise ApiException(Errors.NOT_COORDINATOR, "the coordinator moved")
        self._states[index][tid] = metadata

    def _check_free(self, transactional_id: str) -> None:
        if transactional_id in self._pending:
            raise ApiException(Errors.CONCURRENT_TRANSACTIONS,
                               f"a state change of {transactional_id!r} is in flight")

    async def _await_completion(self, transactional_id: str) -> None:
        """Waits (bounded) for the markers of the id's previous transaction."""
        task = self._completions.get(transactional_id)
        if task is not None and not task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(task), COMPLETION_WAIT_S)

    # ------------------------------------------------------------------ InitProducerId

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               producer_id: int = -1, producer_epoch: int = -1
                               ) -> tuple[int, int]:
        """(producer id, epoch) for the transactional id; raises ApiException."""
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            raise ApiException(Errors.INVALID_TRANSACTION_TIMEOUT,
                               f"transaction.timeout.ms must be in 1..{self.max_timeout_ms}")
        index, epoch, states = self._owned(transactional_id)
        self._check_free(transactional_id)
        current = states.get(transactional_id)
        if current is None:
            new_id = await self.producer_ids.next_id()
            metadata = TxnMetadata(transactional_id, new_id, 0, timeout_ms,
                                   update_ms=self.time_ms())
            await self._write(index, epoch, metadata)
            return new_id, 0
        if producer_id >= 0 and (producer_id, producer_epoch) != (
                current.producer_id, current.producer_epoch):
            raise ApiException(Errors.PRODUCER_FENCED,
                               f"producer {producer_id} epoch {producer_epoch} is not the "
                               f"current producer of {transactional_id!r}")
        if current.state is TxnState.ONGOING:
            # Fence the previous producer: abort its transaction with a bumped epoch.
            await self._abort(index, epoch, current)
        await self._await_completion(transactional_id)
        index, epoch, states = self._owned(transactional_id)
        self._check_free(transactional_id)
        current = states[transactional_id]
        if not current.state.is_complete:
            raise ApiException(Errors.CONCURRENT_TRANSACTIONS,
                               f"the transaction of {transactional_id!r} is still completing")
        if current.producer_epoch + 1 >= MAX_PRODUCER_EPOCH:
            new_id, new_epoch = await self.producer_ids.next_id(), 0
        else:
            new_id, new_epoch = current.producer_id, current.producer_epoch + 1
        await self._write(index, epoch, current.but(
            producer_id=new_id, producer_epoch=new_epoch, timeout_ms=timeout_ms,
            state=TxnState.EMPTY, partitions=frozenset(), txn_start_ms=-1,
            update_ms=self.time_ms()))
        return new_id, new_epoch

    # ------------------------------------------------------------------ AddPartitions / End

    def _checked(self, transactional_id: str, producer_id: int, producer_epoch: int
                 ) -> tuple[int, int, TxnMetadata]:
        index, epoch, states = self._owned(transactional_id)
        current = states.get(transactional_id)
        if current is None or current.producer_id != producer_id:
            raise ApiException(Errors.INVALID_PRODUCER_ID_MAPPING,
                               f"producer {producer_id} is not the producer of "
                               f"{transactional_id!r}")
        if producer_epoch != current.producer_epoch:
            raise ApiException(Errors.PRODUCER_FENCED,
                               f"epoch {producer_epoch} of producer {producer_id} is not the "
                               f"current epoch {current.producer_epoch}")
        return index, epoch, current

    async def add_partitions(self, transactional_id: str, producer_id: int,
                             producer_epoch: int, partitions: Iterable[TopicPartition]) -> None:
        """Adds ``partitions`` to the id's transaction (ONGOING from now); raises
        ApiException."""
        wanted = frozenset(partitions)
        index, epoch, current = self._checked(transactional_id, producer_id, producer_epoch)
        if current.state.is_prepare:
            await self._await_completion(transactional_id)
            index, epoch, current = self._checked(transactional_id, producer_id,
                                                  producer_epoch)
        self._check_free(transactional_id)
        if current.state.is_prepare:
            raise ApiException(Errors.CONCURRENT_TRANSACTIONS,
                               f"the previous transaction of {transactional_id!r} is still "
                               "completing")
        if current.state is TxnState.ONGOING and wanted <= current.partitions:
            return
        now = self.time_ms()
        start = current.txn_start_ms if current.state is TxnState.ONGOING else now
        base = current.partitions if current.state is TxnState.ONGOING else frozenset()
        await self._write(index, epoch, current.but(
            state=TxnState.ONGOING, partitions=base | wanted, txn_start_ms=start,
            update_ms=now))

    async def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          group_id: str) -> None:
        """Adds the group's ``__consumer_offsets`` partition (created if need be)."""
        location = await self.topics.find(CONSUMER_OFFSETS_TOPIC, group_id)
        if not location.found:
            raise ApiException(Errors.COORDINATOR_NOT_AVAILABLE,
                               f"{CONSUMER_OFFSETS_TOPIC} is not available yet")
        await self.add_partitions(transactional_id, producer_id, producer_epoch,
                                  [(CONSUMER_OFFSETS_TOPIC, location.partition)])

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      committed: bool) -> None:
        """Commits or aborts: PREPARE_* written, markers started; raises ApiException."""
        index, epoch, current = self._checked(transactional_id, producer_id, producer_epoch)
        self._check_free(transactional_id)
        state = current.state
        if state is TxnState.ONGOING:
            prepare = current.but(
                state=TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT,
                update_ms=self.time_ms())
            await self._write(index, epoch, prepare)
            self._start_completion(index, epoch, prepare)
            return
        if state is TxnState.EMPTY:
            return  # nothing was added: nothing to commit or abort
        same = (state in (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT)) == committed
        if not same:
            raise ApiException(Errors.INVALID_TXN_STATE,
                               f"the transaction of {transactional_id!r} is {state.value}")
        if state.is_prepare:
            raise ApiException(Errors.CONCURRENT_TRANSACTIONS,
                               f"the transaction of {transactional_id!r} is completing")
        # A retried EndTxn of a completed transaction: the same answer again.

    async def _abort(self, index: int, epoch: int, current: TxnMetadata) -> None:
        """Aborts an ONGOING transaction with a bumped epoch (fences its producer)."""
        bumped = min(current.producer_epoch + 1, MAX_PRODUCER_EPOCH)
        prepare = current.but(producer_epoch=bumped, state=TxnState.PREPARE_ABORT,
                              update_ms=self.time_ms())
        await self._write(index, epoch, prepare)
        self._start_completion(index, epoch, prepare)

    # ------------------------------------------------------------------ markers

    def _start_completion(self, index: int, epoch: int, prepare: TxnMetadata) -> None:
        tid = prepare.transactional_id
        task = asyncio.get_running_loop().create_task(self._complete(index, epoch, prepare))
        self._completions[tid] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._completions.get(tid) is done:
                del self._completions[tid]

        task.add_done_callback(forget)

    async def _complete(self, index: int, epoch: int, prepare: TxnMetadata) -> None:
        committed = prepare.state is TxnState.PREPARE_COMMIT

        def still_valid() -> bool:
            return not self._closed and self._loaded_epoch.get(index) == epoch

        try:
            delivered = await self.markers.deliver(
                prepare.partitions, prepare.producer_id, prepare.producer_epoch, committed,
                epoch, still_valid)
            if not delivered:
                return
            final = prepare.but(
                state=TxnState.COMPLETE_COMMIT if committed else TxnState.COMPLETE_ABORT,
                partitions=frozenset(), txn_start_ms=-1, update_ms=self.time_ms())
            backoff = 0.1
            while still_valid():
                try:
                    await self._write(index, epoch, final)
                    return
                except ApiException as error:
                    log.info("completing %r: %s", prepare.transactional_id, error)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 1.0)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("completing the transaction of %r failed", prepare.transactional_id)

    # ------------------------------------------------------------------ timeouts

    async def _check_timeouts(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.abort_check_interval_s)
            try:
                await self.abort_timed_out()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the transaction timeout check failed")

    async def abort_timed_out(self) -> int:
        """Aborts (epoch bumped) every ONGOING transaction past its timeout; how many."""
        now = self.time_ms()
        aborted = 0
        for index, states in list(self._states.items()):
            epoch = self._loaded_epoch.get(index)
            if epoch is None:
                continue
            for tid, metadata in list(states.items()):
                if metadata.state is not TxnState.ONGOING or tid in self._pending or \
                        metadata.txn_start_ms + metadata.timeout_ms > now:
                    continue
                log.info("transaction of %r timed out after %d ms: aborting", tid,
                         metadata.timeout_ms)
                try:
                    await self._abort(index, epoch, metadata)
                    aborted += 1
                except ApiException as error:
                    log.info("aborting %r failed: %s", tid, error)
        return aborted

    async def close(self) -> None:
        """Stops the background work (tests; a broker process just exits)."""
        self._closed = True
        tasks = [t for t in (self._checker, *self._completions.values(),
                             *(task for _, task in self._loading.values())) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.markers.close()
