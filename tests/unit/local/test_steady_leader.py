"""deploy/steady_leader: whether a quorum kept its leader, from the controllers' own counts and
logs."""

from __future__ import annotations

from pathlib import Path

from chunkraft.local.steady_leader import (
    LeadershipSample,
    NodeLeadership,
    leadership_moved,
    leaderships_in_logs,
)


def _sample(**nodes: tuple[int | None, int, int, int]) -> LeadershipSample:
    return LeadershipSample({int(name[1:]): NodeLeadership(*seen) for name, seen in nodes.items()})


STEADY = _sample(n1=(1, 3, 1, 1), n2=(1, 3, 1, 1), n3=(1, 3, 1, 1))


def test_nothing_moved_in_a_steady_quorum() -> None:
    assert leadership_moved(STEADY, STEADY) is None


def test_a_new_leader_is_named_with_the_counts() -> None:
    after = _sample(n1=(2, 5, 3, 3), n2=(2, 5, 2, 3), n3=(2, 5, 2, 3))
    moved = leadership_moved(STEADY, after)
    assert moved is not None
    assert moved.startswith("2 leadership change(s) and a term 2 higher")
    assert "node 1 saw leader 1 at term 3, then leader 2 at term 5" in moved


def test_the_same_leader_at_a_higher_term_has_moved_too() -> None:
    after = _sample(n1=(1, 4, 2, 2), n2=(1, 4, 2, 2), n3=(1, 4, 2, 2))
    moved = leadership_moved(STEADY, after)
    assert moved is not None and "term 1 higher" in moved


def test_disagreement_or_no_leader_is_a_move_and_a_restarted_node_only_counts_for_the_rest(
        ) -> None:
    split = _sample(n1=(1, 3, 1, 1), n2=(None, 3, 1, 1), n3=(1, 3, 1, 1))
    moved = leadership_moved(STEADY, split)
    assert moved is not None and "did not agree on a leader at the end" in moved
    restarted = _sample(n1=(1, 3, 1, 1), n2=(1, 3, 1, 1), n3=(1, 3, 0, 0))  # counts began again
    assert leadership_moved(STEADY, restarted) is None
    gone = _sample(n1=(1, 3, 1, 1), n2=(1, 3, 1, 1))
    assert leadership_moved(STEADY, gone) is None


def test_the_logs_give_one_leadership_per_election_across_nodes_and_restarts(
        tmp_path: Path) -> None:
    line = ("2026-12-06 15:00:00,000 INFO chunkraft.controller.raft.node: the leader is node "
            "{} at Raft term {} (leadership change 1 since this node started, term +1)\n")
    (tmp_path / "a.log").write_text(line.format(2, 1) + "other\n" + line.format(3, 4))
    (tmp_path / "b.log").write_text(line.format(2, 1) + line.format(3, 4))
    assert leaderships_in_logs([tmp_path / "a.log", tmp_path / "b.log", tmp_path / "none"]) == {
        ("2", 1), ("3", 4)}


def test_a_node_that_restarted_in_between_is_left_out_by_its_incarnation() -> None:
    def node(increments: int, incarnation: str) -> NodeLeadership:
        return NodeLeadership(1, 3, 1, increments, incarnation)

    first = LeadershipSample({1: node(0, "a"), 2: node(0, "b")})
    # Node 2 restarted from an empty Raft directory: new incarnation, its own counts.
    later = LeadershipSample({1: node(0, "a"), 2: node(2, "c")})
    assert leadership_moved(first, later) is None
    moved = LeadershipSample({1: node(2, "a"), 2: node(0, "b")})
    assert leadership_moved(first, moved) == "0 leadership change(s) and a term 2 higher"
