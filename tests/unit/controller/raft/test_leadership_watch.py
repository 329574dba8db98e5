"""controller/raft/leadership_watch: changes of leader and rises of the term, as one node saw
them on its ticks."""

from __future__ import annotations

from chunkraft.controller.raft.leadership_watch import LeadershipWatch


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_steady_quorum_shows_one_change_and_the_leaders_age() -> None:
    clock = _Clock()
    watch = LeadershipWatch(clock)
    assert not watch.observe(0, None)  # starting: no leader yet
    assert watch.leader_for() is None
    assert watch.observe(1, "a")  # the first election
    for _ in range(5):
        clock.now += 1.0
        assert not watch.observe(1, "a")
    assert (watch.leadership_changes, watch.term_increments) == (1, 1)
    assert watch.leader_for() == 5.0


def test_a_new_node_or_a_new_term_is_a_change_and_a_gap_alone_is_not() -> None:
    clock = _Clock()
    watch = LeadershipWatch(clock)
    watch.observe(3, "a")  # a node restarted at term 3: its base term
    assert watch.term_increments == 0
    assert not watch.observe(3, None)  # a moment without a leader
    assert watch.leader_for() is None
    assert not watch.observe(3, "a")  # the same leader, the same term: no change
    assert watch.observe(5, "a")  # re-elected two terms later: a change, +2
    clock.now += 2.0
    assert watch.observe(5, "b") is True  # another node (it would be a new term in Raft)
    assert (watch.leadership_changes, watch.term_increments) == (3, 2)
    assert watch.leader_for() == 0.0
    watch.observe(4, "b")  # a lower term is never a rise
    assert watch.term_increments == 2
