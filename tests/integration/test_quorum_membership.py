"""Replacing a controller while the quorum serves (KIP-853): real controller and
broker processes on 127.0.0.1, the CLI as a subprocess.

A controller is killed (its host is gone); the operator removes it, starts a new controller on a
new address (formatted with ``--no-initial-controllers``) and adds it. Meanwhile a client makes
admin operations without pause: none may fail. The new controller catches up through the
leader's dump (compaction is set low, so the log it needs is gone), votes (a second original
controller killed afterwards leaves the majority working) and keeps its membership across a
restart. Every wait is bounded; only processes this test started are signalled.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkraft.client.admin import AdminClient, AdminError
from chunkraft.client.command_config import CommandConfig
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import wait_until
from tests.support.cluster_client import wait_converged

COMPACTION = {"raft.log.compaction.min.entries": "20"}


def _running(tmp_path: Path, brokers: bool) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster", size=3, extra_properties=dict(COMPACTION))
    cluster.prepare()
    cluster.start()
    try:
        cluster.wait_ready(timeout=60)
        if brokers:
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=60)
        yield cluster
    finally:
        cluster.stop_brokers(timeout=20)
        cluster.stop()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """3 controllers and 3 brokers (topics need brokers to place replicas on)."""
    yield from _running(tmp_path, brokers=True)


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[LocalCluster]:
    """3 controllers only."""
    yield from _running(tmp_path, brokers=False)


def quorum_cli(cluster: LocalCluster, *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkraft", "quorum", *words, "--bootstrap-server",
         ",".join(cluster.urls), "--command-config", str(cluster.command_config_path)],
        capture_output=True, text=True, timeout=120, check=False)


def voters_of(cluster: LocalCluster) -> dict[int, dict[str, Any]]:
    """The voters as the leader reports them, by id."""
    leader = cluster.leader_id()
    assert leader is not None
    status = cluster.status(leader)
    assert status is not None
    return {int(v["node_id"]): v for v in status["voters"]}  # type: ignore[union-attr]


class AdminLoad:
    """One client making admin operations (create a topic, describe it) back to back in a
    thread until stopped; every failure is kept."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.done = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        config = CommandConfig(token=self.cluster.admin_token)
        with AdminClient(self.cluster.urls, config, timeout=10, retry_for=30) as admin:
            index = 0
            while not self._stop.is_set() and index < 2000:
                name = f"load-{index}"
                try:
                    admin.create_topic(name, 1, 3)
                    assert admin.get_topic(name)["topic_name"] == name
                    self.done += 1
                except (AdminError, AssertionError) as error:
                    self.failures.append(f"{name}: {error}")
                index += 1

    def __enter__(self) -> AdminLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive()


def test_a_dead_controller_is_replaced_under_load_with_no_failed_admin_operation(
        cluster: LocalCluster) -> None:
    leader = cluster.wait_ready(timeout=30)
    dead = next(node for node in cluster.nodes if node != leader)
    with AdminLoad(cluster) as load:
        wait_until(lambda: load.done >= 5, "admin operations before the fault", 30)
        cluster.kill(dead)
        # adding first would make the quorum wait for an empty voter: refused, changes nothing
        premature = quorum_cli(cluster, "add-controller", "--controller-id", "9",
                               "--raft-address", "127.0.0.1:1", "--http-url",
                               "http://127.0.0.1:2")
        assert premature.returncode == 1
        assert "INVALID_REQUEST" in premature.stderr and "remove a dead voter" in premature.stderr
        removed = quorum_cli(cluster, "remove-controller", "--controller-id", str(dead))
        assert removed.returncode == 0, removed.stderr
        assert f"Removed controller {dead}" in removed.stdout
        assert set(voters_of(cluster)) == set(cluster.nodes) - {dead}
        cluster.forget_controller(dead)
        before = load.done
        wait_until(lambda: load.done >= before + 20, "admin operations to compact the log", 60)

        new = cluster.add_controller()
        assert (new.data_dir / "raft" / "joining").exists()
        cluster.start(new.node_id)
        epoch = cluster.status(cluster.leader_id() or 0)["epoch"]  # type: ignore[index]
        added = quorum_cli(cluster, "add-controller", "--controller-config",
                           str(new.config_path))
        assert added.returncode == 0, added.stderr
        assert f"Added controller {new.node_id}" in added.stdout
        wait_until(lambda: voters_of(cluster).get(new.node_id, {}).get("lag") == 0,
                   "the new controller to catch up", 60)
        # it was not a voter before: it raised no term that could unseat the leader
        assert cluster.status(cluster.leader_id() or 0)["epoch"] == epoch  # type: ignore[index]
        assert not (new.data_dir / "raft" / "joining").exists()
        # the log it needed was compacted away: it caught up from the leader's dump
        assert "Raft dump loaded" in new.log_path.read_text(errors="replace")

        # it votes: with a second original controller gone, the majority still commits
        leader = cluster.wait_ready(timeout=30)
        second = next(node for node in cluster.nodes if node not in (leader, new.node_id))
        cluster.kill(second)
        before = load.done
        wait_until(lambda: load.done >= before + 5, "admin operations with 2 of 3 voters", 60)
        cluster.start(second)
    assert load.failures == [], load.failures
    assert load.done >= 30
    # every voter converges on the same image, the new one included
    cluster.wait_ready(timeout=60)
    wait_converged(cluster, list(cluster.nodes), timeout=60)

    # the membership survives a restart of the new controller (journal and dump)
    cluster.stop(new.node_id)
    cluster.start(new.node_id)
    cluster.wait_ready(timeout=60)
    assert set(voters_of(cluster)) == set(cluster.nodes)
    own_view = cluster.status(new.node_id)
    assert own_view is not None
    assert {v["node_id"] for v in own_view["voters"]} == set(cluster.nodes)  # type: ignore[attr-defined]
    wait_converged(cluster, list(cluster.nodes), timeout=60)


