"""The REST v3 API against a real 3-node quorum: every resource, every error case of KIP-195,
KIP-1114 and DESIGN.md section 6, authorized and not, read-your-writes through a follower, and
pagination. Writes are sent to followers as well as to the leader (a follower forwards them and
passes the leader's answer on).

Brokers are registered through the RPC surface with listeners where nothing listens, so the
admin form of CreateChunks meets a leader broker that does not answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chunkraft.local.local_cluster import LocalCluster
from tests.support.cluster_client import admin_client, wait_leader

BROKERS = (1, 2, 3, 4)
TOKEN_WAIT = 10.0
"""Bound on the wait for every node to honour a token just added (they re-read each second)."""


class Rest:
    """httpx calls to one node's v3 API as one principal, with checked answers."""

    def __init__(self, cluster: LocalCluster, node_id: int, token: str | None) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.url = cluster.nodes[node_id].url
        self.base = f"{self.url}/v3/clusters/{cluster.cluster_id}"
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(headers=headers, timeout=30.0, verify=cluster.verify)

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
        url = path if path.startswith("http") else self.base + path
        return self.http.request(method, url, json=body, **kwargs)

    def ok(self, method: str, path: str, body: Any = None, status: int = 200,
           **kwargs: Any) -> dict[str, Any]:
        answer = self.call(method, path, body, **kwargs)
        assert answer.status_code == status, (method, path, answer.status_code,
                                              answer.text[:500])
        assert int(answer.headers["x-metadata-offset"]) >= 0
        if status == 204:
            return {}
        payload: dict[str, Any] = answer.json()
        return payload

    def error(self, method: str, path: str, status: int, name: str, body: Any = None,
              **kwargs: Any) -> str:
        answer = self.call(method, path, body, **kwargs)
        assert answer.status_code == status, (method, path, answer.status_code,
                                              answer.text[:500])
        payload = answer.json()
        assert set(payload) == {"error_code", "error_name", "message"}, payload
        assert payload["error_name"] == name, payload
        message: str = payload["message"]
        return message

    def close(self) -> None:
        self.http.close()


def names(payload: dict[str, Any]) -> list[str]:
    return [item["error_name"] for item in payload["data"]]


@pytest.fixture
def rest(quorum: LocalCluster) -> Iterator[dict[str, Rest]]:
    """Admin clients of the leader and of two followers, with the brokers registered."""
    with admin_client(quorum) as client:
        client.ensure_unfenced(BROKERS, quorum.cluster_id)
    leader = wait_leader(quorum)
    followers = [node for node in quorum.nodes if node != leader]
    clients = {"leader": Rest(quorum, leader, quorum.admin_token),
               "follower": Rest(quorum, followers[0], quorum.admin_token),
               "other": Rest(quorum, followers[1], quorum.admin_token)}
    try:
        yield clients
    finally:
        for client in clients.values():
            client.close()


def test_clusters_and_brokers_from_every_node(quorum: LocalCluster,
                                              rest: dict[str, Rest]) -> None:
    leader = wait_leader(quorum)
    for client in rest.values():
        listed = client.ok("GET", f"{client.url}/v3/clusters")
        assert [c["cluster_id"] for c in listed["data"]] == [quorum.cluster_id]
        cluster = client.ok("GET", "")
        assert cluster["controller_id"] == leader
        assert cluster["brokers"]["related"] == f"{client.base}/brokers"
        brokers = client.ok("GET", "/brokers")
        assert [b["broker_id"] for b in brokers["data"]] == list(BROKERS)
        broker = client.ok("GET", "/brokers/2")
        assert (broker["host"], broker["port"], broker["fenced"]) == ("127.0.0.1", 9002,
                                                                      False)
        client.error("GET", "/brokers/99", 404, "BROKER_NOT_AVAILABLE")
        message = client.error("GET", f"{client.url}/v3/clusters/AAAAAAAAAAAAAAAAAAAAAA",
                               404, "INCONSISTENT_CLUSTER_ID")
        assert quorum.cluster_id in message


