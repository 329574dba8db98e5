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
    # The first leader is the base of the term: a steady quorum shows 1 change, +0.
    assert (watch.leadership_changes, watch.term_increments) == (1, 0)
    assert watch.leader_for() == 5.0
    assert watch.observe(2, "b")
    assert (watch.leadership_changes, watch.term_increments) == (2, 1)


def test_a_new_node_or_a_new_term_is_a_change_and_a_gap_alone_is_not() -> None:
    clock = _Clock()
    watch = LeadershipWatch(clock)
    assert not watch.observe(1, None)  # restarted at term 1, no leader yet: no base
    watch.observe(3, "a")  # it hears the leader of term 3: adopted, not an election
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


def test_each_watch_has_its_own_incarnation() -> None:
    assert LeadershipWatch().incarnation != LeadershipWatch().incarnation
