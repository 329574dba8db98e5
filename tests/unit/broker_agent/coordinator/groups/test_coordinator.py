"""GroupCoordinator on real ReplicaManagers (in-process brokers with real logs): commits are
replicated records of ``__consumer_offsets``, a new leader loads them, transactions settle
them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from chunkraft.broker_agent.coordinator.groups.coordinator import (
    OFFSETS_TOPIC,
    GroupCoordinator,
)
from chunkraft.broker_agent.coordinator.groups.loaded import Loaded
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    JoinGroupRequest,
    OffsetCommitPartition,
    OffsetCommitTopic,
    OffsetFetchTopicRequest,
    RangeOffset,
    SyncGroupAssignment,
    SyncGroupRequest,
    TopicPartitions,
)
from chunkraft.protocol.data_plane import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from chunkraft.records import PartitionRecord, TopicRecord
from tests.unit.broker_agent.replica_harness import TOPIC, Cluster, eventually

OFFSETS_ID = uuid.UUID(int=0x0FF5E75)


def _coordinator(cluster: Cluster, broker_id: int) -> GroupCoordinator:
    # The image as the broker sees it now (the fake controller replaces it on each commit).
    return GroupCoordinator(cluster.managers[broker_id], lambda: cluster.controller.image)


async def _offsets_topic(cluster: Cluster, leader: int, epoch: int) -> None:
    records: list[Any] = [] if epoch else [TopicRecord(name=OFFSETS_TOPIC, topic_id=OFFSETS_ID)]
    records.append(PartitionRecord(partition_id=0, topic_id=OFFSETS_ID, replicas=(0, 1),
                                   isr=(0, 1), leader=leader, leader_epoch=epoch,
                                   partition_epoch=epoch))
    await cluster.controller.commit(records)


def _commit(partition: int, offset: int, *ranges: tuple[int, int, int]) -> OffsetCommitTopic:
    return OffsetCommitTopic(name=TOPIC, partitions=(OffsetCommitPartition(
        partition_index=partition, committed_offset=offset,
        range_offsets=tuple(RangeOffset(lo=lo, hi=hi, offset=o) for lo, hi, o in ranges)),))


async def _fetched(coordinator: GroupCoordinator, group: str) -> dict[int, tuple[int, Any]]:
    error, topics = await coordinator.fetch_offsets(
        group, (OffsetFetchTopicRequest(name=TOPIC, partition_indexes=(0,)),))
    assert error is Errors.NONE
    return {p.partition_index: (p.committed_offset,
                                tuple((r.lo, r.hi, r.offset) for r in p.range_offsets))
            for p in topics[0].partitions}


def test_commits_survive_a_leader_change(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0, 1))
        try:
            await _offsets_topic(cluster, leader=0, epoch=0)
            first = _coordinator(cluster, 0)
            second = _coordinator(cluster, 1)
            error, results = await second.commit_offsets("g", -1, "", [_commit(0, 5)])
            assert error is Errors.NOT_COORDINATOR
            error, results = await first.commit_offsets("g", -1, "", [_commit(0, 5)])
            assert error is Errors.NONE and results == {(TOPIC, 0): Errors.NONE}
            await first.commit_offsets("g", -1, "", [_commit(0, 7, (0, 99, 7))])
            await first.commit_offsets("g", -1, "", [_commit(0, 9, (100, 199, 9))])
            assert await _fetched(first, "g") == {0: (7, ((0, 99, 7), (100, 199, 9)))}
            assert await _fetched(first, "other") == {0: (-1, ())}

            # Broker 1 follows; then it leads, loads the log and answers the same.
            follower = cluster.managers[1].partitions[(OFFSETS_TOPIC, 0)]
            await eventually(lambda: follower.log.log_end_offset == 3, "replication")
            await _offsets_topic(cluster, leader=1, epoch=1)
            # As metadata listeners: the new leader loads at once, the old one forgets.
            await first.on_metadata(None, cluster.controller.image)
            await second.on_metadata(None, cluster.controller.image)
            assert first.loaded == {}
            await eventually(lambda: 0 in second.loaded, "the new leader's load")
            error, _ = await first.fetch_offsets("g", None)
            assert error is Errors.NOT_COORDINATOR
            assert await _fetched(second, "g") == {0: (7, ((0, 99, 7), (100, 199, 9)))}
            error, everything = await second.fetch_offsets("g", None)
            assert [(t.name, [p.partition_index for p in t.partitions]) for t in everything] \
                == [(TOPIC, [0])]
            await first.stop()
            await second.stop()
        finally:
            await cluster.close()
    asyncio.run(scenario())


def test_transactional_commits_wait_for_their_marker(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0, 1))
        try:
            await _offsets_topic(cluster, leader=0, epoch=0)
            coordinator = _coordinator(cluster, 0)
            coordinator.start()
            await coordinator.commit_offsets("g", -1, "", [_commit(0, 3)])
            error, results = await coordinator.commit_offsets(
                "g", -1, "", [_commit(0, 10)], producer_id=500, producer_epoch=0,
                transactional_id="t")
            assert error is Errors.NONE and results == {(TOPIC, 0): Errors.NONE}
            assert await _fetched(coordinator, "g") == {0: (3, ())}
            error, topics = await coordinator.fetch_offsets(
                "g", (OffsetFetchTopicRequest(name=TOPIC, partition_indexes=(0,)),),
                require_stable=True)
            assert topics[0].partitions[0].error_code == Errors.UNSTABLE_OFFSET_COMMIT.code
            manager = cluster.managers[0]
            await manager.write_txn_markers(WriteTxnMarkersRequest(markers=(WritableTxnMarker(
                producer_id=500, producer_epoch=0, transaction_result=True,
                topics=(WritableTxnMarkerTopic(name=OFFSETS_TOPIC,
                                               partition_indexes=(0,)),)),)))
            assert await _fetched(coordinator, "g") == {0: (10, ())}
            # An aborted transaction's offsets never show.
            await coordinator.commit_offsets("g", -1, "", [_commit(0, 20)], producer_id=500,
                                             producer_epoch=0, transactional_id="t")
            await manager.write_txn_markers(WriteTxnMarkersRequest(markers=(WritableTxnMarker(
                producer_id=500, producer_epoch=0, transaction_result=False,
                topics=(WritableTxnMarkerTopic(name=OFFSETS_TOPIC,
                                               partition_indexes=(0,)),)),)))
            assert await _fetched(coordinator, "g") == {0: (10, ())}
            await coordinator.stop()
        finally:
            await cluster.close()
    asyncio.run(scenario())


def test_members_commit_with_their_generation(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start(replicas=(0,))
        try:
            await cluster.controller.commit([
                TopicRecord(name=OFFSETS_TOPIC, topic_id=OFFSETS_ID),
                PartitionRecord(partition_id=0, topic_id=OFFSETS_ID, replicas=(0,), isr=(0,),
                                leader=0, leader_epoch=0, partition_epoch=0)])
            coordinator = _coordinator(cluster, 0)
            joined = await coordinator.join_group(JoinGroupRequest(group_id="g",
                                                                   topics=(TOPIC,)))
            assert joined.error_code == 0 and joined.generation_id == 1
            error, _ = await coordinator.commit_offsets("g", 0, joined.member_id,
                                                        [_commit(0, 1)])
            assert error is Errors.ILLEGAL_GENERATION
            error, _ = await coordinator.commit_offsets("g", -1, "", [_commit(0, 1)])
            assert error is Errors.UNKNOWN_MEMBER_ID
            error, _ = await coordinator.commit_offsets("g", 1, joined.member_id,
                                                        [_commit(0, 4)])
            assert error is Errors.REBALANCE_IN_PROGRESS  # no assignment yet
            synced = await coordinator.sync_group(SyncGroupRequest(
                group_id="g", generation_id=1, member_id=joined.member_id))
            assert synced.error_code == 0
            error, _ = await coordinator.commit_offsets("g", 1, joined.member_id,
                                                        [_commit(0, 4)])
            assert error is Errors.NONE
            # A transactional commit naming a generation is checked as a member's (KIP-447).
            error, _ = await coordinator.commit_offsets(
                "g", 2, joined.member_id, [_commit(0, 5)], producer_id=9, producer_epoch=0,
                transactional_id="t")
            assert error is Errors.ILLEGAL_GENERATION
            assert await _fetched(coordinator, "g") == {0: (4, ())}
            left = await coordinator.leave_group("g", joined.member_id)
            assert left.error_code == 0
            beat = await coordinator.heartbeat("g", 1, joined.member_id)
            assert beat.error_code == Errors.UNKNOWN_MEMBER_ID.code
        finally:
            await cluster.close()
    asyncio.run(scenario())


def test_a_stable_generation_survives_a_leader_change(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0, 1))
        try:
            await _offsets_topic(cluster, leader=0, epoch=0)
            first = _coordinator(cluster, 0)
            joined = await first.join_group(JoinGroupRequest(group_id="g", topics=(TOPIC,)))
            assignment = SyncGroupAssignment(member_id=joined.member_id, partitions=(
                TopicPartitions(name=TOPIC, partitions=(0,)),))
            synced = await first.sync_group(SyncGroupRequest(
                group_id="g", generation_id=1, member_id=joined.member_id,
                assignments=(assignment,)))
            assert synced.error_code == 0
            follower = cluster.managers[1].partitions[(OFFSETS_TOPIC, 0)]
            await eventually(lambda: follower.log.log_end_offset == 1, "replication")
            await _offsets_topic(cluster, leader=1, epoch=1)
            second = _coordinator(cluster, 1)
            beat = await second.heartbeat("g", 1, joined.member_id)
            assert beat.error_code == 0
            again = await second.sync_group(SyncGroupRequest(
                group_id="g", generation_id=1, member_id=joined.member_id))
            assert again.partitions == assignment.partitions
            error, _ = await second.commit_offsets("g", 1, joined.member_id, [_commit(0, 6)])
            assert error is Errors.NONE
            # The last member leaves: the group is empty for the next coordinator too.
            assert (await second.leave_group("g", joined.member_id)).error_code == 0
            assert second.groups["g"].members == {}
            third = _coordinator(cluster, 1)
            assert (await third.heartbeat("g", 1, joined.member_id)).error_code == \
                Errors.UNKNOWN_MEMBER_ID.code
            error, _ = await third.commit_offsets("g", -1, "", [_commit(0, 7)])
            assert error is Errors.NONE
        finally:
            await cluster.close()
    asyncio.run(scenario())


def test_a_read_refused_not_leader_unloads_the_partition_quietly_and_answers_not_coordinator(
        tmp_path: Path, monkeypatch: Any, caplog: Any) -> None:
    # A controlled shutdown moves the offsets partition's leadership away: the log refuses the
    # coordinator's read NOT_LEADER_OR_FOLLOWER before the broker's replica state says it no
    # longer leads. The group is answered NOT_COORDINATOR (its client finds the new
    # coordinator), the partition is unloaded, and nothing is logged as an error.
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0, 1))
        try:
            await _offsets_topic(cluster, leader=0, epoch=0)
            coordinator = _coordinator(cluster, 0)
            error, _ = await coordinator.commit_offsets("g", -1, "", [_commit(0, 5)])
            assert error is Errors.NONE and 0 in coordinator.loaded
            manager = cluster.managers[0]
            real_fetch = manager.fetch

            async def refused(request: Any) -> Any:
                answer = await real_fetch(request)
                topic = answer.responses[0]
                partition = topic.partitions[0].model_copy(
                    update={"error_code": Errors.NOT_LEADER_OR_FOLLOWER.code, "records": None})
                return answer.model_copy(update={"responses": (
                    topic.model_copy(update={"partitions": (partition,)}),)})

            monkeypatch.setattr(manager, "fetch", refused)
            error, _ = await coordinator.fetch_offsets("g", None)
            assert error is Errors.NOT_COORDINATOR
            assert 0 not in coordinator.loaded
            coordinator.loaded[0] = Loaded(0)  # loaded again, as a tick would
            await coordinator.tick()  # the background tick meets the same refusal
            assert 0 not in coordinator.loaded
            await coordinator.stop()
        finally:
            await cluster.close()

    with caplog.at_level("INFO"):
        asyncio.run(scenario())
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
    assert "__consumer_offsets-0 is no longer led here" in caplog.text

