"""The timeline geometry of one partition, from its records alone."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from chunkraft.console.timeline import ACTIVE_SHARE, BAR_FIELDS, Bar, partition_timeline
from chunkraft.records import ChunkRecord, PartitionRecord, RegisterBrokerRecord

TOPIC_ID = uuid.UUID(int=7)
BROKERS = {b: RegisterBrokerRecord(broker_id=b, fenced=b == 3) for b in (1, 2, 3)}


def partition(start: int, replicas: tuple[int, ...] = (1, 2), leader: int = 1,
              **fields: object) -> PartitionRecord:
    return PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=replicas, isr=replicas,
                           leader=leader, leader_epoch=4, partition_epoch=6,
                           start_offset=start, start_timestamp=1_700_000_000_000, **fields)


def chunk(start: int, stop: int, end: int, replicas: tuple[int, ...] = (1, 2),
          **fields: object) -> ChunkRecord:
    return ChunkRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=start, stop_offset=stop,
                       end_offset=end, start_timestamp=1000 + start, replicas=replicas,
                       isr=fields.pop("isr", replicas), epoch=2, **fields)  # type: ignore[arg-type]


def bars_at(timeline_bars: tuple[Bar, ...], start: int) -> dict[int, Bar]:
    return {b.broker_id: b for b in timeline_bars if b.start_offset == start}


def test_an_empty_partition_is_one_active_bar_over_the_whole_axis_on_each_replica() -> None:
    timeline = partition_timeline("t", partition(0), (), BROKERS)
    assert (timeline.axis_start, timeline.known_end, timeline.axis_end) == (0, 0, 1)
    assert timeline.chunks == 1 and timeline.moves_in_progress == 0
    assert [lane.broker_id for lane in timeline.lanes] == [1, 2]
    assert all(lane.rows == 1 for lane in timeline.lanes)
    by_broker = bars_at(timeline.bars, 0)
    assert set(by_broker) == {1, 2}
    for bar in by_broker.values():
        assert bar.active and (bar.x0, bar.x1) == (0.0, 1.0)
        assert (bar.stop_offset, bar.end_offset) == (-1, -1)
    assert by_broker[1].leader and not by_broker[2].leader


def test_inactive_chunks_are_bars_from_start_to_end_and_the_active_one_is_open_ended() -> None:
    chunks = (chunk(0, 99, 99), chunk(100, 199, 199, replicas=(2, 3)))
    timeline = partition_timeline("t", partition(200, replicas=(3, 1), leader=3), chunks,
                                  BROKERS)
    assert (timeline.axis_start, timeline.known_end) == (0, 200)
    # The open stretch is ACTIVE_SHARE of the whole axis.
    assert timeline.axis_end == 200 + round(200 * ACTIVE_SHARE / (1 - ACTIVE_SHARE))
    width = timeline.axis_end
    first = bars_at(timeline.bars, 0)
    assert set(first) == {1, 2}
    assert first[1].x0 == 0.0 and first[1].x1 == pytest.approx(100 / width)
    assert first[1].x_stop == first[1].x1  # stop == end: nothing held past the stop
    second = bars_at(timeline.bars, 100)
    assert set(second) == {2, 3}
    assert second[3].x0 == pytest.approx(100 / width)
    active = bars_at(timeline.bars, 200)
    assert set(active) == {3, 1}
    assert active[3].active and active[3].leader and active[3].x1 == 1.0
    assert active[3].x0 == pytest.approx(200 / width)
    assert not active[1].leader
    lanes = {lane.broker_id: lane for lane in timeline.lanes}
    assert lanes[3].fenced and lanes[1].registered and timeline.chunks == 3
    assert all(lane.rows == 1 for lane in timeline.lanes)  # nothing overlaps


def test_a_transactional_cut_overlaps_the_next_chunk_on_a_row_of_its_own() -> None:
    # Cut at LSO 100 with HW 105: the old chunk stops at 99 but holds up to 104; the new
    # active chunk starts at 100 on the same brokers.
    timeline = partition_timeline("t", partition(100), (chunk(0, 99, 104),), BROKERS)
    assert timeline.known_end == 105
    old = bars_at(timeline.bars, 0)[1]
    new = bars_at(timeline.bars, 100)[1]
    width = timeline.axis_end - timeline.axis_start
    assert old.x_stop == pytest.approx(100 / width)
    assert old.x1 == pytest.approx(105 / width)
    assert old.x1 > new.x0  # the bars overlap on the axis...
    assert {old.row, new.row} == {0, 1}  # ...so they sit on separate rows of the lane
    assert {lane.broker_id: lane.rows for lane in timeline.lanes} == {1: 2, 2: 2}


def test_a_move_in_progress_marks_adding_and_removing_replicas() -> None:
    moving = chunk(0, 49, 49, replicas=(3, 1, 2), isr=(1, 2), adding_replicas=(3,),
                   removing_replicas=(2,))
    timeline = partition_timeline("t", partition(50), (moving,), BROKERS)
    assert timeline.moves_in_progress == 1
    bars = bars_at(timeline.bars, 0)
    assert bars[3].adding and not bars[3].in_sync and not bars[3].removing
    assert bars[2].removing and bars[2].in_sync
    assert not bars[1].adding and not bars[1].removing
    assert [lane.broker_id for lane in timeline.lanes] == [1, 2, 3]


def test_a_partition_reassignment_counts_as_a_move_of_the_active_chunk() -> None:
    active = partition(10, replicas=(1, 2, 3), adding_replicas=(3,), removing_replicas=(1,))
    timeline = partition_timeline("t", active, (chunk(0, 9, 9),), BROKERS)
    assert timeline.moves_in_progress == 1
    bars = bars_at(timeline.bars, 10)
    assert bars[3].adding and bars[1].removing and bars[1].leader


def test_a_replica_on_an_unregistered_broker_gets_a_lane_marked_so() -> None:
    timeline = partition_timeline("t", partition(10, replicas=(1, 9)), (chunk(0, 9, 9),),
                                  BROKERS)
    lanes = {lane.broker_id: lane for lane in timeline.lanes}
    assert not lanes[9].registered and lanes[1].registered


def test_the_axis_starts_at_the_first_retained_chunk() -> None:
    timeline = partition_timeline("t", partition(3000), (chunk(1000, 1999, 1999),
                                                         chunk(2000, 2999, 2999)), BROKERS)
    assert timeline.axis_start == 1000
    assert bars_at(timeline.bars, 1000)[1].x0 == 0.0


def test_the_json_form_carries_every_field() -> None:
    timeline = partition_timeline("t", partition(100), (chunk(0, 99, 104),), BROKERS)
    body = timeline.to_json()
    assert body["topic"] == "t" and body["partition_id"] == 0 and body["leader"] == 1
    assert len(body["bars"]) == 4 and len(body["lanes"]) == 2
    assert body["bar_fields"] == list(BAR_FIELDS)
    for row, bar in zip(body["bars"], timeline.bars, strict=True):
        named = dict(zip(body["bar_fields"], row, strict=True))
        assert named == {k: round(v, 6) if isinstance(v, float) else v
                         for k, v in dataclasses.asdict(bar).items()}
