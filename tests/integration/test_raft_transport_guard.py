"""The Raft transport guard against a real 3-controller quorum on 127.0.0.1.

The attack: a plain TCP connection to the leader's Raft port announces a 2 GiB
message (``struct.pack('i', 0x7fffffff)``) and sends 16 MiB, then 64 MiB, of zeros; then 200
connections sit idle on the port. Before the guard, 16 MiB forced an election and 64 MiB stalled
the Raft thread for about a minute while ``/readyz`` still said ready. Here, all along, an admin
client creates topics one at a time and another thread polls the leader's ``/readyz``:
no leader change, every write acknowledged at the first attempt with bounded latency, and the
leader ready (its Raft thread ticking) whenever asked.
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from chunkraft.api.readiness import assess_readiness
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.local.local_cluster import LocalCluster, free_ports
from tests.support.cluster_client import admin_client, new_key, wait_leader
from tests.support.raft import batch, topic_record, wait_until

BROKERS = (1, 2, 3)
IDLE_CONNECTIONS = 200
MAX_WRITES = 2000
MAX_READY_POLLS = 3000
WRITE_LATENCY_LIMIT = 2.0
"""Seconds any one write may take (the target is a p99 of 0.5 s, checked too)."""


@dataclass
class Observed:
    """What the well-behaved clients saw while the attacks ran."""

    stop: threading.Event = field(default_factory=threading.Event)
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    ready: list[tuple[int, float | None, str | None]] = field(default_factory=list)


def write_topics(cluster: LocalCluster, seen: Observed) -> None:
    # One attempt per write (no retries to hide a failure), each with its own topic.
    with admin_client(cluster, request_timeout=10.0, max_attempts=1) as client:
        for n in range(MAX_WRITES):
            if seen.stop.is_set():
                return
            started = time.monotonic()
            outcome = client.create_topics([(f"guard-{n}", 1, 3)], key=new_key())
            seen.latencies.append(time.monotonic() - started)
            if not outcome.acknowledged or outcome.body is None or any(
                    topic["error_code"] for topic in outcome.body["topics"]):
                seen.failures.append(outcome.describe())
            time.sleep(0.02)


def poll_ready(url: str, seen: Observed) -> None:
    with httpx.Client(timeout=5.0) as http:
        for _ in range(MAX_READY_POLLS):
            if seen.stop.is_set():
                return
            try:
                answer = http.get(f"{url}/readyz")
                body = answer.json()
                seen.ready.append((answer.status_code, body.get("tick_lag_seconds"),
                                   body.get("reason")))
            except httpx.HTTPError as error:
                seen.ready.append((0, None, f"{type(error).__name__}"))
            time.sleep(0.05)


@contextlib.contextmanager
def well_behaved_clients(cluster: LocalCluster, leader_url: str) -> Iterator[Observed]:
    seen = Observed()
    threads = [threading.Thread(target=write_topics, args=(cluster, seen), daemon=True),
               threading.Thread(target=poll_ready, args=(leader_url, seen), daemon=True)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)  # a baseline before the first attack
        yield seen
        time.sleep(1.0)  # and some time after the last
    finally:
        seen.stop.set()
        for thread in threads:
            thread.join(timeout=30)


def flood(port: int, junk_bytes: int) -> tuple[int, float]:
    """Announces a 2 GiB message and sends ``junk_bytes`` of zeros; returns the bytes the
    socket took before the node closed it, and the seconds that took."""
    started = time.monotonic()
    sent = 0
    chunk = bytes(1 << 20)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(struct.pack("i", 0x7FFFFFFF))
            while sent < junk_bytes:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the node closed the connection: what should happen
            pass
    return sent, time.monotonic() - started


def open_idle(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        try:
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    return sockets


def node_state(cluster: LocalCluster) -> dict[int, tuple[object, object, object]]:
    states = {}
    for node_id in cluster.nodes:
        status = cluster.status(node_id, timeout=5.0)
        assert status is not None, f"controller {node_id} does not answer"
        states[node_id] = (status["leader_id"], status["epoch"], status["leader_changes"])
    return states


def closed_connections(cluster: LocalCluster, node_id: int) -> dict[str, float]:
    answer = httpx.get(f"{cluster.nodes[node_id].url}/metrics", headers=cluster.headers,
                       timeout=5.0, verify=cluster.verify)
    assert answer.status_code == 200, answer.text
    found = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == "chunkraft_raft_transport_closed_connections_total":
                found[sample.labels["reason"]] = sample.value
    return found


@pytest.mark.slow
def test_junk_and_idle_connections_to_the_leaders_raft_port_change_nothing(
        quorum: LocalCluster) -> None:
    with admin_client(quorum) as client:
        client.ensure_unfenced(BROKERS, quorum.cluster_id)
    leader = wait_leader(quorum)
    port = quorum.nodes[leader].raft_port
    before = node_state(quorum)
    idle: list[socket.socket] = []
    try:
        with well_behaved_clients(quorum, quorum.nodes[leader].url) as seen:
            floods = [flood(port, 16 << 20), flood(port, 64 << 20)]
            idle = open_idle(port, IDLE_CONNECTIONS)
            time.sleep(2.0)
            still_open = sum(1 for sock in idle if not _closed(sock))
    finally:
        for sock in idle:
            sock.close()
    after = node_state(quorum)

    print(f"floods (bytes taken, seconds): {floods}; idle connections opened {len(idle)}, "
          f"still open after 2 s {still_open}")
    latencies = sorted(seen.latencies)
    p99 = latencies[max(int(len(latencies) * 0.99) - 1, 0)]
    print(f"writes {len(latencies)}: p50 {statistics.median(latencies) * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms")
    # The node closed each flood after its first read, not after 16 or 64 MiB.
    for sent, seconds in floods:
        assert sent <= 8 << 20 and seconds < 5.0, floods
    assert after == before, f"the quorum changed: {before} -> {after}"
    assert seen.failures == [], seen.failures[:5]
    assert len(latencies) >= 20 and latencies[-1] < WRITE_LATENCY_LIMIT, latencies[-5:]
    assert p99 <= 0.5, p99
    # Honest and ready: the leader's Raft thread kept ticking, and /readyz said so each time.
    assert len(seen.ready) >= 20
    not_ready = [answer for answer in seen.ready if answer[0] != 200]
    assert not_ready == [], not_ready[:5]
    assert all(lag is not None and lag < 0.5 for _, lag, _ in seen.ready)
    # At most raft.max.connections.per.address (8) idle connections were held at a time.
    assert len(idle) == IDLE_CONNECTIONS and still_open <= 8, (len(idle), still_open)
    closed = closed_connections(quorum, leader)
    assert closed.get("oversize") == 2, closed
    assert closed.get("per_address", 0) >= IDLE_CONNECTIONS - 8, closed


def _closed(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # pysyncobj leaves files to the GC
def test_a_raft_node_whose_tick_thread_is_held_reports_it(tmp_path: Path) -> None:
    # One voter in this process; an apply listener (run by the Raft thread) holds the thread
    # for 1.5 s, as a long apply or a flood before the guard did.
    node = RaftNode(RaftSettings(node_id=1, voters={1: f"127.0.0.1:{free_ports(1)[0]}"},
                                 data_dir=tmp_path, password="guard", cluster_id=uuid.uuid4()))
    try:
        wait_until(node.is_leader, 15.0, "the single voter never led")
        wait_until(lambda: assess_readiness(node.status()).ready, 5.0, "never ready")
        held = threading.Event()

        def hold() -> None:
            if not held.is_set():
                held.set()
                time.sleep(1.5)

        node.add_apply_listener(hold)
        node.propose([batch([topic_record(1)])])
        wait_until(held.is_set, 5.0, "the entry was never applied")
        time.sleep(0.8)  # more than the election timeout (0.5 s) into the hold
        status = node.status()
        assert status.state == "leader" and status.has_quorum  # what it said before the guard
        assert status.raft_thread_stalled and status.tick_lag_seconds is not None
        assert status.tick_lag_seconds > status.tick_lag_limit_seconds == 0.5  # type: ignore[operator]
        readiness = assess_readiness(status)
        assert not readiness.ready
        assert readiness.reason is not None and "has not ticked" in readiness.reason
        wait_until(lambda: assess_readiness(node.status()).ready, 5.0,
                   "not ready again after the hold")
        assert node.status().tick_lag_seconds < 0.5  # type: ignore[operator]
    finally:
        node.close()

