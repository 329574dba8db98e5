"""Raw pysyncobj's view of its leadership, read from its front's ``GET /status``."""

from __future__ import annotations

from _pysyncobj_front import node_leadership
from chunkraft.local.steady_leader import NodeLeadership

RAFT = ["127.0.0.1:4001", "127.0.0.1:4002", "127.0.0.1:4003"]
STATUS = {"leader": "127.0.0.1:4002", "self": "127.0.0.1:4001", "has_quorum": True,
          "count": 10, "raft_term": 1, "leadership_changes": 1, "term_increments": 0,
          "incarnation": "9f2c"}


def test_the_leader_is_its_index_among_the_raft_addresses() -> None:
    assert node_leadership(STATUS, RAFT) == NodeLeadership(1, 1, 1, 0, "9f2c")


def test_an_unknown_or_absent_leader_is_none() -> None:
    for leader in (None, "127.0.0.1:9999"):
        seen = node_leadership({**STATUS, "leader": leader}, RAFT)
        assert seen is not None and seen.leader_id is None


def test_an_answer_without_the_counts_is_left_out() -> None:
    assert node_leadership({**STATUS, "raft_term": None}, RAFT) is None
    assert node_leadership({"leader": "127.0.0.1:4002"}, RAFT) is None
    assert node_leadership(["not", "a", "dict"], RAFT) is None
