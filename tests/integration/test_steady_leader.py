"""A steady leader, on real processes on 127.0.0.1: a 3-controller and a 5-controller quorum,
each with 3 broker agents, run side by side for 60 s idle, then 60 s under steady admin writes,
then through a rolling restart. Each quorum elects exactly once and keeps that leader and term
until the roll; the roll changes the leader at most once per controller it restarts.

What counts: every controller logs each new leader it sees (``the leader is node N at Raft
term T``; the logs are appended across restarts), and its ``/controller/v1/quorum`` status
counts the changes of leader and the term increments since it started. This is the test that
would have caught pre-vote's flapping (about two leader changes a second on an idle quorum).
``bench/bench_steady_leader.py`` is the long version (10 minutes and more).

Only processes LocalCluster started are signalled, by PID; every wait is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.roll_target import LocalClusterTarget
from chunkraft.local.rolling_restart import rolling_restart
from chunkraft.local.steady_leader import AdminWriter, leaderships_in_logs
from tests.integration.conftest import log_tail
from tests.support.brokers import kill_everything

pytestmark = pytest.mark.leader_changes("the last phase is a rolling restart; the test counts "
                                        "the leader changes itself")

IDLE_SECONDS = 60.0
WRITE_SECONDS = 60.0
WRITES_PER_SECOND = 10.0
SIZES = (3, 5)


@pytest.fixture
def quorums(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[list[LocalCluster]]:
    clusters = [LocalCluster(tmp_path / f"quorum-{size}", size=size, broker_count=3)
                for size in SIZES]
    try:
        for cluster in clusters:
            cluster.prepare()
            cluster.start()
        for cluster in clusters:
            cluster.wait_ready(timeout=90)
            cluster.start_brokers()
        for cluster in clusters:
            cluster.wait_brokers_ready(timeout=90)
        yield clusters
    finally:
        report = getattr(request.node, "report_call", None)
        for cluster in clusters:
            try:
                kill_everything(cluster)
            finally:
                if report is None or report.failed:
                    for node in cluster.nodes.values():
                        print(f"---- {node.log_path}:\n{log_tail(node.log_path)}")


def _leaderships(cluster: LocalCluster) -> set[tuple[str, int]]:
    return leaderships_in_logs(node.log_path for node in cluster.nodes.values())


def _assert_one_election(cluster: LocalCluster, phase: str) -> None:
    seen = _leaderships(cluster)
    assert len(seen) == 1, (f"{cluster.size} controllers, {phase}: {len(seen)} leaderships "
                            f"logged, expected the first election only: {sorted(seen)}")
    sample = cluster.leadership()
    assert len(sample.nodes) == cluster.size, sample.summary()
    assert len(sample.leaders()) == 1 and None not in sample.leaders(), sample.summary()
    for node_id, node in sample.nodes.items():
        assert node.leadership_changes == 1, (
            f"{cluster.size} controllers, {phase}: node {node_id} saw "
            f"{node.leadership_changes} leadership changes ({sample.as_json()})")
    ((_leader, term),) = seen
    assert {node.epoch for node in sample.nodes.values()} == {term}, sample.as_json()


def test_an_idle_then_busy_quorum_elects_once_and_a_roll_changes_the_leader_at_most_once_a_node(
        quorums: list[LocalCluster]) -> None:
    time.sleep(IDLE_SECONDS)
    for cluster in quorums:
        _assert_one_election(cluster, f"after {IDLE_SECONDS:.0f} s idle")

    writers = [AdminWriter(cluster.urls, cluster.admin_token, f"steady{cluster.size}",
                           WRITES_PER_SECOND) for cluster in quorums]
    for writer in writers:
        writer.start()
    time.sleep(WRITE_SECONDS)
    for writer in writers:
        writer.stopping.set()
    for writer in writers:
        writer.join(timeout=30)
        assert not writer.is_alive()
        assert writer.failed == [], writer.failed[:5]
        assert writer.done >= WRITE_SECONDS * WRITES_PER_SECOND * 0.5, writer.done
    for cluster in quorums:
        _assert_one_election(cluster, f"after {WRITE_SECONDS:.0f} s of writes")

    for cluster in quorums:
        before = _leaderships(cluster)
        with LocalClusterTarget(cluster) as target:
            steps = rolling_restart(target, timeout=90.0)
        restarted = [s for s in steps if s.node.startswith("controller")]
        assert len(restarted) == cluster.size
        new = _leaderships(cluster) - before
        assert len(new) <= len(restarted), (
            f"{cluster.size} controllers restarted one at a time: {len(new)} new leaderships "
            f"{sorted(new)}")
