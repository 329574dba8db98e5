"""The transaction coordinator on an in-process broker (real logs, real ReplicaManager)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from chunkraft.broker_agent.coordinator.internal_topics import (
    TRANSACTION_STATE_TOPIC,
    InternalTopics,
)
from chunkraft.broker_agent.coordinator.marker_sender import MarkerSender
from chunkraft.broker_agent.coordinator.transaction_log import TxnState, read_states
from chunkraft.broker_agent.coordinator.transactions import (
    TransactionCoordinator,
    transaction_coordinator_of,
)
from chunkraft.broker_agent.replica_manager import ReplicaManager
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.data_plane import ProducePartitionData, ProduceRequest, ProduceTopicData
from chunkraft.records import PartitionRecord, TopicRecord
from tests.unit.broker_agent.replica_harness import TOPIC, Cluster, consume, eventually, values_of

STATE_ID = uuid.UUID(int=0x7A5)


class FakeProducerIds:
    def __init__(self) -> None:
        self.next = 5000

    async def next_id(self) -> int:
        self.next += 1
        return self.next


def run(scenario: Callable[[Cluster, ReplicaManager], Awaitable[None]], root: Path) -> None:
    async def main() -> None:
        cluster = Cluster(root, count=1)
        try:
            await cluster.start()
            await cluster.controller.commit([
                TopicRecord(name=TRANSACTION_STATE_TOPIC, topic_id=STATE_ID),
                PartitionRecord(partition_id=0, topic_id=STATE_ID, replicas=(0,), isr=(0,),
                                leader=0, leader_epoch=0, partition_epoch=0)])
            await scenario(cluster, cluster.managers[0])
        finally:
            await cluster.close()

    asyncio.run(asyncio.wait_for(main(), timeout=30))


def coordinator_for(cluster: Cluster, manager: ReplicaManager, **kwargs: float
                    ) -> TransactionCoordinator:
    def image():  # type: ignore[no-untyped-def]
        return cluster.controller.image

    return TransactionCoordinator(0, manager, FakeProducerIds(),
                                  InternalTopics(cluster.controller, image),
                                  MarkerSender(0, image, manager), **kwargs)  # type: ignore[arg-type]


async def loaded(coordinator: TransactionCoordinator) -> None:
    coordinator.check_leadership()
    await eventually(lambda: coordinator._loaded_epoch.get(0) == 0, "loaded")


async def produce_txn(manager: ReplicaManager, pid: int, epoch: int, sequence: int,
                      values: list[bytes]) -> int:
    records = [(b"k", v, 1000) for v in values]
    data = build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                       transactional=True)
    response = await manager.produce(ProduceRequest(acks=-1, topics=(ProduceTopicData(
        name=TOPIC, partition_count=1, partitions=(ProducePartitionData(
            index=0, records=data),)),)))
    return response.topics[0].partitions[0].error_code


async def state(coordinator: TransactionCoordinator, tid: str, wanted: TxnState) -> None:
    def check() -> bool:
        current = coordinator.state_of(tid)
        return current is not None and current.state is wanted
    await eventually(check, f"{tid} {wanted}")


def test_commit_and_abort_reach_read_committed(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, manager: ReplicaManager) -> None:
        coordinator = coordinator_for(cluster, manager)
        assert transaction_coordinator_of(manager) is coordinator
        await loaded(coordinator)
        pid, epoch = await coordinator.init_producer_id("t1", 60_000)
        assert epoch == 0
        await coordinator.add_partitions("t1", pid, epoch, [(TOPIC, 0)])
        assert await produce_txn(manager, pid, epoch, 0, [b"a1", b"a2"]) == 0
        await coordinator.end_txn("t1", pid, epoch, False)
        await state(coordinator, "t1", TxnState.COMPLETE_ABORT)
        await coordinator.add_partitions("t1", pid, epoch, [(TOPIC, 0)])
        assert await produce_txn(manager, pid, epoch, 2, [b"c1"]) == 0
        await coordinator.end_txn("t1", pid, epoch, True)
        await state(coordinator, "t1", TxnState.COMPLETE_COMMIT)
        await coordinator.end_txn("t1", pid, epoch, True)  # a retry: same answer
        with pytest.raises(ApiException) as refused:
            await coordinator.end_txn("t1", pid, epoch, False)
        assert refused.value.error is Errors.INVALID_TXN_STATE
        answer = await consume(manager, 0, isolation_level=1)
        kept = values_of(answer)
        aborted = {a.producer_id for a in answer.aborted_transactions or ()}
        assert b"c1" in kept and pid in aborted  # the consumer drops a1, a2 by the index
        await coordinator.close()

    run(scenario, tmp_path)


def test_a_new_producer_fences_the_old_one(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, manager: ReplicaManager) -> None:
        coordinator = coordinator_for(cluster, manager)
        await loaded(coordinator)
        pid, epoch = await coordinator.init_producer_id("t2", 60_000)
        await coordinator.add_partitions("t2", pid, epoch, [(TOPIC, 0)])
        assert await produce_txn(manager, pid, epoch, 0, [b"zombie"]) == 0
        pid2, epoch2 = await coordinator.init_producer_id("t2", 60_000)
        assert (pid2, epoch2) == (pid, epoch + 2)  # +1 for the abort, +1 for the new producer
        for call in (coordinator.end_txn("t2", pid, epoch, True),
                     coordinator.add_partitions("t2", pid, epoch, [(TOPIC, 0)])):
            with pytest.raises(ApiException) as refused:
                await call
            assert refused.value.error is Errors.PRODUCER_FENCED
        assert await produce_txn(manager, pid, epoch, 1, [b"late"]) == \
            Errors.INVALID_PRODUCER_EPOCH.code
        with pytest.raises(ApiException) as refused:
            await coordinator.add_partitions("t2", pid + 1, epoch2, [(TOPIC, 0)])
        assert refused.value.error is Errors.INVALID_PRODUCER_ID_MAPPING
        await coordinator.close()

    run(scenario, tmp_path)


def test_a_restarted_coordinator_finishes_a_prepared_commit(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, manager: ReplicaManager) -> None:
        first = coordinator_for(cluster, manager)
        await loaded(first)
        pid, epoch = await first.init_producer_id("t3", 60_000)
        await first.add_partitions("t3", pid, epoch, [(TOPIC, 0)])
        assert await produce_txn(manager, pid, epoch, 0, [b"x"]) == 0
        # PREPARE_COMMIT durable, then the coordinator dies before any marker.
        prepare = first.state_of("t3").but(state=TxnState.PREPARE_COMMIT)  # type: ignore[union-attr]
        await first._write(0, 0, prepare)
        await first.close()
        assert (await consume(manager, 0, isolation_level=1)).records == b""
        second = coordinator_for(cluster, manager)
        await loaded(second)
        await state(second, "t3", TxnState.COMPLETE_COMMIT)
        assert values_of(await consume(manager, 0, isolation_level=1)) == [b"x"]
        partition = manager.partitions[(TRANSACTION_STATE_TOPIC, 0)]
        states = [m.state for m in read_states(partition.log, partition.log.log_end_offset)]
        assert states[-2:] == [TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT]
        await second.close()

    run(scenario, tmp_path)


def test_a_timed_out_transaction_is_aborted_with_a_bumped_epoch(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, manager: ReplicaManager) -> None:
        coordinator = coordinator_for(cluster, manager, abort_check_interval_s=0.05)
        await coordinator.on_metadata(cluster.controller.deltas[-1], cluster.controller.image)
        await eventually(lambda: coordinator._loaded_epoch.get(0) == 0, "loaded")
        pid, epoch = await coordinator.init_producer_id("t4", 100)
        await coordinator.add_partitions("t4", pid, epoch, [(TOPIC, 0)])
        await state(coordinator, "t4", TxnState.COMPLETE_ABORT)
        current = coordinator.state_of("t4")
        assert current is not None and current.producer_epoch == epoch + 1
        with pytest.raises(ApiException) as refused:
            await coordinator.end_txn("t4", pid, epoch, True)
        assert refused.value.error is Errors.PRODUCER_FENCED
        with pytest.raises(ApiException) as refused:
            await coordinator.init_producer_id("t4", 0)
        assert refused.value.error is Errors.INVALID_TRANSACTION_TIMEOUT
        await coordinator.close()

    run(scenario, tmp_path)


def test_not_the_leader_is_not_coordinator(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster, manager: ReplicaManager) -> None:
        coordinator = coordinator_for(cluster, manager)
        with pytest.raises(ApiException) as refused:
            await coordinator.init_producer_id("t5", 1000)
        assert refused.value.error is Errors.COORDINATOR_LOAD_IN_PROGRESS
        await loaded(coordinator)
        await cluster.controller.commit([PartitionRecord(
            partition_id=0, topic_id=STATE_ID, replicas=(0,), isr=(0,), leader=-1,
            leader_epoch=1, partition_epoch=1)])
        coordinator.check_leadership()
        with pytest.raises(ApiException) as refused:
            await coordinator.init_producer_id("t5", 1000)
        assert refused.value.error is Errors.NOT_COORDINATOR
        await coordinator.close()

    run(scenario, tmp_path)
