"""Failover with real controller processes: kill -9 during a stream of writes, nothing lost,
nothing applied twice, every node on the same image.

Each client thread owns two topics, so its results are checkable exactly:

- ``<test>-parts-<i>`` starts with 1 partition; every createPartitions raises the count by one
  (absolute count, KIP-195). With n partitions in the end, n - 1 increments were applied, each
  bumped the leader epoch of every partition that existed, so partition p is at leader epoch
  n - 1 - p and its PriorPartitionEpochs map q < p to p - 1 - q.
- ``<test>-chunks-<i>`` has 1 partition of 3 replicas; cut j (1, 2, ...) ends the active chunk at
  offset 100 j - 1 and moves the partition to a rotation of the brokers. After m cuts the
  partition has exactly m inactive chunks [100 (j - 1), 100 j - 1], its active chunk starts at
  100 m, and its leader epoch is m.

A thread sends one operation at a time, with a fresh idempotency key, retried with that key
over every controller until acknowledged; so every acknowledged operation must be in the image
exactly once, and an operation applied twice shows as a refusal (INVALID_PARTITIONS, an empty
active chunk) or as a count too high.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from chunkraft.local.local_cluster import LocalCluster
from tests.support.cluster_client import (
    ClusterClient,
    Outcome,
    admin_client,
    new_key,
    wait_converged,
    wait_leader,
)

BROKERS = (1, 2, 3)
THREADS = 4
MAX_OPS_PER_THREAD = 400
OP_DEADLINE = 30.0
CHUNK_SPAN = 100


def rotation(j: int) -> list[int]:
    shift = j % len(BROKERS)
    return list(BROKERS[shift:] + BROKERS[:shift])


@dataclass
class Stream:
    """One client thread's operations and what became of them."""

    prefix: str
    index: int
    urls: list[str]
    stop: threading.Event
    base_timestamp: int
    token: str
    increments: int = 0
    cuts: int = 0
    ack_times: list[float] = field(default_factory=list)
    retried: int = 0
    """Acknowledged operations that needed more than one attempt."""
    refused: list[str] = field(default_factory=list)
    unknown: Outcome | None = None
    crashed: BaseException | None = None

    @property
    def parts_topic(self) -> str:
        return f"{self.prefix}-parts-{self.index}"

    @property
    def chunks_topic(self) -> str:
        return f"{self.prefix}-chunks-{self.index}"

    def acked_after(self, moment: float) -> int:
        return sum(1 for t in self.ack_times if t > moment)

    def run(self) -> None:
        try:
            with ClusterClient(self.urls, start_at=self.index, deadline=OP_DEADLINE,
                               token=self.token) as client:
                for op in range(MAX_OPS_PER_THREAD):
                    if self.stop.is_set():
                        return
                    if not self._one(client, op):
                        return
        except BaseException as error:  # reported by the test, never lost in the thread
            self.crashed = error

    def _one(self, client: ClusterClient, op: int) -> bool:
        if op % 2 == 0:
            outcome = client.create_partitions(self.parts_topic, self.increments + 2,
                                               key=new_key())
            errors = _partition_errors(outcome)
        else:
            j = self.cuts + 1
            outcome = client.create_chunks(
                self.chunks_topic, 0, broker_ids=rotation(j), start_offset=CHUNK_SPAN * j,
                prev_end_offset=CHUNK_SPAN * j - 1, start_timestamp=self.base_timestamp + j,
                key=new_key())
            errors = _chunk_errors(outcome)
        if not outcome.acknowledged:
            self.unknown = outcome
            return False
        if errors:
            self.refused.append(f"{outcome.describe()}: {errors}")
            return False
        if outcome.attempts > 1:
            self.retried += 1
        if op % 2 == 0:
            self.increments += 1
        else:
            self.cuts += 1
        self.ack_times.append(time.monotonic())
        return True


def _partition_errors(outcome: Outcome) -> list[Any]:
    body = outcome.body or {}
    return [r for r in body.get("results", []) if r.get("error_code") != 0]


def _chunk_errors(outcome: Outcome) -> list[Any]:
    body = outcome.body or {}
    errors: list[Any] = [body] if body.get("error_code") else []
    for topic in body.get("topics", []):
        errors.extend(p for p in topic.get("partitions", []) if p.get("error_code") != 0)
    return errors


# ------------------------------------------------------------------ set-up and checks


def prepare_topics(cluster: LocalCluster, client: ClusterClient, prefix: str) -> None:
    client.ensure_unfenced(BROKERS, cluster.cluster_id)
    topics = [(f"{prefix}-parts-{i}", 1, 1) for i in range(THREADS)]
    topics += [(f"{prefix}-chunks-{i}", 1, len(BROKERS)) for i in range(THREADS)]
    created = client.create_topics(topics, key=new_key())
    assert created.acknowledged, created.describe()
    assert created.body is not None
    assert [t["error_code"] for t in created.body["topics"]] == [0] * len(topics), created.body


def start_streams(cluster: LocalCluster, prefix: str) -> tuple[list[Stream], list[threading.Thread],
                                                  threading.Event]:
    stop = threading.Event()
    base = int(time.time() * 1000)
    streams = [Stream(prefix, i, cluster.urls, stop, base, cluster.admin_token)
               for i in range(THREADS)]
    threads = [threading.Thread(target=s.run, name=f"stream-{s.index}", daemon=True)
               for s in streams]
    for thread in threads:
        thread.start()
    return streams, threads, stop


