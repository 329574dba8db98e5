"""The history checker: histories that must fail, histories that must pass, and its bound."""

from __future__ import annotations

import pytest

from chunkraft.chaos.history import (
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    MoveChunk,
)
from chunkraft.chaos.history import TopicView as V
from chunkraft.chaos.linearizability import CheckResult, ReadLevel, Verdict, check

from .helpers import H

LIN = ReadLevel.LINEARIZABLE
RYW = ReadLevel.READ_YOUR_WRITES
BOTH = pytest.mark.parametrize("reads", [LIN, RYW])

CREATE = CreateTopic("a", 1, 3)
READ = Describe("a")


def violation(h: H, reads: ReadLevel) -> CheckResult:
    result = check(h.ops, reads)
    assert result.verdict is Verdict.VIOLATION, result.explain()
    assert not result.valid
    return result


def valid(h: H, reads: ReadLevel) -> CheckResult:
    result = check(h.ops, reads)
    assert result.verdict is Verdict.VALID, result.explain()
    return result


# --- histories that must fail -------------------------------------------------------------


@BOTH
def test_a_lost_acknowledged_create(reads: ReadLevel) -> None:
    # The create was acknowledged, then a write of another client finds no topic.
    h = H().ok(1, CREATE, 0, 10, "id-a").fail(2, CreatePartitions("a", 3), 20, 30,
                                               "UNKNOWN_TOPIC_OR_PARTITION")
    r = violation(h, reads)
    assert r.violations[0].first_violating.index == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in r.explain()


@BOTH
def test_a_lost_create_read_by_its_own_writer(reads: ReadLevel) -> None:
    violation(H().ok(1, CREATE, 0, 10, "id-a").ok(1, READ, 20, 30, None), reads)


def test_a_lost_create_read_by_another_client_only_fails_linearizable_reads() -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(2, READ, 20, 30, None)
    violation(h, LIN)
    valid(h, RYW)  # a follower that has not applied the create yet may answer this


@BOTH
@pytest.mark.parametrize("second", [(5, 15), (20, 30)])
def test_a_duplicated_create_both_ok(reads: ReadLevel, second: tuple[int, int]) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(2, CREATE, *second, "id-b")
    r = violation(h, reads)
    assert "TOPIC_ALREADY_EXISTS" in r.explain()


@BOTH
def test_a_read_that_sees_a_write_before_it_was_invoked(reads: ReadLevel) -> None:
    h = H().ok(2, READ, 0, 10, V("id-a", 1)).ok(1, CREATE, 20, 30, "id-a")
    r = violation(h, reads)
    assert r.violations[0].first_violating.op == READ


@BOTH
def test_a_read_of_a_partition_count_nobody_wrote(reads: ReadLevel) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").info(3, CreatePartitions("a", 4), 12)
    h.ok(2, READ, 20, 30, V(None, 3))
    violation(h, reads)


def test_a_stale_read_after_an_ok_write_completed() -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(1, CreatePartitions("a", 3), 20, 30)
    h.ok(2, READ, 40, 50, V("id-a", 1))
    r = violation(h, LIN)
    assert "1 partition(s), model has 3" in r.explain()
    valid(h, RYW)
    # Its own write's offset as min_offset: the writer never reads the older state.
    h2 = H().ok(1, CREATE, 0, 10, "id-a").ok(1, CreatePartitions("a", 3), 20, 30)
    h2.ok(1, READ, 40, 50, V("id-a", 1))
    violation(h2, RYW)


def test_two_reads_of_one_client_may_go_back_in_time_only_without_linearizable_reads() -> None:
    # Through the leader, then through a follower that lags: docs/api.md does not forbid it.
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(2, CreatePartitions("a", 3), 20, 30)
    h.ok(3, READ, 40, 50, V("id-a", 3)).ok(3, READ, 60, 70, V("id-a", 1))
    violation(h, LIN)
    valid(h, RYW)


@BOTH
def test_a_refused_write_orders_its_writers_later_reads(reads: ReadLevel) -> None:
    # The refusal was validated against a state with the topic; the writer's read must follow.
    h = H().ok(1, CREATE, 0, 10, "id-a").fail(2, CREATE, 20, 30, "TOPIC_ALREADY_EXISTS")
    h.ok(2, READ, 40, 50, None)
    violation(h, reads)


