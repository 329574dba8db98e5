"""The topic model answers as the controller's validation does (docs/controller.md)."""

from __future__ import annotations

from chunkraft.chaos.history import (
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    MoveChunk,
    TopicView,
)
from chunkraft.chaos.model import (
    PartitionState,
    State,
    TopicState,
    step,
    summary,
    view_mismatch,
)


def run(*ops: CreateTopic | CreatePartitions | CutChunk | MoveChunk) -> State:
    state: State = None
    for op in ops:
        s = step(state, op)
        assert s.error is None, s.why
        state = s.after
    return state


def test_create_then_create_again_is_topic_already_exists() -> None:
    state = run(CreateTopic("a", 2, 1))
    assert state == TopicState(None, (PartitionState(), PartitionState()))
    assert step(state, CreateTopic("a", 1, 1)).error == "TOPIC_ALREADY_EXISTS"
    assert step(state, CreateTopic("a", 1, 1)).after is state


def test_create_partitions_needs_the_topic_and_an_increase() -> None:
    assert step(None, CreatePartitions("a", 3)).error == "UNKNOWN_TOPIC_OR_PARTITION"
    state = run(CreateTopic("a", 2, 1))
    assert step(state, CreatePartitions("a", 2)).error == "INVALID_PARTITIONS"
    assert step(state, CreatePartitions("a", 1)).error == "INVALID_PARTITIONS"
    after = step(state, CreatePartitions("a", 4)).after
    assert after is not None and len(after.partitions) == 4


def test_cut_and_move_chunks() -> None:
    state = run(CreateTopic("a", 1, 2), CutChunk("a", 0, 10, (3, 4)), CutChunk("a", 0, 20))
    assert state is not None
    assert state.partitions[0].chunks() == ((0, None), (10, (3, 4)), (20, None))
    assert step(state, CutChunk("a", 0, 20)).error == "INVALID_REQUEST"
    assert step(state, CutChunk("a", 0, 15)).error == "INVALID_CHUNK_OFFSETS"
    assert step(state, CutChunk("a", 1, 30)).error == "UNKNOWN_TOPIC_OR_PARTITION"
    assert step(state, MoveChunk("a", 0, 20, (1, 2))).error == "UNKNOWN_CHUNK"  # the active one
    moved = step(state, MoveChunk("a", 0, 10, (5, 6))).after
    assert moved is not None and moved.partitions[0].inactive[1] == (10, (5, 6))
    assert step(state, Describe("a")).after is state


def test_a_view_matches_only_what_both_sides_know() -> None:
    state = run(CreateTopic("a", 1, 2), CutChunk("a", 0, 10, (3, 4)))
    assert view_mismatch(None, None) is None
    assert view_mismatch(state, None) == "topic not found"
    assert view_mismatch(None, TopicView(None, 1)) == "saw the topic, which does not exist"
    assert view_mismatch(state, TopicView("any-id", 1)) is None  # the model never heard an id
    assert view_mismatch(state, TopicView(None, 1, (((0, (1, 2)), (10, (4, 3))),))) is None
    assert view_mismatch(state, TopicView(None, 1, (((0, None), (10, (1, 2))),))) is not None
    assert view_mismatch(state, TopicView(None, 1, (((0, None),),))) is not None
    assert view_mismatch(state, TopicView(None, 2)) is not None
    assert view_mismatch(state, TopicView(None, 1, ())) is not None


def test_a_summary_names_what_a_report_needs() -> None:
    assert summary(None) == "absent"
    state = run(CreateTopic("a", 2, 2), CutChunk("a", 1, 10, (3, 4)))
    assert summary(state) == "id ?, 2 partition(s); p1 chunks [0, 10@[3, 4]]"