def test_a_topic_created_expanded_and_deleted_through_followers(rest: dict[str, Rest]) -> None:
    follower, other = rest["follower"], rest["other"]
    would = follower.ok("POST", "/topics", {"topic_name": "life", "partitions_count": 2,
                                            "replication_factor": 2, "validate_only": True})
    assert would["topic_id"] is None and would["partitions_count"] == 2
    other.error("GET", "/topics/life", 404, "UNKNOWN_TOPIC_OR_PARTITION")

    created = follower.call("POST", "/topics", {"topic_name": "life", "partitions_count": 2,
                                                "replication_factor": 2})
    assert created.status_code == 201, created.text
    offset = int(created.headers["x-metadata-offset"])
    topic = other.ok("GET", f"/topics/life?min_offset={offset}")
    assert topic["topic_id"] == created.json()["topic_id"]
    assert (topic["partitions_count"], topic["replication_factor"],
            topic["chunks_count"]) == (2, 2, 2)

    follower.error("POST", "/topics", 409, "TOPIC_ALREADY_EXISTS", {"topic_name": "life"})
    follower.error("POST", "/topics", 400, "INVALID_REPLICATION_FACTOR",
                   {"topic_name": "wide", "replication_factor": 5})
    follower.error("POST", "/topics", 400, "INVALID_PARTITIONS",
                   {"topic_name": "none", "partitions_count": 0})
    follower.error("POST", "/topics", 400, "INVALID_TOPIC_EXCEPTION", {"topic_name": "a b"})
    follower.error("POST", "/topics", 400, "INVALID_REPLICA_ASSIGNMENT", {
        "topic_name": "manual", "replicas_assignments": [
            {"partition_id": 0, "broker_ids": [1, 1]}]})

    grown = follower.call("PATCH", "/topics/life", {"partitions_count": 4})
    assert grown.status_code == 200, grown.text
    partitions = other.ok(
        "GET", f"/topics/life/partitions?min_offset={grown.headers['x-metadata-offset']}")
    assert [p["partition_id"] for p in partitions["data"]] == [0, 1, 2, 3]
    new = partitions["data"][3]
    assert [e["partition_id"] for e in new["prior_partition_epochs"]] == [0, 1]
    assert partitions["data"][0]["leader_epoch"] == 1  # KIP-253: bumped by the expansion
    follower.error("PATCH", "/topics/life", 400, "INVALID_PARTITIONS", {"partitions_count": 4})
    follower.error("PATCH", "/topics/life", 400, "INVALID_PARTITIONS", {"partitions_count": 3})
    follower.error("PATCH", "/topics/gone", 404, "UNKNOWN_TOPIC_OR_PARTITION",
                   {"partitions_count": 3})

    replicas = other.ok("GET", "/topics/life/partitions/0/replicas")
    assert sum(r["is_leader"] for r in replicas["data"]) == 1
    chunks = other.ok("GET", "/topics/life/partitions/0/chunks")
    assert [(c["start_offset"], c["is_active"]) for c in chunks["data"]] == [(0, True)]

    deleted = follower.call("DELETE", "/topics/life")
    assert deleted.status_code == 204, deleted.text
    other.error("GET", f"/topics/life?min_offset={deleted.headers['x-metadata-offset']}",
                404, "UNKNOWN_TOPIC_OR_PARTITION")
    follower.error("DELETE", "/topics/life", 404, "UNKNOWN_TOPIC_OR_PARTITION")