@BOTH
def test_a_read_that_sees_another_topic_id(reads: ReadLevel) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(1, READ, 20, 30, V("id-b", 1))
    violation(h, reads)


@BOTH
def test_create_partitions_applied_twice(reads: ReadLevel) -> None:
    # One expansion, acknowledged to two clients: the second must have seen INVALID_PARTITIONS.
    h = H().ok(1, CREATE, 0, 10, "id-a")
    h.ok(2, CreatePartitions("a", 3), 20, 30).ok(3, CreatePartitions("a", 3), 25, 40)
    violation(h, reads)


@BOTH
def test_a_chunk_cut_applied_twice(reads: ReadLevel) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(2, CutChunk("a", 0, 100), 20, 30)
    h.ok(3, CutChunk("a", 0, 100), 35, 40)
    violation(h, reads)


@BOTH
@pytest.mark.parametrize("error", ["NOT_CONTROLLER", "REQUEST_TIMED_OUT"])
def test_an_op_that_failed_but_took_effect(reads: ReadLevel, error: str) -> None:
    h = H().fail(1, CREATE, 0, 10, error).ok(2, READ, 20, 30, V(None, 1))
    violation(h, reads)
    h2 = H().ok(1, CREATE, 0, 10, "id-a").fail(1, CreatePartitions("a", 2), 20, 30, error)
    h2.ok(1, READ, 40, 50, V(None, 2))
    violation(h2, reads)


@BOTH
def test_a_modelled_error_that_the_state_cannot_explain(reads: ReadLevel) -> None:
    violation(H().fail(1, CREATE, 0, 10, "TOPIC_ALREADY_EXISTS"), reads)
    h = H().ok(1, CREATE, 0, 10, "id-a").fail(2, CreatePartitions("a", 5), 20, 30,
                                               "INVALID_PARTITIONS")
    violation(h, reads)


@BOTH
def test_a_move_that_a_later_read_does_not_show(reads: ReadLevel) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(1, CutChunk("a", 0, 50), 20, 30)
    h.ok(1, MoveChunk("a", 0, 0, (7, 8)), 40, 50)
    h.ok(1, READ, 60, 70, V("id-a", 1, (((0, (1, 2)), (50, None)),)))
    r = violation(h, reads)
    assert "replicas [1, 2], model has [7, 8]" in r.explain()


def test_the_violation_names_the_topic_and_leaves_other_topics_valid() -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(2, CREATE, 20, 30, "id-a2")
    h.ok(3, CreateTopic("b", 1, 1), 0, 10, "id-b").ok(3, Describe("b"), 20, 30, V("id-b", 1))
    r = violation(h, LIN)
    assert [t.verdict for t in r.topics] == [Verdict.VIOLATION, Verdict.VALID]
    assert [v.topic for v in r.violations] == ["a"]
    text = r.explain()
    assert text.startswith("violation: 2 topic(s), 4 operation(s) checked")
    assert "topic 'a'" in text and "#1 p2" in text


# --- histories that must pass -------------------------------------------------------------


@BOTH
@pytest.mark.parametrize("winner_first", [True, False])
def test_concurrent_creates_in_either_order(reads: ReadLevel, winner_first: bool) -> None:
    h = H()
    if winner_first:
        h.ok(1, CREATE, 0, 20, "id-a").fail(2, CREATE, 5, 15, "TOPIC_ALREADY_EXISTS")
    else:
        h.fail(2, CREATE, 0, 20, "TOPIC_ALREADY_EXISTS").ok(1, CREATE, 5, 15, "id-a")
    h.ok(3, READ, 30, 40, V("id-a", 1))
    valid(h, reads)


@BOTH
@pytest.mark.parametrize("seen", [1, 3])
def test_a_read_overlapping_a_write_sees_before_or_after(reads: ReadLevel, seen: int) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(1, CreatePartitions("a", 3), 20, 40)
    h.ok(2, READ, 25, 35, V("id-a", seen))
    valid(h, reads)


