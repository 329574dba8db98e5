"""ListGroups, DescribeGroups and DeleteGroups over a GroupCoordinator on a real in-process
ReplicaManager: what each state of a group looks like, and that deletion writes tombstones
a new load does not bring back."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from chunkraft.broker_agent.coordinator.groups.coordinator import (
    GroupCoordinator,
)
from chunkraft.broker_agent.coordinator.groups.group_admin import (
    DEAD,
    delete_group,
    describe_group,
    list_groups,
)
from chunkraft.broker_agent.coordinator.groups.membership import Protocols
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    JoinGroupRequest,
    OffsetCommitPartition,
    OffsetCommitTopic,
    SyncGroupRequest,
)
from tests.unit.broker_agent.replica_harness import TOPIC, Cluster, offsets_cluster

OFFSETS_ID = uuid.UUID(int=0x0FF5E76)
KAFKA = Protocols("consumer", (("range", b"subscription"),), "client-7", "10.0.0.7")


async def _started(tmp_path: Path) -> tuple[Cluster, GroupCoordinator]:
    cluster = await offsets_cluster(tmp_path)
    return cluster, GroupCoordinator(cluster.managers[0], lambda: cluster.controller.image)


def _offsets(offset: int) -> list[OffsetCommitTopic]:
    return [OffsetCommitTopic(name=TOPIC, partitions=(
        OffsetCommitPartition(partition_index=0, committed_offset=offset),))]


def test_a_group_is_listed_described_and_deleted_through_its_states(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster, coordinator = await _started(tmp_path)
        try:
            assert (await describe_group(coordinator, "g")).state == DEAD
            assert await delete_group(coordinator, "g") is Errors.GROUP_ID_NOT_FOUND
            error, _ = await coordinator.commit_offsets("g", -1, "", _offsets(5))
            assert error is Errors.NONE
            assert [(g.group_id, g.protocol_type, g.state)
                    for g in list_groups(coordinator)] == [("g", "", "Empty")]
            joined = await coordinator.join_group(JoinGroupRequest.model_construct(
                group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                member_id="", topics=()), KAFKA)
            assert joined.error_code == 0
            forming = await describe_group(coordinator, "g")
            assert forming.state == "CompletingRebalance" and forming.protocol == ""
            assert forming.members[0].metadata == b""  # metadata only once Stable
            await coordinator.sync_group(SyncGroupRequest.model_construct(
                group_id="g", generation_id=1, member_id=joined.member_id, assignments=()),
                {joined.member_id: b"assigned"})
            stable = await describe_group(coordinator, "g")
            assert (stable.state, stable.protocol_type, stable.protocol) == (
                "Stable", "consumer", "range")
            member = stable.members[0]
            assert (member.client_id, member.client_host, member.metadata,
                    member.assignment) == ("client-7", "10.0.0.7", b"subscription",
                                           b"assigned")
            assert [g.state for g in list_groups(coordinator)] == ["Stable"]
            assert await delete_group(coordinator, "g") is Errors.NON_EMPTY_GROUP
            await coordinator.leave_group("g", joined.member_id)
            assert await delete_group(coordinator, "g") is Errors.NONE
            assert list_groups(coordinator) == []
            # A coordinator that loads the partition again finds nothing of the group.
            reloaded = GroupCoordinator(cluster.managers[0], lambda: cluster.controller.image)
            assert (await describe_group(reloaded, "g")).state == DEAD
            assert list_groups(reloaded) == []
        finally:
            await cluster.close()
    asyncio.run(scenario())


def test_a_broker_that_does_not_coordinate_the_group_says_so(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start(replicas=(0,))
        try:
            coordinator = GroupCoordinator(cluster.managers[0],
                                           lambda: cluster.controller.image)
            assert list_groups(coordinator) == []
            assert (await describe_group(coordinator, "g")).error is (
                Errors.COORDINATOR_NOT_AVAILABLE)
            assert await delete_group(coordinator, "g") is Errors.COORDINATOR_NOT_AVAILABLE
        finally:
            await cluster.close()
    asyncio.run(scenario())
