"""Helpers for tests and benches with real broker agents of a LocalCluster.

Every wait is bounded in time and in polls; processes are only ever signalled through
LocalCluster, by the PIDs it started.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from chunkraft.client.controller_rpc import ControllerRpcClient
from chunkraft.local.local_cluster import LocalCluster

__all__ = [
    "API",
    "broker_cluster",
    "broker_stats",
    "controller_view",
    "kill_everything",
    "stop_everything",
    "wait_brokers_at",
    "wait_same_image",
    "wait_until",
]

API = "/controller/v1"
MAX_POLLS = 10_000


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0,
               interval: float = 0.05) -> None:
    """Polls ``condition`` until it holds; AssertionError naming ``what`` after ``timeout``."""
    ends = time.monotonic() + timeout
    for _ in range(MAX_POLLS):
        if condition():
            return
        if time.monotonic() >= ends:
            break
        time.sleep(interval)
    raise AssertionError(f"not within {timeout} s: {what}")


def kafka_address(cluster: LocalCluster, broker_id: int) -> str:
    """Broker ``broker_id``'s Kafka listener (what Metadata advertises for it)."""
    port = cluster.broker_nodes[broker_id].kafka_port
    assert port, f"broker {broker_id} has no Kafka listener"
    return f"127.0.0.1:{port}"


def broker_stats(cluster: LocalCluster, broker_id: int, *, timeout: float = 10.0,
                 attempts: int = 3) -> dict[str, Any] | None:
    """The broker's ``/broker/v1/metadata-stats``, None if it does not answer in ``attempts``
    tries (a broker busy with many partitions on a loaded machine may answer slowly)."""
    for _ in range(attempts):
        try:
            answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/metadata-stats",
                               headers=cluster.headers, timeout=timeout, verify=cluster.verify)
            if answer.status_code == 200:
                return dict(answer.json())
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    return None


def controller_view(cluster: LocalCluster, node_ids: list[int] | None = None
                    ) -> dict[str, Any]:
    """The metadata (brokers and topics) as a running controller answers it."""
    urls = [cluster.nodes[n].url for n in (node_ids or list(cluster.nodes))
            if cluster.nodes[n].running]
    with ControllerRpcClient(urls, token=cluster.admin_token, retry_for=20) as client:
        return client.call(f"{API}/metadata", {"topics": None, "include_chunks": True})


def wait_brokers_at(cluster: LocalCluster, broker_ids: list[int], offset: int,
                    timeout: float = 30.0) -> dict[int, dict[str, Any]]:
    """Waits until every broker's image is at exactly ``offset``; their statuses (with the
    image hash)."""
    statuses: dict[int, dict[str, Any] | None] = {}

    def there() -> bool:
        statuses.update({b: cluster.broker_status(b, with_hash=True) for b in broker_ids})
        return all(s is not None and s["metadata_offset"] == offset
                   for s in statuses.values())

    try:
        wait_until(there, f"brokers {broker_ids} at offset {offset}", timeout, 0.1)
    except AssertionError as error:
        raise AssertionError(f"{error}: {statuses}") from None
    return {b: s for b, s in statuses.items() if s is not None}


def wait_same_image(cluster: LocalCluster, broker_ids: list[int] | None = None,
                    timeout: float = 30.0, min_offset: int = -1) -> dict[int, tuple[int, str]]:
    """Samples every running controller's and each broker's (offset, image hash) until each
    broker has been seen at an offset >= ``min_offset`` that a controller was also seen at,
    with the same hash; returns broker -> that (offset, hash).

    Brokers keep writing metadata (ISR changes, chunk replica states), so the images may never
    stand still at one offset everywhere at once: offsets are matched across samples instead.
    AssertionError if a broker and a controller ever disagree at the same offset."""
    targets = list(cluster.broker_nodes) if broker_ids is None else broker_ids
    controllers: dict[int, str] = {}
    brokers: dict[int, dict[int, str]] = {b: {} for b in targets}
    matched: dict[int, tuple[int, str]] = {}

    def sample() -> bool:
        for node in cluster.nodes.values():
            if node.running:
                status = cluster.status(node.node_id)
                if status is not None:
                    controllers[int(status["metadata_offset"])] = str(status["image_hash"])
        for broker_id in targets:
            status = cluster.broker_status(broker_id, with_hash=True, timeout=10.0)
            if status is not None:
                brokers[broker_id][int(status["metadata_offset"])] = str(status["image_hash"])
        for broker_id, seen in brokers.items():
            for offset, image_hash in seen.items():
                other = controllers.get(offset)
                if other is None:
                    continue
                assert other == image_hash, (
                    f"broker {broker_id} at offset {offset} has image {image_hash}, a "
                    f"controller {other}")
                if offset >= min_offset:
                    matched[broker_id] = (offset, image_hash)
        return len(matched) == len(targets)

    wait_until(sample, f"brokers {targets} seen with a controller's image at the same offset "
               f"(>= {min_offset}); matched so far: {matched}", timeout, 0.02)
    return matched


def run_everything(cluster: LocalCluster, timeout: float = 60.0) -> LocalCluster:
    """Starts whatever of ``cluster`` an earlier test left stopped and waits until every
    controller is ready and every broker registered and unfenced; returns ``cluster``."""
    cluster.start()
    cluster.wait_ready(timeout=timeout)
    for broker_id in cluster.broker_nodes:
        cluster.start_broker(broker_id)
    cluster.wait_brokers_ready(timeout=timeout)
    return cluster


def stop_everything(cluster: LocalCluster) -> None:
    """Stops the brokers (controlled shutdown while the quorum is up), then the controllers;
    SIGKILL for whatever did not stop. Only LocalCluster's own PIDs."""
    try:
        cluster.stop_brokers(timeout=20.0)
    finally:
        for broker in cluster.broker_nodes.values():
            if broker.process is not None and broker.process.poll() is None:
                broker.process.kill()
                broker.process.wait(timeout=10)
        try:
            cluster.stop(timeout=10.0)
        finally:
            for node in cluster.nodes.values():
                if node.process is not None and node.process.poll() is None:
                    node.process.kill()
                    node.process.wait(timeout=10)


def kill_everything(cluster: LocalCluster) -> None:
    """The end of a test module's cluster: SIGKILL every broker, then every controller, that
    LocalCluster started (by their PIDs).

    A graceful stop costs about 5 s a module for nothing any test looks at: a broker's
    controlled shutdown ends in uvicorn's graceful stop, which waits for the other brokers'
    long-polling fetches, and a controller's waits for the brokers' metadata long polls still
    in flight (their handlers run out their wait after the broker is gone). The tests that
    check a controlled shutdown or a restart signal the process themselves, within the test;
    the data directories are thrown away with the module."""
    try:
        for broker_id in cluster.broker_nodes:
            cluster.kill_broker(broker_id)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


@contextlib.contextmanager
def broker_cluster(base: Path, *, properties: dict[str, str] | None = None,
                   broker_properties: dict[str, str] | None = None,
                   brokers: int = 3) -> Iterator[LocalCluster]:
    """3 controllers and ``brokers`` brokers, all running, ready and unfenced; at the end the
    brokers and the controllers are killed (:func:`kill_everything`)."""
    cluster = LocalCluster(base, extra_properties=dict(properties or {}),
                           broker_count=brokers, broker_properties=dict(broker_properties or {}))
    try:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=60)
        cluster.start_brokers()
        cluster.wait_brokers_ready(timeout=60)
        yield cluster
    finally:
        kill_everything(cluster)
