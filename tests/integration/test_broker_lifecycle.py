"""Broker agents as real processes with a real quorum: registration, unfencing, following the
controller leader through a kill -9, controlled shutdown on SIGTERM, fencing after kill -9.

One cluster (3 controllers, 3 brokers) for the module; each test leaves every process running.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from chunkraft.client.controller_rpc import ControllerRpcClient
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import (
    API,
    broker_cluster,
    broker_stats,
    controller_view,
    run_everything,
    wait_same_image,
    wait_until,
)

CONTROLLER_PROPERTIES = {
    # Short sessions: a killed broker is fenced, and may register again, within seconds.
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
BROKER_PROPERTIES = {"broker.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("brokers"), properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        yield running


@pytest.fixture
def brokers(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The cluster with every controller and broker running, ready and unfenced."""
    yield run_everything(cluster)


def registrations(cluster: LocalCluster) -> dict[int, dict[str, Any]]:
    return {b["node_id"]: b for b in controller_view(cluster)["brokers"]}


def create_topic(client: ControllerRpcClient, name: str, partitions: int = 3) -> int:
    answer = client.call(f"{API}/create-topics", {"topics": [
        {"name": name, "num_partitions": partitions, "replication_factor": 3}]})
    assert answer["topics"][0]["error_code"] == 0, answer
    return client.last_offset


def test_brokers_register_with_their_http_listener_and_are_unfenced(
        brokers: LocalCluster) -> None:
    seen = registrations(brokers)
    for broker_id, broker in brokers.broker_nodes.items():
        registration = seen[broker_id]
        assert not registration["fenced"], registration
        assert (registration["host"], registration["port"]) == ("127.0.0.1", broker.http_port)
        status = brokers.broker_status(broker_id)
        assert status is not None and status["broker_epoch"] >= 0 and not status["fenced"]
        assert status["cluster_id"] == brokers.cluster_id


@pytest.mark.leader_changes("kills the controller leader")
def test_brokers_follow_the_new_leader_after_kill_9_of_the_controller_leader(
        brokers: LocalCluster) -> None:
    leader = brokers.leader_id()
    assert leader is not None
    before = {b: broker_stats(brokers, b) for b in brokers.broker_nodes}
    brokers.kill(leader)
    survivors = [n.url for n in brokers.nodes.values() if n.node_id != leader]
    with ControllerRpcClient(survivors, token=brokers.admin_token, retry_for=30) as client:
        offset = create_topic(client, f"after-kill-{leader}-{time.monotonic_ns()}")
    # Every broker applies the write from the stream of a surviving controller ...
    wait_until(lambda: all((s := broker_stats(brokers, b)) is not None
                           and s["applied_offset"] >= offset for b in brokers.broker_nodes),
               f"every broker applied offset {offset}", timeout=30)
    # ... and keeps heartbeating to the new leader, which keeps it unfenced.
    def heartbeats_went_on() -> bool:
        for broker_id, old in before.items():
            now = broker_stats(brokers, broker_id)
            if now is None or old is None or now["heartbeats"] < old["heartbeats"] + 4:
                return False
        return True

    wait_until(heartbeats_went_on, "four more heartbeats from each broker", timeout=30)
    seen = registrations(brokers)
    assert all(not seen[b]["fenced"] for b in brokers.broker_nodes), seen
    for broker_id in brokers.broker_nodes:
        stats = broker_stats(brokers, broker_id)
        assert stats is not None and stats["leader_id"] != leader
        assert stats["controller_url"] != brokers.nodes[leader].url
        assert stats["latency"]["count"] > 0 and stats["latency"]["p99_ms"] is not None
    brokers.start(leader)
    brokers.wait_ready(timeout=60)


def leaders_of(cluster: LocalCluster, broker_id: int) -> list[tuple[str, int]]:
    view = controller_view(cluster)
    return [(t["name"], p["partition_index"]) for t in view["topics"]
            for p in t["partitions"] if p["leader_id"] == broker_id]


def test_sigterm_is_a_controlled_shutdown_that_moves_leadership_away(
        brokers: LocalCluster) -> None:
    with ControllerRpcClient(brokers.urls, token=brokers.admin_token) as client:
        create_topic(client, f"shutdown-{time.monotonic_ns()}", partitions=6)
    wait_until(lambda: bool(leaders_of(brokers, 2)), "broker 2 leads a partition")
    started = time.monotonic()
    status = brokers.stop_broker(2, timeout=30)
    took = time.monotonic() - started
    assert status == 0, f"exit status {status}"
    assert took < 20, f"the controlled shutdown took {took:.1f} s"
    seen = registrations(brokers)
    assert seen[2]["fenced"], seen[2]
    assert leaders_of(brokers, 2) == []
    # It comes back as a new incarnation and is unfenced again.
    brokers.start_broker(2)
    brokers.wait_brokers_ready([2], timeout=60)


def test_a_killed_broker_is_fenced_and_recovers_when_restarted(brokers: LocalCluster) -> None:
    before = brokers.broker_status(1)
    assert before is not None
    brokers.kill_broker(1)
    wait_until(lambda: registrations(brokers)[1]["fenced"], "broker 1 fenced after kill -9",
               timeout=30, interval=0.2)
    brokers.start_broker(1)
    brokers.wait_brokers_ready([1], timeout=60)
    status = brokers.broker_status(1)
    assert status is not None and not status["fenced"]
    assert status["broker_epoch"] > before["broker_epoch"]
    # Its image is the controllers' again, at the same offset.
    wait_same_image(brokers, timeout=60)