def wait_for(condition: Any, timeout: float, what: str) -> None:
    ends = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= ends:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def finish_streams(streams: list[Stream], threads: list[threading.Thread],
                   stop: threading.Event) -> None:
    stop.set()
    for thread in threads:
        thread.join(timeout=OP_DEADLINE + 10)
    assert not any(t.is_alive() for t in threads), "a client thread did not stop"
    for stream in streams:
        assert stream.crashed is None, f"stream {stream.index} crashed: {stream.crashed!r}"
        assert stream.unknown is None, (
            f"stream {stream.index}: an operation was never acknowledged: "
            f"{stream.unknown.describe()}")
        assert not stream.refused, (
            f"stream {stream.index}: acknowledged operations were refused (applied twice, or "
            f"evaluated again after they had committed): {stream.refused}")


def check_image(client: ClusterClient, streams: list[Stream], url: str, min_offset: int) -> None:
    """Every acknowledged operation is in ``url``'s image exactly once."""
    metadata = client.metadata(min_offset=min_offset, url=url)
    topics = {t["name"]: t for t in metadata["topics"]}
    for stream in streams:
        partitions = sorted(topics[stream.parts_topic]["partitions"],
                            key=lambda p: p["partition_index"])
        n = len(partitions)
        assert n == 1 + stream.increments, (
            f"{stream.parts_topic}: {n} partitions, but 1 + {stream.increments} acknowledged "
            f"increments")
        assert [p["partition_index"] for p in partitions] == list(range(n))
        for p, partition in enumerate(partitions):
            assert partition["leader_epoch"] == n - 1 - p, (stream.parts_topic, partition)
            prior = sorted((e["partition_index"], e["leader_epoch"])
                           for e in partition["prior_partition_epochs"])
            assert prior == [(q, p - 1 - q) for q in range(p)], (stream.parts_topic, partition)

        (partition,) = topics[stream.chunks_topic]["partitions"]
        m = stream.cuts
        assert partition["start_offset"] == CHUNK_SPAN * m, (stream.chunks_topic, partition)
        assert partition["leader_epoch"] == m, (stream.chunks_topic, partition)
        chunks = sorted(partition["chunks"], key=lambda c: c["start_offset"])
        assert [(c["start_offset"], c["stop_offset"], c["end_offset"]) for c in chunks] == [
            (CHUNK_SPAN * (j - 1), CHUNK_SPAN * j - 1, CHUNK_SPAN * j - 1)
            for j in range(1, m + 1)], (stream.chunks_topic, partition)
        if m:
            assert list(partition["replica_nodes"]) == rotation(m), partition


# ------------------------------------------------------------------ tests


@pytest.mark.leader_changes("kills the leader")
def test_leader_kill_during_writes_loses_nothing_and_applies_nothing_twice(
        quorum: LocalCluster) -> None:
    cluster = quorum
    with admin_client(cluster) as client:
        prepare_topics(cluster, client, "leader-kill")
        streams, threads, stop = start_streams(cluster, "leader-kill")
        try:
            wait_for(lambda: all(len(s.ack_times) >= 3 for s in streams), 30,
                     "3 acknowledged operations per client")
            leader = wait_leader(cluster)
            assert all(t.is_alive() for t in threads), "a client stopped before the kill"
            killed_at = time.monotonic()
            cluster.kill(leader)
            wait_for(lambda: all(s.acked_after(killed_at) >= 4 or s.unknown or s.refused
                                 or s.crashed for s in streams), 60,
                     "4 operations per client acknowledged after the kill")
        finally:
            finish_streams(streams, threads, stop)
        assert sum(s.retried for s in streams) > 0, "no operation was in flight at the kill"
        wait_leader(cluster, exclude=leader)
        survivors = [n for n in cluster.nodes if n != leader]
        converged = wait_converged(cluster, survivors)
        for node in survivors:
            check_image(client, streams, cluster.nodes[node].url, converged.offset)

        cluster.start(leader)
        rejoined = wait_converged(cluster, list(cluster.nodes), timeout=60,
                                  min_offset=converged.offset)
        assert rejoined.image_hash == converged.image_hash
        check_image(client, streams, cluster.nodes[leader].url, converged.offset)


@pytest.mark.leader_changes("kills every controller")
def test_whole_quorum_kill_during_writes_loses_nothing_acknowledged(
        quorum: LocalCluster) -> None:
    cluster = quorum
    with admin_client(cluster) as client:
        prepare_topics(cluster, client, "quorum-kill")
        streams, threads, stop = start_streams(cluster, "quorum-kill")
        try:
            wait_for(lambda: all(len(s.ack_times) >= 3 for s in streams), 30,
                     "3 acknowledged operations per client")
            assert all(t.is_alive() for t in threads), "a client stopped before the kill"
            acked_before = [len(s.ack_times) for s in streams]
            for node in list(cluster.nodes):
                cluster.kill(node)
            killed_at = time.monotonic()
            cluster.start()
            cluster.wait_ready(timeout=60)
            wait_for(lambda: all(s.acked_after(killed_at) >= 4 or s.unknown or s.refused
                                 or s.crashed for s in streams), 60,
                     "4 operations per client acknowledged after the restart")
        finally:
            finish_streams(streams, threads, stop)
        assert all(len(s.ack_times) > before for s, before in zip(streams, acked_before,
                                                                   strict=True))
        assert all(s.retried > 0 for s in streams), "a client never had to retry"
        converged = wait_converged(cluster, list(cluster.nodes), timeout=60)
        for member in cluster.nodes.values():
            check_image(client, streams, member.url, converged.offset)
