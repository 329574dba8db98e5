"""Each controller runs its Raft node in a process of its own (``raft.process=separate``).

Real processes: a 3-controller quorum. Checked: every controller has exactly one Raft process,
its child, whose tick gaps the controller's ``/metrics`` exports; under 8 writers creating
topics, kill -9 of the leader's Raft process stops its controller (one log line naming the
status), kill -9 of the leader's API process stops its Raft process within seconds, and kill -9
of both; each time, after the restart, no acknowledged write is lost, none is duplicated, and
every node runs the same image (offset and hash).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from chunkraft.local.local_cluster import LocalCluster
from tests.integration.conftest import READY_TIMEOUT
from tests.support.cluster_client import admin_client, wait_converged
from tests.support.power_load import WriteLoad, check_after_restart

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

RAFT_MODULE = "chunkraft.controller.raft.raft_process"


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def raft_process_of(cluster: LocalCluster, node_id: int) -> int:
    """The pid of controller ``node_id``'s Raft process (its only such child)."""
    process = cluster.nodes[node_id].process
    assert process is not None and process.poll() is None, f"controller {node_id} not running"
    found = [child for child in children(process.pid) if RAFT_MODULE in command_line(child)]
    assert len(found) == 1, (node_id, [command_line(c) for c in children(process.pid)])
    return found[0]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if not alive(pid):
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"{what} (pid {pid}) still runs after {timeout} s")


def test_every_controller_runs_one_raft_process_of_its_own(quorum: LocalCluster) -> None:
    pids = {node_id: raft_process_of(quorum, node_id) for node_id in quorum.nodes}
    assert len(set(pids.values())) == 3
    for node_id in quorum.nodes:
        status = quorum.status(node_id)
        assert status is not None and status["leader_id"] is not None, status
        assert status["tick_lag_seconds"] is not None
    for node_id, node in quorum.nodes.items():
        # The tick gaps are counted in the Raft process and exported by the API process.
        answer = httpx.get(f"{node.url}/metrics", headers=quorum.headers, verify=quorum.verify,
                           timeout=10)
        assert answer.status_code == 200, answer.text
        (gaps,) = [family for family in text_string_to_metric_families(answer.text)
                   if family.name == "chunkraft_raft_tick_gap_seconds"]
        found = {(sample.name, sample.labels.get("le")): sample.value for sample in gaps.samples}
        count = found[("chunkraft_raft_tick_gap_seconds_count", None)]
        assert count > 0 and found[("chunkraft_raft_tick_gap_seconds_bucket", "+Inf")] == count
        # Running, every node ticks at least every 50 ms or so: most gaps are under 0.1 s.
        assert found[("chunkraft_raft_tick_gap_seconds_bucket", "0.1")] > count / 2, (
            node_id, found)


@pytest.mark.leader_changes("kills the leader's processes")
@pytest.mark.parametrize("victim", ["raft", "api", "both"])
def test_kill_9_under_8_writers_loses_and_duplicates_nothing(quorum: LocalCluster,
                                                             victim: str) -> None:
    cluster = quorum
    leader = cluster.wait_ready(timeout=READY_TIMEOUT)
    with admin_client(cluster, deadline=READY_TIMEOUT) as client:
        client.ensure_unfenced([1], cluster.cluster_id)
    node = cluster.nodes[leader]
    assert node.process is not None
    api_pid, raft_pid = node.process.pid, raft_process_of(cluster, leader)
    prefix = f"rp-{victim}"
    load = WriteLoad(cluster, prefix, writers=8, deadline=3.0)
    load.start()
    time.sleep(1.5)
    log_start = node.log_path.stat().st_size
    if victim in ("raft", "both"):
        os.kill(raft_pid, signal.SIGKILL)
    if victim in ("api", "both"):
        os.kill(api_pid, signal.SIGKILL)
    if victim == "raft":
        # The controller stops with its Raft node, and says why.
        node.process.wait(timeout=10)
        line = node.log_path.read_text(errors="replace")[log_start:]
        assert "the Raft process exited with status -9" in line, line[-2000:]
        assert "this controller stops with it" in line
    else:
        node.process.wait(timeout=10)
        wait_gone(raft_pid, 10, "the Raft process of a killed API process")
    node.process = None
    time.sleep(1.5)  # the others elect and keep taking writes
    result = load.stop()
    assert not result.refused, result.refused
    assert len(result.acknowledged) >= 20, "too few writes to say anything"
    cluster.start(leader)
    cluster.wait_ready(timeout=READY_TIMEOUT)
    after = check_after_restart(cluster, prefix, result, timeout=READY_TIMEOUT)
    assert after.ok, after
    converged = wait_converged(cluster, list(cluster.nodes), timeout=READY_TIMEOUT)
    assert converged.offset == after.offset