@BOTH
def test_overlapping_expansions_in_either_order(reads: ReadLevel) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a")
    h.ok(2, CreatePartitions("a", 3), 20, 40).fail(3, CreatePartitions("a", 2), 21, 39,
                                                   "INVALID_PARTITIONS")
    h.ok(4, CreatePartitions("a", 5), 22, 38).ok(5, READ, 50, 60, V("id-a", 5))
    valid(h, reads)


@BOTH
@pytest.mark.parametrize("took_effect", [True, False])
def test_an_unknown_create_takes_effect_or_not(reads: ReadLevel, took_effect: bool) -> None:
    h = H().info(1, CREATE, 0)
    if took_effect:
        h.ok(2, READ, 20, 30, V("id-a", 1)).fail(3, CREATE, 40, 50, "TOPIC_ALREADY_EXISTS")
    else:
        h.ok(2, READ, 20, 30, None).ok(3, CREATE, 40, 50, "id-a")
    valid(h, reads)


@BOTH
def test_an_unknown_op_takes_effect_long_after_it_was_invoked(reads: ReadLevel) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").info(2, CreatePartitions("a", 4), 20)
    h.ok(3, READ, 100, 110, V("id-a", 1)).ok(3, READ, 200, 210, V("id-a", 4))
    valid(h, reads)


@BOTH
def test_opaque_failures_and_unknown_reads_constrain_nothing(reads: ReadLevel) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").fail(2, CREATE, 20, 30, "NOT_CONTROLLER")
    h.info(3, READ, 20).fail(4, READ, 20, 30, "REQUEST_TIMED_OUT")
    h.fail(5, READ, 40, 50, "TOPIC_AUTHORIZATION_FAILED")
    r = valid(h, reads)
    assert r.operations == 1


@BOTH
def test_chunk_cuts_and_moves_seen_by_reads(reads: ReadLevel) -> None:
    h = H().ok(1, CreateTopic("a", 2, 2), 0, 10, "id-a")
    h.ok(1, CutChunk("a", 1, 100, (3, 4)), 20, 30)
    h.fail(2, CutChunk("a", 1, 100), 25, 35, "INVALID_REQUEST")
    h.ok(1, MoveChunk("a", 1, 0, (5, 6)), 40, 50)
    h.fail(2, MoveChunk("a", 1, 100, (1, 2)), 40, 50, "UNKNOWN_CHUNK")
    h.ok(3, READ, 60, 70, V("id-a", 2, (((0, None),), ((0, (6, 5)), (100, (3, 4))))))
    h.fail(3, Describe("b"), 60, 70, "UNKNOWN_TOPIC_OR_PARTITION")
    valid(h, reads)


# --- the bound ----------------------------------------------------------------------------


def _hard_history(n: int) -> H:
    # n concurrent expansions of unknown outcome and a read no subset explains: the search
    # must try every subset, in every order, before it can say so.
    h = H().ok(0, CreateTopic("a", 1, 1), 0, 1, "id-a")
    for i in range(n):
        h.info(i + 1, CreatePartitions("a", 2 + i), 10)
    return h.ok(n + 1, READ, 20, 30, V("id-a", 1000))


def test_the_search_is_bounded_by_states() -> None:
    r = check(_hard_history(18).ops, max_states=5_000)
    assert r.verdict is Verdict.UNKNOWN
    assert r.topics[0].states == 5_000
    assert "search bound hit on ['a']" in r.explain()


def test_the_search_is_bounded_by_time() -> None:
    r = check(_hard_history(40).ops, max_states=10**9, time_limit=0.2)
    assert r.verdict is Verdict.UNKNOWN


def test_a_topic_of_unknown_outcomes_only_is_valid_at_once() -> None:
    h = H()
    for i in range(40):
        h.info(i, CreatePartitions("a", 2 + i), 10)
    r = check(h.ops, max_states=10)
    assert r.verdict is Verdict.VALID and r.topics[0].states == 1


def test_a_small_hard_history_is_searched_to_the_end() -> None:
    r = check(_hard_history(6).ops)
    assert r.verdict is Verdict.VIOLATION
