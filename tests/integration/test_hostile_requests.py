"""Hostile and malformed requests against a real 3-controller quorum.

Each hostile request must be refused with a 4xx or a per-item Kafka error, answered within a
bound (1 s for the heavy ones, measured around the HTTP call), and change nothing: no leader
change (the leader and the Raft epoch every node reports stay the same) and a well-behaved
client that creates topics all along through REST v3 sees every one of its createTopics
succeed. The controllers run with the default request limits (chunkraft.api.limits).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from chunkraft.local.local_cluster import LocalCluster
from tests.support.cluster_client import admin_client, wait_leader

BROKERS = (1, 2, 3)
HEAVY_ANSWER_S = 1.0
"""The heavy refusals (over-limit and unauthorized bodies of about 1 MB, an 8 MB body)."""
ANSWER_S = 2.0
"""Every other hostile request."""
TOKEN_WAIT = 10.0
HEAD_TIMEOUT_S = 10.0
"""The controllers' default ``http.head.timeout.ms``."""


@dataclass
class CalmClient:
    """A well-behaved client creating one topic at a time through REST v3, in a thread."""

    cluster: LocalCluster
    node_id: int
    prefix: str
    outcomes: list[tuple[int, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        url = (f"{self.cluster.nodes[self.node_id].url}/v3/clusters/"
               f"{self.cluster.cluster_id}/topics")
        with httpx.Client(timeout=30.0, headers=self.cluster.headers,
                          verify=self.cluster.verify) as http:
            count = 0
            while not self._stop.is_set():
                started = time.perf_counter()
                answer = http.post(url, json={"topic_name": f"{self.prefix}-{count}",
                                              "partitions_count": 1, "replication_factor": 1})
                self.outcomes.append((answer.status_code, time.perf_counter() - started))
                count += 1
                self._stop.wait(0.05)

    def stop(self) -> list[tuple[int, float]]:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=60)
        return self.outcomes


def _epochs(cluster: LocalCluster) -> dict[int, tuple[object, object]]:
    """(leader id, Raft epoch) as every node reports it."""
    seen = {}
    for node_id in cluster.nodes:
        status = cluster.status(node_id, timeout=5.0)
        assert status is not None, f"controller {node_id} does not answer"
        seen[node_id] = (status["leader_id"], status["epoch"])
    return seen


@dataclass
class Attack:
    """The quorum under one test's hostile requests, watched by :class:`CalmClient`s."""

    cluster: LocalCluster
    leader: int
    follower: int
    mallory: str
    timings: list[tuple[str, float]] = field(default_factory=list)

    def url(self, node_id: int, path: str) -> str:
        return f"{self.cluster.nodes[node_id].url}{path}"

    def v3(self, node_id: int, path: str) -> str:
        return self.url(node_id, f"/v3/clusters/{self.cluster.cluster_id}{path}")

    def send(self, label: str, method: str, url: str, *, bound: float = ANSWER_S,
             token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {token or self.cluster.admin_token}",
                   **kwargs.pop("headers", {})}
        with httpx.Client(timeout=30.0, verify=self.cluster.verify) as http:
            started = time.perf_counter()
            answer = http.request(method, url, headers=headers, **kwargs)
            elapsed = time.perf_counter() - started
        self.timings.append((label, elapsed))
        assert elapsed < bound, f"{label}: answered in {elapsed:.2f} s (bound {bound} s)"
        return answer


def _error(answer: httpx.Response, status: int, name: str) -> str:
    assert answer.status_code == status, answer.text[:300]
    body = answer.json()
    assert body["error_name"] == name, body
    message: str = body["message"]
    return message


def _item_errors(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text[:300]
    return [item["error_name"] for item in answer.json()["data"]]


@pytest.fixture
def attack(quorum: LocalCluster) -> Iterator[Attack]:
    """The quorum with brokers 1-3 registered, an ``expand-me`` topic, a principal without
    any ACL, and two calm clients (one per node kind) creating topics throughout; at the end,
    every calm createTopics succeeded and no node saw a leader change."""
    with admin_client(quorum) as client:
        client.ensure_unfenced(BROKERS, quorum.cluster_id)
    try:
        mallory = quorum.token("User:mallory")  # a principal without any ACL
    except KeyError:
        mallory = quorum.add_token("User:mallory")
    leader = wait_leader(quorum)
    follower = next(node for node in quorum.nodes if node != leader)
    _wait_token(quorum, mallory)
    setup = Attack(quorum, leader, follower, mallory)
    created = setup.send("setup", "POST", setup.v3(leader, "/topics"), json={
        "topic_name": "expand-me", "partitions_count": 1, "replication_factor": 1})
    assert created.status_code in (201, 409), created.text
    before = _epochs(quorum)
    assert len(set(before.values())) == 1, before
    stamp = f"{time.monotonic_ns()}"
    calm = [CalmClient(quorum, leader, f"calm-l{stamp}"),
            CalmClient(quorum, follower, f"calm-f{stamp}")]
    for client_ in calm:
        client_.start()
    time.sleep(0.3)
    try:
        yield setup
    finally:
        outcomes = [o for client_ in calm for o in client_.stop()]
    assert outcomes, "the calm clients sent nothing"
    assert [status for status, _ in outcomes if status != 201] == []
    assert _epochs(quorum) == before, "a leader change happened under the hostile requests"
    slowest = max(elapsed for _, elapsed in outcomes)
    print(f"calm createTopics: {len(outcomes)} all 201, slowest {slowest:.3f} s; hostile: "
          + ", ".join(f"{label} {elapsed:.3f} s" for label, elapsed in setup.timings))


def _wait_token(cluster: LocalCluster, token: str) -> None:
    """Until every node knows ``token`` (they re-read the credentials file each second)."""
    ends = time.monotonic() + TOKEN_WAIT
    for node in cluster.nodes.values():
        while True:
            answer = httpx.get(f"{node.url}/v3/clusters", verify=cluster.verify,
                               headers={"authorization": f"Bearer {token}"}, timeout=5.0)
            if answer.status_code != 401:
                break
            assert time.monotonic() < ends, "the new token was not honoured in time"
            time.sleep(0.1)


def _heavy_expansion(topics: int, per_topic: int) -> dict[str, Any]:
    """A heavy validate_only createPartitions, sized to stay under the 1 MiB body limit:
    ``topics`` x ``per_topic`` manual assignments of three brokers."""
    return {"validate_only": True, "topics": [
        {"topic_name": f"heavy-{i}", "partitions_count": 1 + per_topic,
         "assignments": [[1, 2, 3]] * per_topic} for i in range(topics)]}


# ------------------------------------------------------------------ loose types


@pytest.mark.parametrize("value", ['"0"', "1", '"yes"'])
def test_loose_booleans_are_400_and_expand_nothing(attack: Attack, value: str) -> None:
    body = ('{"topics": [{"topic_name": "expand-me", "partitions_count": 9}], '
            '"validate_only": ' + value + "}").encode()
    for node_id in (attack.leader, attack.follower):
        answer = attack.send(f"validate_only={value}", "POST",
                             attack.v3(node_id, "/topics:create-partitions"), content=body,
                             headers={"content-type": "application/json"})
        assert "validate_only" in _error(answer, 400, "INVALID_REQUEST")
    topic = attack.send("describe", "GET", attack.v3(attack.leader, "/topics/expand-me"))
    assert topic.json()["partitions_count"] == 1


@pytest.mark.parametrize("value", ["true", "false", '"7"', "1.0"])
def test_loose_broker_ids_are_400_and_unregister_nothing(attack: Attack, value: str) -> None:
    answer = attack.send(f"broker_id={value}", "POST",
                         attack.url(attack.follower, "/controller/v1/unregister-broker"),
                         content=b'{"broker_id": ' + value.encode() + b"}",
                         headers={"content-type": "application/json"})
    assert "broker_id" in _error(answer, 400, "INVALID_REQUEST")
    brokers = attack.send("brokers", "GET", attack.v3(attack.leader, "/brokers")).json()
    assert {1, 2, 3} <= {b["broker_id"] for b in brokers["data"]}


# ------------------------------------------------------------------ media type and sizes


def test_a_text_plain_body_is_415(attack: Attack) -> None:
    body = b'{"topic_name": "plain-text", "partitions_count": 1, "replication_factor": 1}'
    answer = attack.send("text/plain", "POST", attack.v3(attack.leader, "/topics"),
                         content=body, headers={"content-type": "text/plain"})
    assert "application/json" in _error(answer, 415, "INVALID_REQUEST")
    assert attack.send("describe", "GET", attack.v3(attack.leader, "/topics/plain-text")
                       ).status_code == 404


def test_a_1_mb_idempotency_key_is_431(attack: Attack) -> None:
    answer = attack.send("1 MB Idempotency-Key", "POST", attack.v3(attack.follower, "/topics"),
                         json={"topic_name": "big-key", "partitions_count": 1,
                               "replication_factor": 1},
                         headers={"idempotency-key": "k" * (1 << 20)})
    assert "request.max.header.bytes" in _error(answer, 431, "INVALID_REQUEST")
    answer = attack.send("Idempotency-Key with a space", "POST",
                         attack.v3(attack.follower, "/topics"),
                         json={"topic_name": "big-key", "partitions_count": 1,
                               "replication_factor": 1},
                         headers={"idempotency-key": "not a key"})
    assert "Idempotency-Key" in _error(answer, 400, "INVALID_REQUEST")


def test_an_8_mb_body_is_413_authorized_or_not(attack: Attack) -> None:
    body = b'{"topic_name": "' + b"x" * (8 << 20) + b'"}'
    for label, token in (("8 MB admin", None), ("8 MB unauthorized", attack.mallory)):
        answer = attack.send(label, "POST", attack.v3(attack.leader, "/topics"), content=body,
                             headers={"content-type": "application/json"}, token=token,
                             bound=HEAVY_ANSWER_S)
        assert "request.max.body.bytes" in _error(answer, 413, "MESSAGE_TOO_LARGE")


# ------------------------------------------------------------------ counts and authorization


def test_over_limit_items_are_policy_violation_at_once(attack: Attack) -> None:
    body = _heavy_expansion(11, 1000)  # 11,000 assignments: over request.max.assignments
    for node_id in (attack.leader, attack.follower):
        answer = attack.send("admin over-limit validate_only", "POST",
                             attack.v3(node_id, "/topics:create-partitions"), json=body,
                             bound=HEAVY_ANSWER_S)
        assert _item_errors(answer) == ["POLICY_VIOLATION"] * 11
    # 100 x 1,000 (about 0.8 MB, 400,000 JSON values) is refused before parsing.
    answer = attack.send("admin 100 x 1,000 validate_only", "POST",
                         attack.v3(attack.leader, "/topics:create-partitions"),
                         json=_heavy_expansion(100, 1000), bound=HEAVY_ANSWER_S)
    assert "request.max.json.values" in _error(answer, 413, "MESSAGE_TOO_LARGE")
    answer = attack.send("RPC 1001 topics", "POST",
                         attack.url(attack.follower, "/controller/v1/create-topics"), json={
                             "topics": [{"name": f"many-{i}"} for i in range(1001)]})
    assert "request.max.batch.items" in _error(answer, 400, "INVALID_REQUEST")
    answer = attack.send("RPC over-limit assignments", "POST",
                         attack.url(attack.leader, "/controller/v1/create-partitions"), json={
                             "topics": [{"name": "expand-me", "count": 10_002, "assignments":
                                         [{"broker_ids": [1]}] * 10_001}]})
    assert "request.max.assignments" in _error(answer, 400, "POLICY_VIOLATION")


def test_an_unauthorized_heavy_validate_only_is_refused_fast(attack: Attack) -> None:
    body = _heavy_expansion(11, 1000)  # over request.max.assignments
    for node_id in (attack.leader, attack.follower):
        answer = attack.send("unauthorized over-limit validate_only", "POST",
                             attack.v3(node_id, "/topics:create-partitions"), json=body,
                             token=attack.mallory, bound=HEAVY_ANSWER_S)
        assert _item_errors(answer) == ["TOPIC_AUTHORIZATION_FAILED"] * 11
    answer = attack.send("unauthorized 100 x 1,000 validate_only", "POST",
                         attack.v3(attack.follower, "/topics:create-partitions"),
                         json=_heavy_expansion(100, 1000), token=attack.mallory,
                         bound=HEAVY_ANSWER_S)
    assert "request.max.json.values" in _error(answer, 413, "MESSAGE_TOO_LARGE")
    within = _heavy_expansion(10, 1000)  # at the assignment limit: the operation decides
    answer = attack.send("unauthorized validate_only at the limit", "POST",
                         attack.v3(attack.follower, "/topics:create-partitions"), json=within,
                         token=attack.mallory, bound=HEAVY_ANSWER_S)
    assert _item_errors(answer) == ["TOPIC_AUTHORIZATION_FAILED"] * 10


def test_the_allowed_worst_case_from_the_admin_is_cheap(attack: Attack) -> None:
    created = attack.send("setup", "POST", attack.v3(attack.leader, "/topics"), json={
        "topic_name": "wide", "partitions_count": 1, "replication_factor": 3})
    assert created.status_code in (201, 409), created.text
    body = {"validate_only": True, "topics": [
        {"topic_name": "wide", "partitions_count": 10_000,
         "assignments": [[1, 2, 3]] * 9_999}]}
    answer = attack.send("admin validate_only at the limit", "POST",
                         attack.v3(attack.follower, "/topics:create-partitions"), json=body,
                         bound=HEAVY_ANSWER_S)
    assert _item_errors(answer) == ["NONE"]


# ------------------------------------------------------------------ offsets


def test_a_cut_at_2_63_minus_1_is_refused(attack: Attack) -> None:
    top = 2**63 - 1
    created = attack.send("setup", "POST", attack.v3(attack.leader, "/topics"), json={
        "topic_name": "cut-me", "partitions_count": 1, "replication_factor": 1})
    assert created.status_code in (201, 409), created.text
    answer = attack.send("cut at 2^63-1", "POST", attack.v3(attack.follower, "/chunks:create"),
                         json={"partitions": [{
                             "topic": "cut-me", "partition": 0, "replicas": [1],
                             "prev_stop_offset": top - 1, "prev_end_offset": top - 1,
                             "start_offset": top}]})
    assert _item_errors(answer) == ["INVALID_REQUEST"]
    partition = attack.send("describe", "GET", attack.v3(
        attack.leader, "/topics/cut-me/partitions/0")).json()
    assert partition["start_offset"] == 0


# ------------------------------------------------------------------ slow connections


def test_slow_loris_connections_are_cut_at_the_head_deadline(attack: Attack) -> None:
    """200 connections to the leader that dribble a request head, one byte a second, are all
    closed by the controller once the head deadline (http.head.timeout.ms, 10 s by default)
    passes, while the calm clients' createTopics all succeed."""
    port = int(attack.cluster.nodes[attack.leader].url.rsplit(":", 1)[1])
    sockets = []
    for _ in range(200):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"POST /v3/clusters HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sock.setblocking(False)
        sockets.append(sock)
    opened = time.monotonic()
    closed_after: list[float] = []
    try:
        while sockets and time.monotonic() - opened < HEAD_TIMEOUT_S + 10:  # bounded
            time.sleep(1.0)
            open_ones = []
            for sock in sockets:
                try:
                    closed = sock.recv(1) == b""  # the server closed it
                except BlockingIOError:
                    closed = False
                except ConnectionResetError:  # closed with our dribbled bytes unread: a reset
                    closed = True
                if closed:
                    closed_after.append(time.monotonic() - opened)
                    sock.close()
                    continue
                try:
                    sock.send(b"X")
                    open_ones.append(sock)
                except OSError:
                    closed_after.append(time.monotonic() - opened)
                    sock.close()
            sockets = open_ones
    finally:
        for sock in sockets:
            sock.close()
    assert sockets == [], f"{len(sockets)} slow connections still open"
    assert len(closed_after) == 200
    # Dribbling does not extend the deadline: none is cut long after it.
    assert max(closed_after) < HEAD_TIMEOUT_S + 5, max(closed_after)
    assert min(closed_after) > HEAD_TIMEOUT_S - 1, min(closed_after)
