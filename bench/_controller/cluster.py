"""Setup calls to a chunkraft quorum: status, retried writes, brokers, topic pools, a big build.

Every call takes the quorum's headers explicitly (``cluster.headers``: its admin token); nothing
here reads the environment, so the token goes only where it is passed. These are the calls
around the measurements, not the measured load (that is ``_http_load``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from _http_load import new_client
from chunkraft.local.local_cluster import LocalCluster

CLUSTER_TIMEOUT = 60.0
Headers = Mapping[str, str]


def controller_pids(cluster: LocalCluster) -> list[int]:
    return [n.process.pid for n in cluster.nodes.values() if n.process is not None]


def quorum(url: str, headers: Headers, hash_: bool = False,
           timeout: float = 5.0) -> dict[str, Any]:
    """The node's ``/controller/v1/quorum`` answer."""
    suffix = "?hash=true" if hash_ else ""
    return dict(httpx.get(f"{url}/controller/v1/quorum{suffix}", timeout=timeout,
                          headers=dict(headers), trust_env=False).json())


def post(url: str, headers: Headers, path: str, body: dict[str, Any], timeout: float = 60.0,
         attempts: int = 30) -> dict[str, Any]:
    """A setup write, retried with the same idempotency key (so applied once) while the
    quorum changes leader: 421 / 503 answers and connection errors."""
    sent = {"Idempotency-Key": os.urandom(16).hex(), **headers}
    problem = ""
    for _attempt in range(attempts):
        try:
            answer = httpx.post(f"{url}/controller/v1/{path}", json=body, timeout=timeout,
                                headers=sent, trust_env=False)
            if answer.status_code == 200:
                return dict(answer.json())
            problem = f"HTTP {answer.status_code} {answer.text[:300]}"
            if answer.status_code not in (421, 503):
                break
        except httpx.HTTPError as error:
            problem = repr(error)
        time.sleep(0.2)
    raise RuntimeError(f"{path}: {problem}")


class Brokers:
    """Three registered brokers, kept unfenced by a heartbeat thread (as real brokers would).

    The thread only heartbeats; ``close`` stops it. Uses the cluster's own admin headers."""

    def __init__(self, cluster: LocalCluster, count: int = 3, interval: float = 1.0) -> None:
        self.cluster = cluster
        self.headers = dict(cluster.headers)
        self.interval = interval
        self.epochs: dict[int, int] = {}
        self._stop = threading.Event()
        leader = cluster.wait_ready(CLUSTER_TIMEOUT)
        url = cluster.nodes[leader].url
        cluster_id = quorum(url, self.headers)["cluster_id"]
        for broker in range(1, count + 1):
            answer = post(url, self.headers, "broker-registration", {
                "broker_id": broker, "cluster_id": cluster_id,
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 19092 + broker,
                               "security_protocol": 0}]})
            if answer["error_code"] != 0:
                raise RuntimeError(f"broker registration: {answer}")
            self.epochs[broker] = answer["broker_epoch"]
        self.heartbeat_once()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def heartbeat_once(self) -> None:
        for broker, epoch in self.epochs.items():
            for node in self.cluster.nodes.values():
                if not node.running:
                    continue
                with contextlib.suppress(httpx.HTTPError, RuntimeError):
                    post(node.url, self.headers, "broker-heartbeat", {
                        "broker_id": broker, "broker_epoch": epoch,
                        "current_metadata_offset": 2**62}, timeout=2.0, attempts=1)
                    break

    def _loop(self) -> None:
        for _ in range(100_000):
            if self._stop.wait(self.interval):
                return
            self.heartbeat_once()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def cluster_with_brokers(stack: contextlib.ExitStack, base: Path, name: str
                         ) -> tuple[LocalCluster, str]:
    """A LocalCluster of 3 controllers under ``base / name``, started, with :class:`Brokers`
    heartbeating; both stop when ``stack`` closes. Returns the cluster and the leader's URL."""
    cluster = LocalCluster(base / name)
    cluster.prepare()
    stack.callback(cluster.stop)
    cluster.start()
    brokers = Brokers(cluster)
    stack.callback(brokers.close)
    return cluster, cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url


def create_pool(url: str, headers: Headers, prefix: str, count: int,
                per_request: int = 1000) -> list[str]:
    """``count`` topics of 1 partition, RF 3, created in requests of ``per_request`` topics (2
    records each; at most request.max.batch.items, 1,000 by default)."""
    names = [f"{prefix}-{i}" for i in range(count)]
    for start in range(0, count, per_request):
        chunk = names[start:start + per_request]
        answer = post(url, headers, "create-topics", {"topics": [
            {"name": n, "num_partitions": 1, "replication_factor": 3} for n in chunk]})
        bad = [t for t in answer["topics"] if t["error_code"] != 0]
        if bad:
            raise RuntimeError(f"pool creation failed: {bad[0]}")
    return names


def delete_prefixed(url: str, headers: Headers, prefix: str) -> None:
    """Deletes every topic whose name starts with ``prefix`` (keeps the image small)."""
    answer = httpx.post(f"{url}/controller/v1/metadata", json={"topics": None,
                                                               "include_chunks": False},
                        timeout=120, headers=dict(headers), trust_env=False).json()
    delete_names(url, headers, [t["name"] for t in answer.get("topics", [])
                                if str(t.get("name")).startswith(prefix + "-")])


def delete_names(url: str, headers: Headers, names: list[str], per_request: int = 1000) -> None:
    """Deletes ``names`` in requests of at most request.max.batch.items (1,000 by default)."""
    for start in range(0, len(names), per_request):
        post(url, headers, "delete-topics", {"topic_names": names[start:start + per_request]},
             timeout=120)


async def build_topics(url: str, headers: Headers, topics: int, per_topic: int,
                       per_request: int, clients: int, deadline: float,
                       retries: list[str]) -> int:
    """Creates ``topics`` topics of ``per_topic`` partitions (RF 3) with ``clients`` concurrent
    clients; returns how many were created. Each request is retried with its idempotency key
    (applied once); the reasons of retries are appended to ``retries``."""
    names = [f"big-{i:06d}" for i in range(topics)]
    requests = [names[i:i + per_request] for i in range(0, topics, per_request)]
    created = 0

    async def task(index: int) -> None:
        nonlocal created
        async with new_client(url, timeout=120.0, headers=headers) as client:
            for chunk in requests[index::clients]:
                if time.monotonic() > deadline:
                    return
                key = os.urandom(16).hex()  # the same key on every retry: applied once
                for _attempt in range(30):
                    try:
                        answer = await client.post("/controller/v1/create-topics", json={
                            "topics": [{"name": n, "num_partitions": per_topic,
                                        "replication_factor": 3} for n in chunk]},
                            headers={"Idempotency-Key": key})
                        if answer.status_code == 200:
                            break
                        retries.append(f"{answer.status_code} {answer.text[:120]}")
                    except httpx.HTTPError as error:
                        retries.append(repr(error))
                    await asyncio.sleep(0.2)
                else:
                    raise RuntimeError(f"build: gave up after 30 attempts: {retries[-1]}")
                created += sum(1 for t in answer.json()["topics"] if t["error_code"] == 0)

    await asyncio.gather(*(task(i) for i in range(clients)))
    return created
