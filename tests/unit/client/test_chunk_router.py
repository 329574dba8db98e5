"""chunk_router: the chunk serving an offset and the broker a consumer asks for it."""

from __future__ import annotations

from chunkraft.client.chunk_router import active_start, pick_replica, route_offset
from chunkraft.client.metadata import ChunkInfo, PartitionInfo


def chunk(start: int, stop: int, isr: tuple[int, ...], end: int | None = None) -> ChunkInfo:
    return ChunkInfo(start, 0, stop, stop if end is None else end, 0, isr, isr)


def partition(start: int, leader: int, *chunks: ChunkInfo) -> PartitionInfo:
    return PartitionInfo(topic="t", partition=0, leader=leader, leader_epoch=0,
                         replicas=(leader,), isr=(leader,), start_offset=start, chunks=chunks)


CUT = partition(20, 1, chunk(0, 9, (0, 2)), chunk(10, 19, (2,)))


def test_a_partition_never_cut_is_read_from_its_leader_from_offset_zero() -> None:
    never = partition(-1, 3)
    assert active_start(never) == 0
    route = route_offset(never, 0, "c")
    assert route is not None and (route.broker_id, route.active) == (3, True)


def test_offsets_go_to_the_chunk_holding_them() -> None:
    first = route_offset(CUT, 5, "c")
    assert first is not None and not first.active
    assert (first.chunk_start, first.stop_offset) == (0, 9)
    assert first.broker_id in (0, 2)
    second = route_offset(CUT, 19, "c")
    assert second is not None and (second.broker_id, second.chunk_start, second.stop_offset) \
        == (2, 10, 19)
    active = route_offset(CUT, 20, "c")
    assert active is not None and (active.broker_id, active.active) == (1, True)
    beyond = route_offset(CUT, 500, "c")
    assert beyond is not None and beyond.active


def test_an_offset_no_chunk_serves_has_no_route() -> None:
    after_retention = partition(20, 1, chunk(10, 19, (2,)))
    assert route_offset(after_retention, 3, "c") is None


def test_the_replica_is_stable_per_client_and_moves_on_after_a_failure() -> None:
    isr = (0, 1, 2)
    picks = {pick_replica(isr, f"client-{i}") for i in range(50)}
    assert picks == {0, 1, 2}  # clients spread over the replicas
    assert pick_replica(isr, "me") == pick_replica((2, 0, 1), "me")
    assert pick_replica(isr, "me", attempt=1) != pick_replica(isr, "me")
    assert pick_replica(isr, "me", live={1}) == 1
    assert pick_replica(isr, "me", live=set()) == -1


def test_fenced_leaders_and_replicas_give_no_broker() -> None:
    route = route_offset(CUT, 25, "c", live={0, 2})
    assert route is not None and route.broker_id == -1
    inactive = route_offset(CUT, 12, "c", live={0, 1})
    assert inactive is not None and inactive.broker_id == -1


def test_metadata_from_before_the_cut_settled_sends_later_offsets_to_the_leader() -> None:
    settling = partition(-1, 1, chunk(0, 9, (0,)))
    early = route_offset(settling, 4, "c")
    late = route_offset(settling, 10, "c")
    assert early is not None and not early.active
    assert late is not None and late.active
