"""``chunkraft demo``: its flags, its cluster directory, and how it reports who served a poll.

The demo itself runs against real processes in tests/e2e (test_kip_test_plans.py covers the
same test plan with assertions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest

from chunkraft.cli.demo import open_cluster
from chunkraft.cli.main import build_parser
from chunkraft.local.client_demo import ServedRange, served_ranges


class Record(NamedTuple):
    offset: int
    broker_id: int


def test_served_ranges_group_a_poll_by_broker() -> None:
    records = [Record(0, 0), Record(1, 0), Record(2, 1), Record(3, 1), Record(4, 0)]
    assert served_ranges(records) == [ServedRange(0, 0, 1, 2), ServedRange(1, 2, 3, 2),
                                      ServedRange(0, 4, 4, 1)]
    assert served_ranges([]) == []


def test_flags() -> None:
    args = build_parser().parse_args(["demo", "--exit", "--dir", "/tmp/x"])
    assert args.exit and args.dir == Path("/tmp/x")
    default = build_parser().parse_args(["demo"])
    assert default.dir == Path(".chunkraft/local-cluster") and not default.exit


def test_open_cluster_prepares_three_controllers_and_brokers(tmp_path: Path) -> None:
    cluster = open_cluster(tmp_path / "c")
    assert sorted(cluster.nodes) == [1, 2, 3] and sorted(cluster.broker_nodes) == [0, 1, 2]
    assert cluster.command_config_path.exists()
    assert all(b.config_path.exists() for b in cluster.broker_nodes.values())
    again = open_cluster(tmp_path / "c")  # the same cluster: id and ports kept
    assert again.cluster_id == cluster.cluster_id
    assert again.broker_url(2) == cluster.broker_url(2)


def test_a_directory_with_other_brokers_is_refused(tmp_path: Path) -> None:
    cluster = open_cluster(tmp_path / "c")
    state_path = tmp_path / "c" / "cluster.json"
    state = json.loads(state_path.read_text())
    state["brokers"] = {"0": int(cluster.broker_url(0).rsplit(":", 1)[1])}
    state_path.write_text(json.dumps(state))
    with pytest.raises(RuntimeError, match=r"needs exactly 0\.\.2"):
        open_cluster(tmp_path / "c")