def test_create_partitions_kip_195(rest: dict[str, Rest]) -> None:
    leader, follower = rest["leader"], rest["follower"]
    for name in ("cp-a", "cp-b", "cp-c"):
        leader.ok("POST", "/topics", {"topic_name": name, "partitions_count": 2,
                                      "replication_factor": 2}, status=201)
    path = "/topics:create-partitions"
    checked = follower.ok("POST", path, {"topics": [
        {"topic_name": "cp-a", "partitions_count": 5}], "validate_only": True})
    assert names(checked) == ["NONE"]
    assert leader.ok("GET", "/topics/cp-a")["partitions_count"] == 2

    answer = follower.ok("POST", path, {"topics": [
        {"topic_name": "cp-a", "partitions_count": 3},
        {"topic_name": "cp-dup", "partitions_count": 3},
        {"topic_name": "cp-dup", "partitions_count": 3},
        {"topic_name": "cp-none", "partitions_count": 3},
        {"topic_name": "cp-b", "partitions_count": 2},
        {"topic_name": "cp-c", "partitions_count": 1}]})
    assert names(answer) == ["NONE", "INVALID_REQUEST", "UNKNOWN_TOPIC_OR_PARTITION",
                             "INVALID_PARTITIONS", "INVALID_PARTITIONS"]
    assert [d["error_code"] for d in answer["data"]] == [0, 42, 3, 37, 37]
    offset = answer["metadata"]["metadata_offset"]  # where the expansion committed
    assert rest["other"].ok("GET", f"/topics/cp-a?min_offset={offset}")[
        "partitions_count"] == 3

    answer = follower.ok("POST", path, {"topics": [
        {"topic_name": "cp-b", "partitions_count": 4, "assignments": [[1, 2]]},
        {"topic_name": "cp-c", "partitions_count": 3, "assignments": [[1, 99]]}]})
    assert names(answer) == ["INVALID_REPLICA_ASSIGNMENT", "INVALID_REPLICA_ASSIGNMENT"]
    answer = follower.ok("POST", path, {"topics": [
        {"topic_name": "cp-b", "partitions_count": 3, "assignments": [[1, 2, 3]]},
        {"topic_name": "cp-c", "partitions_count": 3, "assignments": [[3, 4]]}]})
    assert names(answer) == ["INVALID_REPLICA_ASSIGNMENT", "NONE"]
    new = leader.ok("GET", "/topics/cp-c/partitions/2")
    assert new["replica_ids"] == [3, 4]

    answer = follower.ok("POST", path, {"topics": [
        {"topic_name": "cp-b", "partitions_count": 9}], "timeout_ms": 0})
    assert names(answer) == ["REQUEST_TIMED_OUT"]
    assert leader.ok("GET", "/topics/cp-b")["partitions_count"] == 2
    follower.error("POST", path, 400, "INVALID_REQUEST", {"topics": [
        {"topic_name": "cp-b", "partitions_count": 9}], "timeout_ms": -5})
    message = follower.error("POST", path, 400, "INVALID_REQUEST", {"topics": [
        {"topic_name": f"t{i}", "partitions_count": 2} for i in range(1001)]})
    assert "1000" in message


OFFSETS = {"prev_stop_offset": 99, "prev_end_offset": 104, "start_offset": 100,
           "start_timestamp": 1000}