@pytest.mark.leader_changes("removes the leader")
def test_removing_the_leader_hands_leadership_over_first(quorum: LocalCluster) -> None:
    cluster = quorum
    leader = cluster.wait_ready(timeout=30)
    removed = quorum_cli(cluster, "remove-controller", "--controller-id", str(leader))
    assert removed.returncode == 0, removed.stderr
    remaining = set(cluster.nodes) - {leader}
    wait_until(lambda: cluster.leader_id() in remaining, "a new leader among the others", 30)
    assert set(voters_of(cluster)) == remaining


def test_a_removed_controller_that_still_runs_sends_its_readers_elsewhere(
        quorum: LocalCluster) -> None:
    """A follower removed while its process runs hears nothing more: it must not answer reads
    from its frozen image (a client that listed it first read nothing new for minutes), but
    send readers and brokers on to the voters."""
    cluster = quorum
    leader = cluster.wait_ready(timeout=30)
    gone = min(node for node in cluster.nodes if node != leader)
    removed = quorum_cli(cluster, "remove-controller", "--controller-id", str(gone))
    assert removed.returncode == 0, removed.stderr
    url = cluster.nodes[gone].url
    voters = ", ".join(str(node) for node in sorted(set(cluster.nodes) - {gone}))

    def refuses_reads() -> bool:
        answer = httpx.get(f"{url}/v3/clusters", headers=cluster.headers, timeout=5)
        return answer.status_code == 503 and answer.json()["error_name"] == "NOT_CONTROLLER"

    wait_until(refuses_reads, f"controller {gone} refusing reads once removed", 30)
    answer = httpx.get(f"{url}/v3/clusters", headers=cluster.headers, timeout=5).json()
    assert answer["message"].startswith(f"controller {gone} is not a voter of the quorum")
    assert f"names the voters {voters}" in answer["message"]
    stream = httpx.get(f"{url}/controller/v1/metadata-log", headers=cluster.headers,
                       timeout=5)
    assert stream.status_code == 503 and stream.json()["error_name"] == "NOT_CONTROLLER"
    ready = httpx.get(f"{url}/readyz", timeout=5)
    assert ready.status_code == 503 and "is not a voter" in ready.json()["reason"]
    # A change made after the removal, read by a client that asks the removed node first.
    others = [cluster.nodes[node].url for node in sorted(cluster.nodes) if node != gone]
    acl = {"resource_type": "TOPIC", "resource_name": "after-the-removal",
           "pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
           "operation": "READ", "permission": "ALLOW"}
    config = CommandConfig(token=cluster.admin_token)
    with AdminClient([url, *others], config) as writer:
        writer.create_acl(acl)
    with AdminClient([url, *others], config) as reader:
        listed = reader.list_acls({"resource_type": "TOPIC",
                                   "resource_name": "after-the-removal"})
    assert [entry["principal"] for entry in listed] == ["User:alice"]


def test_refusals_name_the_voter_and_change_nothing(quorum: LocalCluster) -> None:
    cluster = quorum
    leader = cluster.wait_ready(timeout=30)
    unknown = quorum_cli(cluster, "remove-controller", "--controller-id", "42")
    assert unknown.returncode == 1
    assert "VOTER_NOT_FOUND" in unknown.stderr and "controller 42 is not a voter" in unknown.stderr
    follower = next(node for node in cluster.nodes if node != leader)
    duplicate = quorum_cli(cluster, "add-controller", "--controller-id", str(follower),
                           "--raft-address", "127.0.0.1:1", "--http-url", "http://127.0.0.1:2")
    assert duplicate.returncode == 1
    assert "DUPLICATE_VOTER" in duplicate.stderr
    bad = quorum_cli(cluster, "add-controller", "--controller-id", "7", "--raft-address",
                     "no-port", "--http-url", "http://127.0.0.1:2")
    assert bad.returncode == 1 and "INVALID_REQUEST" in bad.stderr
    assert set(voters_of(cluster)) == set(cluster.nodes)
    # adding the same voter again is not an error: a retry of an add that went through
    again = quorum_cli(cluster, "add-controller", "--controller-config",
                       str(cluster.nodes[follower].config_path))
    assert again.returncode == 0, again.stderr
    assert set(voters_of(cluster)) == set(cluster.nodes)
