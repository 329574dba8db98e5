"""GroupMembership: generations, leader, assignment, heartbeats, session timeouts."""

from __future__ import annotations

import asyncio

from chunkraft.broker_agent.coordinator.groups.membership import (
    GroupMembership,
    GroupState,
    Protocols,
)
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import SyncGroupAssignment, TopicPartitions


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _assign(member: str, *partitions: int) -> SyncGroupAssignment:
    return SyncGroupAssignment(member_id=member, partitions=(
        TopicPartitions(name="orders", partitions=partitions),))


def test_one_member_forms_a_generation_and_syncs() -> None:
    async def scenario() -> None:
        group = GroupMembership("g", Clock())
        joined = await group.join("", ("orders",), 10_000, 30_000)
        assert joined.error_code == 0 and joined.generation_id == 1
        assert joined.leader == joined.member_id
        assert [m.member_id for m in joined.members] == [joined.member_id]
        synced = await group.sync(joined.member_id, 1, (_assign(joined.member_id, 0, 1),))
        assert synced.partitions[0].partitions == (0, 1)
        assert group.state is GroupState.STABLE
        assert group.heartbeat(joined.member_id, 1) is Errors.NONE
        assert group.heartbeat(joined.member_id, 0) is Errors.ILLEGAL_GENERATION
        assert group.heartbeat("nobody", 1) is Errors.UNKNOWN_MEMBER_ID
    asyncio.run(scenario())


def test_a_second_member_rebalances_and_the_first_stays_leader() -> None:
    async def scenario() -> None:
        group = GroupMembership("g", Clock())
        first = await group.join("", ("orders",), 10_000, 30_000)
        await group.sync(first.member_id, 1, (_assign(first.member_id, 0, 1),))
        second_join = asyncio.ensure_future(group.join("", ("orders",), 10_000, 30_000))
        await asyncio.sleep(0)
        assert not second_join.done()  # waits for the first member to rejoin
        assert group.heartbeat(first.member_id, 1) is Errors.REBALANCE_IN_PROGRESS
        # Kafka lets a member of the current generation commit while the group waits for
        # rejoins (what it processed before revoking its partitions).
        assert group.check_commit(first.member_id, 1) is Errors.NONE
        rejoined = await group.join(first.member_id, ("orders",), 10_000, 30_000)
        second = await second_join
        assert rejoined.generation_id == second.generation_id == 2
        assert rejoined.leader == second.leader == first.member_id
        assert len(rejoined.members) == 2 and second.members == ()
        follower_sync = asyncio.ensure_future(group.sync(second.member_id, 2, ()))
        await asyncio.sleep(0)
        assert not follower_sync.done()  # waits for the leader's assignment
        await group.sync(first.member_id, 2, (_assign(first.member_id, 0),
                                              _assign(second.member_id, 1)))
        assert (await follower_sync).partitions[0].partitions == (1,)
        assert group.check_commit(second.member_id, 2) is Errors.NONE
        assert group.check_commit("", -1) is Errors.UNKNOWN_MEMBER_ID  # the group has members
    asyncio.run(scenario())


def test_silent_members_expire_and_the_rest_rebalance() -> None:
    async def scenario() -> None:
        clock = Clock()
        group = GroupMembership("g", clock)
        first = await group.join("", ("orders",), 10_000, 30_000)
        await group.sync(first.member_id, 1, ())
        second_join = asyncio.ensure_future(group.join("", ("orders",), 10_000, 30_000))
        await asyncio.sleep(0)
        clock.now += 11_000  # the first member never rejoins nor heartbeats
        group.tick()
        second = await second_join
        assert second.error_code == 0 and second.generation_id == 2
        assert second.leader == second.member_id
        assert list(group.members) == [second.member_id]
        assert group.leave(second.member_id) is Errors.NONE
        assert group.state is GroupState.EMPTY
        assert group.check_commit("", -1) is Errors.NONE
    asyncio.run(scenario())


def test_a_rebalance_timeout_drops_members_that_did_not_rejoin() -> None:
    async def scenario() -> None:
        clock = Clock()
        group = GroupMembership("g", clock)
        first = await group.join("", ("orders",), 60_000, 5_000)
        await group.sync(first.member_id, 1, ())
        second_join = asyncio.ensure_future(group.join("", ("orders",), 60_000, 5_000))
        await asyncio.sleep(0)
        clock.now += 4_000
        assert group.heartbeat(first.member_id, 1) is Errors.REBALANCE_IN_PROGRESS
        clock.now += 2_000
        group.tick()
        second = await second_join
        assert second.generation_id == 2 and first.member_id not in group.members
    asyncio.run(scenario())


def test_unknown_member_join_and_leave() -> None:
    async def scenario() -> None:
        group = GroupMembership("g", Clock())
        answer = await group.join("ghost", ("orders",), 10_000, 30_000)
        assert answer.error_code == Errors.UNKNOWN_MEMBER_ID.code
        assert group.leave("ghost") is Errors.UNKNOWN_MEMBER_ID
        synced = await group.sync("ghost", 1, ())
        assert synced.error_code == Errors.UNKNOWN_MEMBER_ID.code
    asyncio.run(scenario())


