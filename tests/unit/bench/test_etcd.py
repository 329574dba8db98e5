"""etcd's view of its leadership, read from ``/v3/maintenance/status`` and ``/metrics``."""

from __future__ import annotations

from _etcd import member_leadership
from chunkraft.local.steady_leader import NodeLeadership

STATUS = {"header": {"cluster_id": "14841639068965178418", "member_id": "10276657743932975437",
                     "revision": "1", "raft_term": "2"},
          "version": "3.4.30", "dbSize": "20480", "leader": "10276657743932975437",
          "raftIndex": "8", "raftTerm": "2", "raftAppliedIndex": "8", "dbSizeInUse": "20480"}
METRICS = """# HELP etcd_server_leader_changes_seen_total The number of leader changes seen.
# TYPE etcd_server_leader_changes_seen_total counter
etcd_server_leader_changes_seen_total 1
# HELP etcd_server_has_leader Whether or not a leader exists. 1 is existence, 0 is not.
etcd_server_has_leader 1
"""


def test_the_json_gateway_s_strings_are_read_as_numbers() -> None:
    assert member_leadership(STATUS, METRICS) == NodeLeadership(10276657743932975437, 2, 1, 2)


def test_the_term_stands_for_the_term_increments() -> None:
    later = member_leadership({**STATUS, "raftTerm": "5"}, METRICS.replace(" 1\n", " 3\n", 1))
    first = member_leadership(STATUS, METRICS)
    assert later is not None and first is not None
    assert later.term_increments - first.term_increments == 3
    assert later.leadership_changes == 3


def test_no_leader_is_none() -> None:
    seen = member_leadership({**STATUS, "leader": "0"}, METRICS)
    assert seen is not None and seen.leader_id is None


def test_a_missing_metric_counts_no_change() -> None:
    seen = member_leadership(STATUS, "etcd_server_has_leader 1\n")
    assert seen is not None and seen.leadership_changes == 0 and seen.epoch == 2


def test_a_member_without_a_sound_status_is_left_out() -> None:
    assert member_leadership(None, METRICS) is None
    assert member_leadership({"leader": "1"}, METRICS) is None
    assert member_leadership({**STATUS, "raftTerm": "two"}, METRICS) is None
