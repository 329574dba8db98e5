"""Dead nodes of a LocalCluster (chunkraft.local.node_watch): reaped at the first look, so no
zombie stays, and described with PID, exit status or signal, and log file. The children here are
``sh`` / ``sleep`` processes standing in for nodes; only their own PIDs are signalled."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.node_watch import NodeExit, exit_status_text, reap_exited

LOOK_TIMEOUT = 10.0


@pytest.mark.parametrize(("returncode", "text"), [
    (0, "exited with status 0"),
    (3, "exited with status 3"),
    (-9, "killed by signal 9 (SIGKILL)"),
    (-15, "killed by signal 15 (SIGTERM)"),
    (-(signal.SIGRTMIN + 2), f"killed by signal {signal.SIGRTMIN + 2}"),
])
def test_exit_status_text(returncode: int, text: str) -> None:
    assert exit_status_text(returncode) == text


def test_describe_names_the_node_its_pid_how_it_ended_and_its_log() -> None:
    dead = NodeExit("broker", 1, 4242, -9, Path("/d/broker-1/broker.log"))
    assert dead.name == "broker 1"
    assert dead.describe() == ("broker 1 (pid 4242) died: killed by signal 9 (SIGKILL); its "
                               "log: /d/broker-1/broker.log")


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _reap_until(cluster: LocalCluster, count: int) -> list[NodeExit]:
    exits: list[NodeExit] = []
    deadline = time.monotonic() + LOOK_TIMEOUT
    while len(exits) < count and time.monotonic() < deadline:
        exits += reap_exited(cluster)
        time.sleep(0.02)
    return exits


def test_reap_exited_reports_each_dead_node_once_and_leaves_no_zombie(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, size=2, broker_count=2)
    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    quitter = subprocess.Popen(["sh", "-c", "exit 3"])
    try:
        cluster.nodes[1].process, cluster.nodes[2].process = sleepers[0], quitter
        cluster.broker_nodes[0].process, cluster.broker_nodes[1].process = sleepers[1:]
        os.kill(sleepers[1].pid, signal.SIGKILL)  # broker 0, as an operator's kill -9
        exits = _reap_until(cluster, 2)
        assert sorted((e.kind, e.node_id, e.pid, e.returncode) for e in exits) == [
            ("broker", 0, sleepers[1].pid, -9), ("controller", 2, quitter.pid, 3)]
        assert {e.log_path for e in exits} == {cluster.broker_nodes[0].log_path,
                                                cluster.nodes[2].log_path}
        assert not _is_zombie(sleepers[1].pid) and not _is_zombie(quitter.pid)
        assert cluster.broker_nodes[0].process is None and cluster.nodes[2].process is None
        # the living are left alone, and the dead are not reported twice
        assert reap_exited(cluster) == []
        assert cluster.nodes[1].running and cluster.broker_nodes[1].running
    finally:
        for process in sleepers:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
