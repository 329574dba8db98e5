"""A rolling restart under light client load, on real processes on 127.0.0.1: one
idempotent acks=all producer, one consumer of a group and an admin loop run while every broker,
then every controller, is restarted one at a time (chunkraft.local.rolling_restart). Nothing
acknowledged may be lost or duplicated, no acknowledged produce nor admin op may fail, and the
roll must complete. ``bench/bench_rolling_restart.py`` is the measured, heavier version.

Only processes LocalCluster started are signalled, by PID; every wait is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.roll_target import LocalClusterTarget
from chunkraft.local.rolling_restart import RollStep, rolling_restart
from tests.integration.conftest import log_tail
from tests.support.roll_load import RollLoad, drain

TOPICS = ["rolled-a", "rolled-b"]


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster", broker_count=3)
    try:
        with cluster:
            cluster.wait_ready(timeout=60)
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=60)
            yield cluster
    finally:
        for broker in cluster.broker_nodes.values():  # what a failed stop left
            if broker.process is not None and broker.process.poll() is None:
                broker.process.kill()
                broker.process.wait(timeout=10)
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed:
            for node in [*cluster.nodes.values(), *cluster.broker_nodes.values()]:
                print(f"---- {node.log_path}:\n{log_tail(node.log_path)}")


@pytest.mark.leader_changes("restarts every controller")
def test_nothing_acknowledged_is_lost_duplicated_or_failed_through_a_rolling_restart(
        cluster: LocalCluster) -> None:
    with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as admin:
        for topic in TOPICS:
            admin.create_topic(topic, 3, 3)
    load = RollLoad(cluster, TOPICS, producers=1, rate=40.0, consumers=1,
                    group="roll-test", admin_pause=0.5)
    load.start()
    steps: list[RollStep] = []
    try:
        time.sleep(2.0)  # the clients find their partitions before the first stop
        with LocalClusterTarget(cluster) as target:
            rolling_restart(target, timeout=90.0, progress=steps.append)
        time.sleep(1.0)
    finally:
        result = load.stop()
    counted = drain(cluster, TOPICS, result.acked, timeout=60.0)

    assert [s.node.split(" (")[0] for s in steps][:3] == ["broker 0", "broker 1", "broker 2"]
    assert sorted(s.node.split(" (")[0] for s in steps[3:]) == [
        "controller 1", "controller 2", "controller 3"]
    # every node stopped cleanly (exit status 0, not SIGKILL nor death by the SIGTERM), and
    # every controller closed its Raft node on the way out
    assert [s.notes for s in steps if any(n.startswith("the stop:") for n in s.notes)] == []
    for node in cluster.nodes.values():
        log = node.log_path.read_text(errors="replace")
        assert f"controller {node.node_id} stopped" in log, node.log_path
    assert len(result.acked) > 500, "too little load to say anything"
    assert result.failed == [], result.failed[:10]
    assert counted.lost == [], counted.as_json()
    assert counted.duplicated == {}, counted.as_json()
    assert result.admin_ops > 20 and result.admin_failed == [], result.admin_failed[:10]
    assert result.group_consumed > 0, result.group_errors[:10]
