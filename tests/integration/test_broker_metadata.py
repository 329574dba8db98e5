"""Each broker's image equals the controllers' at the same offset: after a storm of metadata
changes, and after a broker fell so far behind that it had to load a snapshot.

The controllers keep a small retained tail (``metadata.max.retained.bytes`` = 5,000), so a
broker paused with SIGSTOP while the storm goes on finds its offset trimmed away when it resumes.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chunkraft.client.controller_rpc import ControllerRpcClient
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import API, broker_cluster, broker_stats, wait_same_image, wait_until

CONTROLLER_PROPERTIES = {
    "metadata.max.retained.bytes": "5000",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
}
BROKER_PROPERTIES = {"broker.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("metadata"), properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        yield running


def ok(answer: dict[str, Any], what: str) -> None:
    codes = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("error_code"):
                codes.append((value["error_code"], value.get("error_message")))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(answer)
    assert not codes, f"{what}: {codes}"


def storm(client: ControllerRpcClient, prefix: str, rounds: int) -> None:
    """Topics created, grown, cut into chunks and deleted: every kind of topic record.

    Replication factor 1: the point is the metadata, and followers' fetchers on a 2-core
    machine running 6 processes would only slow every broker down."""
    for round_ in range(rounds):
        names = [f"{prefix}-{round_}-{i}" for i in range(3)]
        ok(client.call(f"{API}/create-topics", {"topics": [
            {"name": name, "num_partitions": 2, "replication_factor": 1} for name in names]}),
           "create-topics")
        ok(client.call(f"{API}/create-partitions",
                       {"topics": [{"name": names[0], "count": 4}]}), "create-partitions")
        ok(client.call(f"{API}/create-chunks", {"topics": [{"name": names[1], "partitions": [{
            "partition_index": 0, "broker_ids": [round_ % 3], "prev_stop_offset": 9,
            "prev_end_offset": 9, "start_offset": 10,
            "start_timestamp": int(time.time() * 1000)}]}]}), "create-chunks")
        ok(client.call(f"{API}/delete-topics", {"topic_names": [names[2]]}), "delete-topics")


def test_every_broker_has_the_controllers_image_after_a_storm(cluster: LocalCluster) -> None:
    with ControllerRpcClient(cluster.urls, token=cluster.admin_token) as client:
        storm(client, "storm", rounds=10)
        last = client.last_offset
    matched = wait_same_image(cluster, timeout=60, min_offset=last)
    assert sorted(matched) == [0, 1, 2]
    for broker_id in cluster.broker_nodes:
        stats = broker_stats(cluster, broker_id)
        assert stats is not None and stats["applied_offset"] >= last
        assert stats["latency"]["count"] > 0


def test_a_broker_far_behind_loads_the_snapshot(cluster: LocalCluster) -> None:
    paused = cluster.broker_nodes[2]
    assert paused.process is not None
    before = broker_stats(cluster, 2)
    assert before is not None
    os.kill(paused.process.pid, signal.SIGSTOP)  # our own child, by its PID
    try:
        with ControllerRpcClient(cluster.urls, token=cluster.admin_token) as client:
            storm(client, "behind", rounds=10)  # more than the 5,000 retained bytes
            last = client.last_offset
    finally:
        os.kill(paused.process.pid, signal.SIGCONT)
    wait_until(lambda: (s := broker_stats(cluster, 2)) is not None
               and s["snapshots_loaded"] > before["snapshots_loaded"],
               "broker 2 loaded a snapshot", timeout=60)
    wait_same_image(cluster, [2], timeout=60, min_offset=last)
    cluster.wait_brokers_ready(timeout=60)  # fenced while paused, unfenced again