def test_create_chunks_and_alter_assignments_kip_1114(rest: dict[str, Rest]) -> None:
    leader, follower = rest["leader"], rest["follower"]
    leader.ok("POST", "/topics", {"topic_name": "ch", "replicas_assignments": [
        {"partition_id": 0, "broker_ids": [1, 2]},
        {"partition_id": 1, "broker_ids": [2, 3]}]}, status=201)

    def cut(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return follower.ok("POST", "/chunks:create", {"partitions": items, **extra})

    def item(partition: int, replicas: list[int], **fields: Any) -> dict[str, Any]:
        return {"topic": "ch", "partition": partition, "replicas": replicas, **fields}

    checked = cut([item(0, [2, 3], **OFFSETS), item(1, [3, 4])], validate_only=True)
    assert names(checked) == ["NONE", "NONE"]
    assert len(leader.ok("GET", "/topics/ch/partitions/0/chunks")["data"]) == 1

    answer = cut([
        item(0, [2, 3], **OFFSETS),
        item(1, [3, 4]),  # the admin form: broker 2 leads t-1 and no broker process runs
        {"topic": "nope", "partition": 0, "replicas": [1, 2], **OFFSETS},
        item(7, [1, 2], **OFFSETS),
    ])
    assert names(answer) == ["NONE", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION",
                             "UNKNOWN_TOPIC_OR_PARTITION"]
    message = answer["data"][1]["error_message"]
    assert "broker 2 at http://127.0.0.1:9002" in message and "did not answer" in message

    answer = cut([item(0, [2, 3], **OFFSETS), item(0, [3, 4], **OFFSETS),
                  item(1, [1, 99], **OFFSETS)])
    assert names(answer) == ["INVALID_REQUEST", "INVALID_REQUEST",
                             "INVALID_REPLICA_ASSIGNMENT"]
    assert names(cut([item(1, [1], **OFFSETS)])) == ["INVALID_REPLICA_ASSIGNMENT"]  # wrong RF
    answer = cut([item(0, [2, 3], prev_stop_offset=99, prev_end_offset=99, start_offset=100),
                  item(1, [1, 2], prev_stop_offset=10, prev_end_offset=5, start_offset=11)])
    assert names(answer) == ["INVALID_REQUEST", "INVALID_CHUNK_OFFSETS"]  # empty cut, bad
    assert "nothing to cut" in answer["data"][0]["error_message"]

    chunks = leader.ok("GET", "/topics/ch/partitions/0/chunks")
    assert [(c["start_offset"], c["stop_offset"], c["end_offset"], c["is_active"])
            for c in chunks["data"]] == [(0, 99, 104, False), (100, -1, -1, True)]
    leader.ok("GET", "/topics/ch/partitions/0/chunks/0")
    leader.error("GET", "/topics/ch/partitions/0/chunks/7", 404, "UNKNOWN_CHUNK")
    described = leader.ok("GET", "/topics/ch/partitions?include_chunks=true")
    assert [c["start_offset"] for c in described["data"][0]["inactive_chunks"]] == [0]

    def alter(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return follower.ok("POST", "/chunks:alter-assignments", {"chunks": items, **extra})

    def move(start: int, replicas: list[int], **fields: Any) -> dict[str, Any]:
        return {"topic": "ch", "partition": 0, "start_offset": start, "replicas": replicas,
                **fields}

    assert names(alter([move(0, [3, 4])], validate_only=True)) == ["NONE"]
    answer = alter([move(0, [3, 4]), move(0, [1, 4]),
                    {"topic": "nope", "partition": 0, "start_offset": 0, "replicas": [1, 2]},
                    {"topic": "ch", "partition": 5, "start_offset": 0, "replicas": [1, 2]},
                    move(50, [1, 2])])
    assert names(answer) == ["INVALID_REQUEST", "INVALID_REQUEST",
                             "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION",
                             "UNKNOWN_CHUNK"]
    assert names(alter([move(0, [3, 4], chunk_epoch=3)])) == ["FENCED_CHUNK_EPOCH"]
    assert names(alter([move(0, [3, 99])])) == ["INVALID_REPLICA_ASSIGNMENT"]
    assert names(alter([move(0, [1, 2, 3])])) == ["INVALID_REPLICA_ASSIGNMENT"]
    assert names(alter([move(0, [3, 4], chunk_epoch=0)])) == ["NONE"]
    assert names(alter([move(0, [4, 1])])) == ["REASSIGNMENT_IN_PROGRESS"]
    moving = leader.ok("GET", "/topics/ch/partitions/0/chunks/0")
    assert (moving["chunk_epoch"], moving["adding_replica_ids"],
            moving["removing_replica_ids"]) == (1, [3, 4], [1, 2])


def test_read_your_writes_through_a_follower(rest: dict[str, Rest]) -> None:
    leader, follower = rest["leader"], rest["follower"]
    answer = leader.call("POST", "/topics", {"topic_name": "ryw", "partitions_count": 1,
                                             "replication_factor": 1})
    assert answer.status_code == 201, answer.text
    offset = int(answer.headers["x-metadata-offset"])
    seen = follower.call("GET", f"/topics/ryw?min_offset={offset}&wait_ms=10000")
    assert seen.status_code == 200, seen.text
    assert int(seen.headers["x-metadata-offset"]) >= offset
    assert seen.json()["metadata"]["metadata_offset"] >= offset
    listed = follower.ok("GET", f"/topics?min_offset={offset}")
    assert "ryw" in [t["topic_name"] for t in listed["data"]] or listed["metadata"]["next"]
    far = offset + 1_000_000
    message = follower.error("GET", f"/topics/ryw?min_offset={far}&wait_ms=100", 503,
                             "REQUEST_TIMED_OUT")
    assert str(far) in message


def test_next_links_walk_250_topics_in_pages_of_100(quorum: LocalCluster,
                                                    rest: dict[str, Rest]) -> None:
    wanted = [f"page-{index:03d}" for index in range(250)]
    with admin_client(quorum) as client:
        outcome = client.write("/create-topics", {"topics": [
            {"name": name, "num_partitions": 1, "replication_factor": 1} for name in wanted]})
        assert outcome.acknowledged, outcome.describe()
    follower = rest["follower"]
    offset = int(rest["leader"].call("GET", "").headers["x-metadata-offset"])
    url: str | None = f"{follower.base}/topics?page_size=100&min_offset={offset}"
    seen: list[str] = []
    pages = 0
    while url is not None and pages < 20:
        page = follower.ok("GET", url)
        assert len(page["data"]) <= 100
        seen.extend(t["topic_name"] for t in page["data"])
        url = page["metadata"]["next"]
        pages += 1
    assert [name for name in seen if name.startswith("page-")] == wanted
    assert seen == sorted(seen) and len(seen) == len(set(seen))
    assert pages == -(-len(seen) // 100)
    follower.error("GET", "/topics?page_token=***", 400, "INVALID_REQUEST")


def _wait_for_token(client: Rest) -> None:
    deadline = time.monotonic() + TOKEN_WAIT
    while time.monotonic() < deadline:
        if client.call("GET", "").status_code == 200:
            return
        time.sleep(0.2)
    raise AssertionError("the new token was not honoured in time")


def test_authorized_and_not(quorum: LocalCluster, rest: dict[str, Rest]) -> None:
    admin, follower = rest["leader"], rest["follower"]
    for name in ("auth-mine", "auth-theirs"):
        admin.ok("POST", "/topics", {"topic_name": name, "partitions_count": 1,
                                     "replication_factor": 1}, status=201)
    alice_token = quorum.add_token("User:alice")
    alice = Rest(quorum, follower.node_id, alice_token)
    anonymous = Rest(quorum, next(iter(quorum.nodes)), None)
    try:
        _wait_for_token(alice)
        anonymous.error("GET", "/topics", 401, "SASL_AUTHENTICATION_FAILED")
        anonymous.error("GET", "/topics", 401, "SASL_AUTHENTICATION_FAILED",
                        headers={"authorization": "Bearer crt_not-a-token"})

        listed = alice.ok("GET", "/topics")
        assert listed["data"] == []
        alice.error("GET", "/topics/auth-mine", 403, "TOPIC_AUTHORIZATION_FAILED")
        alice.error("GET", "/topics/auth-none", 403, "TOPIC_AUTHORIZATION_FAILED")
        alice.error("GET", "/acls", 403, "CLUSTER_AUTHORIZATION_FAILED")
        acl = {"resource_type": "TOPIC", "resource_name": "auth-mine",
               "principal": "User:alice", "operation": "ALTER", "permission": "ALLOW"}
        alice.error("POST", "/acls", 403, "CLUSTER_AUTHORIZATION_FAILED", acl)
        alice.ok("GET", "/brokers")

        created = admin.call("POST", "/acls", acl)
        assert created.status_code == 201, created.text
        offset = created.headers["x-metadata-offset"]
        listed = alice.ok("GET", f"/topics?min_offset={offset}")
        assert [t["topic_name"] for t in listed["data"]] == ["auth-mine"]
        alice.ok("GET", "/topics/auth-mine/partitions")
        alice.error("GET", "/topics/auth-theirs", 403, "TOPIC_AUTHORIZATION_FAILED")

        answer = alice.ok("POST", "/topics:create-partitions", {"topics": [
            {"topic_name": "auth-mine", "partitions_count": 2},
            {"topic_name": "auth-theirs", "partitions_count": 2}]})
        assert names(answer) == ["NONE", "TOPIC_AUTHORIZATION_FAILED"]
        alice.error("PATCH", "/topics/auth-theirs", 403, "TOPIC_AUTHORIZATION_FAILED",
                    {"partitions_count": 3})
        alice.error("DELETE", "/topics/auth-mine", 403, "TOPIC_AUTHORIZATION_FAILED")
        alice.error("POST", "/topics", 403, "TOPIC_AUTHORIZATION_FAILED",
                    {"topic_name": "auth-new"})
        cuts = alice.ok("POST", "/chunks:create", {"partitions": [
            {"topic": "auth-theirs", "partition": 0, "replicas": [1]},
            {"topic": "auth-mine", "partition": 0, "replicas": [1]}], "validate_only": True})
        assert names(cuts) == ["TOPIC_AUTHORIZATION_FAILED", "NONE"]

        deleted = admin.ok("DELETE", "/acls?resource_type=TOPIC&principal=User:alice")
        assert [a["resource_name"] for a in deleted["data"]] == ["auth-mine"]
        alice.error("GET", f"/topics/auth-mine?min_offset={deleted['metadata']['metadata_offset']}",
                    403, "TOPIC_AUTHORIZATION_FAILED")
    finally:
        alice.close()
        anonymous.close()


def test_whole_request_errors(rest: dict[str, Rest]) -> None:
    client = rest["follower"]
    answer = client.http.post(f"{client.base}/topics", content=b"{not json",
                              headers={"content-type": "application/json"})
    assert answer.status_code == 400 and answer.json()["error_name"] == "INVALID_REQUEST"
    answer = client.http.post(f"{client.base}/topics", content=b"x" * (8 * 1024 * 1024 + 1),
                              headers={"content-type": "application/json"})
    assert answer.status_code == 413 and answer.json()["error_name"] == "MESSAGE_TOO_LARGE"
    client.error("GET", "/topics/" + "x" * 250, 400, "INVALID_TOPIC_EXCEPTION")
    client.error("GET", "/topics?page_size=5000", 400, "INVALID_REQUEST")
    client.error("POST", "/chunks:alter-assignments", 400, "INVALID_REQUEST", {"chunks": [
        {"topic": "x", "partition": 0, "start_offset": 0, "replicas": [1]}] * 1001})
    client.error("DELETE", "/acls", 400, "INVALID_REQUEST")


def test_a_forwarded_request_to_a_non_leader_is_421(rest: dict[str, Rest]) -> None:
    follower = rest["follower"]
    message = follower.error("POST", "/topics", 421, "NOT_CONTROLLER",
                             {"topic_name": "twice-forwarded"},
                             headers={"X-Chunkraft-Forwarded": "9"})
    assert "already forwarded" in message


def test_without_a_quorum_writes_are_503_and_reads_still_answer(
        quorum: LocalCluster, rest: dict[str, Rest]) -> None:
    """Runs last in the module: it stops two nodes (the next test's fixture restarts them)."""
    rest["leader"].ok("POST", "/topics", {"topic_name": "before-the-storm",
                                          "partitions_count": 1, "replication_factor": 1},
                      status=201)
    survivor = rest["other"]
    offset = int(survivor.call("GET", "/topics/before-the-storm?min_offset=0&wait_ms=10000")
                 .headers["x-metadata-offset"])
    quorum.kill(rest["leader"].node_id)
    quorum.kill(rest["follower"].node_id)
    message = survivor.error("POST", "/topics", 503, "NOT_CONTROLLER",
                             {"topic_name": "during-the-storm"})
    assert "retry" in message  # no leader known yet, or the dead leader did not answer
    topic = survivor.ok("GET", f"/topics/before-the-storm?min_offset={offset}")
    assert topic["partitions_count"] == 1
    survivor.error("GET", f"/topics?min_offset={offset + 1000}&wait_ms=200", 503,
                   "REQUEST_TIMED_OUT")