# ---------------------------------------------------------------- Kafka members (Protocols)


def _kafka(*names: str, metadata: bytes = b"m") -> Protocols:
    return Protocols("consumer", tuple((name, metadata + name.encode()) for name in names),
                     "client-1", "127.0.0.1")


def test_kafka_members_agree_on_the_protocol_most_of_them_prefer() -> None:
    async def scenario() -> None:
        group = GroupMembership("g", Clock())
        first = await group.join("", (), 10_000, 30_000, _kafka("range", "roundrobin"))
        joins = [asyncio.ensure_future(group.join("", (), 10_000, 30_000,
                                                  _kafka("roundrobin", "range")))
                 for _ in range(2)]
        await asyncio.sleep(0)
        rejoined = await group.join(first.member_id, (), 10_000, 30_000,
                                    _kafka("range", "roundrobin"))
        await asyncio.gather(*joins)
        assert rejoined.generation_id == 2
        assert group.protocol_type == "consumer"
        assert group.protocol_name == "roundrobin"  # two of three name it first
        assert [metadata for _, _, metadata in group.generation_members] == [
            b"mroundrobin"] * 3
    asyncio.run(scenario())


def test_a_kafka_member_sharing_no_protocol_or_type_is_refused() -> None:
    async def scenario() -> None:
        group = GroupMembership("g", Clock())
        await group.join("", (), 10_000, 30_000, _kafka("range"))
        other = await group.join("", (), 10_000, 30_000, _kafka("sticky"))
        assert other.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL.code
        connect = await group.join("", (), 10_000, 30_000,
                                   Protocols("connect", (("range", b""),)))
        assert connect.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL.code
        own = await group.join("", ("orders",), 10_000, 30_000)  # chunkraft's own member
        assert own.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL.code
        empty = await GroupMembership("h", Clock()).join("", (), 10_000, 30_000,
                                                         Protocols("consumer", ()))
        assert empty.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL.code
        assert len(group.members) == 1
    asyncio.run(scenario())


def test_the_leaders_opaque_assignment_reaches_each_member_and_survives_a_restore() -> None:
    async def scenario() -> None:
        clock = Clock()
        group = GroupMembership("g", clock)
        first = await group.join("", (), 10_000, 30_000, _kafka("range"))
        second_join = asyncio.ensure_future(group.join("", (), 10_000, 30_000,
                                                       _kafka("range")))
        await asyncio.sleep(0)
        await group.join(first.member_id, (), 10_000, 30_000, _kafka("range"))
        second = await second_join
        follower = asyncio.ensure_future(group.sync(second.member_id, 2, ()))
        await group.sync(first.member_id, 2, (), {first.member_id: b"\x00A",
                                                  second.member_id: b"\x00B"})
        await follower
        assert group.state is GroupState.STABLE
        assert group.members[second.member_id].assignment_bytes == b"\x00B"
        restored = GroupMembership.restore("g", clock, group.snapshot() or {})
        assert restored.protocol_type == "consumer" and restored.protocol_name == "range"
        assert restored.members[first.member_id].assignment_bytes == b"\x00A"
        assert restored.members[first.member_id].protocols == _kafka("range")
        assert restored.generation_members == group.generation_members
        restored.leave(first.member_id)
        restored.leave(second.member_id)
        assert restored.protocol_type is None and restored.state is GroupState.EMPTY
    asyncio.run(scenario())


def test_a_member_waiting_for_the_leaders_assignment_outlives_its_session() -> None:
    async def scenario() -> None:
        clock = Clock()
        group = GroupMembership("g", clock)
        first = await group.join("", (), 10_000, 60_000, _kafka("range"))
        second_join = asyncio.ensure_future(group.join("", (), 10_000, 60_000,
                                                       _kafka("range")))
        await asyncio.sleep(0)
        await group.join(first.member_id, (), 10_000, 60_000, _kafka("range"))
        second = await second_join
        waiting = asyncio.ensure_future(group.sync(second.member_id, 2, ()))
        await asyncio.sleep(0)
        for _ in range(3):  # the leader heartbeats; the follower waits past its session
            clock.now += 8_000
            assert group.heartbeat(first.member_id, 2) is Errors.NONE
            group.tick()
        assert second.member_id in group.members and not waiting.done()
        await group.sync(first.member_id, 2, (), {second.member_id: b"a"})
        assert (await waiting).error_code == 0
        assert group.members[second.member_id].assignment_bytes == b"a"
        clock.now += 11_000  # now silent past its session with nothing pending: gone
        group.heartbeat(first.member_id, 2)
        group.tick()
        assert second.member_id not in group.members and first.member_id in group.members
    asyncio.run(scenario())
