"""Authentication and authorization of the data plane: 401s, per-topic refusals inside 200
answers, replicas acting only as themselves, cluster-level refusals as 403."""

from __future__ import annotations

from pathlib import Path

from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from tests.unit.broker_agent.server.support import RECORDS, acl, cluster_action, secured_broker

READ, WRITE, DESCRIBE, ALTER = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE,
                                AclOperation.ALTER)
DENIED = Errors.TOPIC_AUTHORIZATION_FAILED.code


def produce_body(*topics: str) -> dict[str, object]:
    return {"acks": 1, "topics": [
        {"name": name, "partition_count": 2,
         "partitions": [{"index": 0, "records": RECORDS}, {"index": 1, "records": RECORDS}]}
        for name in topics]}


def fetch_body(*topics: str, replica_id: int = -1) -> dict[str, object]:
    return {"replica_id": replica_id, "max_wait_ms": 0, "topics": [
        {"topic": name, "partitions": [{"partition": 0, "fetch_offset": 0}]}
        for name in topics]}


def test_requests_without_or_with_a_wrong_token_are_401_but_probes_are_open(
        tmp_path: Path) -> None:
    broker = secured_broker(tmp_path)
    answer = broker.client.post("/broker/v1/produce", json=produce_body("orders"))
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    wrong = broker.client.post("/broker/v1/fetch", json=fetch_body("orders"),
                               headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert broker.client.get("/healthz").status_code == 200
    assert broker.client.get("/readyz").status_code == 200
    assert broker.runtime.replica_manager.calls == []


def test_produce_refuses_topics_without_write_in_place_and_appends_the_others(
        tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("orders", WRITE), acl("audit", READ))
    answer = broker.post("/broker/v1/produce", "alice", produce_body("audit", "orders", "x"))
    assert answer.status_code == 200
    topics = answer.json()["topics"]
    assert [t["name"] for t in topics] == ["audit", "orders", "x"]
    assert [p["error_code"] for p in topics[0]["partitions"]] == [DENIED, DENIED]
    assert "User:alice is not authorized to WRITE topic 'audit'" in (
        topics[0]["partitions"][0]["error_message"])
    assert [(p["error_code"], p["base_offset"]) for p in topics[1]["partitions"]] == [
        (0, 0), (0, 10)]
    assert [p["error_code"] for p in topics[2]["partitions"]] == [DENIED, DENIED]
    (_, request), = broker.runtime.replica_manager.calls
    assert [t.name for t in request.topics] == ["orders"]


def test_a_produce_with_only_refused_topics_never_reaches_the_replica_manager(
        tmp_path: Path) -> None:
    broker = secured_broker(tmp_path)
    answer = broker.post("/broker/v1/produce", "bob", produce_body("orders"))
    assert [p["error_code"] for p in answer.json()["topics"][0]["partitions"]] == [
        DENIED, DENIED]
    assert broker.runtime.replica_manager.calls == []


def test_a_transactional_produce_needs_write_on_the_transactional_id(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("orders", WRITE))
    body = {**produce_body("orders"), "transactional_id": "tx"}
    answer = broker.post("/broker/v1/produce", "alice", body)
    code = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code
    assert [p["error_code"] for p in answer.json()["topics"][0]["partitions"]] == [code, code]
    assert broker.runtime.replica_manager.calls == []


def test_a_super_user_may_do_anything(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path)
    answer = broker.post("/broker/v1/produce", "admin", produce_body("orders"))
    assert answer.json()["topics"][0]["partitions"][0]["error_code"] == 0
    assert broker.client.get("/broker/v1/status", headers=broker.headers("admin")
                             ).status_code == 200


def test_a_consumer_fetch_needs_read_per_topic(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("orders", READ),
                            acl("logs-", READ, pattern=AclPatternType.PREFIXED))
    answer = broker.post("/broker/v1/fetch", "alice", fetch_body("secret", "orders", "logs-a"))
    assert answer.status_code == 200
    responses = answer.json()["responses"]
    assert [(r["topic"], r["partitions"][0]["error_code"]) for r in responses] == [
        ("secret", DENIED), ("orders", 0), ("logs-a", 0)]
    assert responses[0]["partitions"][0]["records"] == ""
    assert responses[1]["partitions"][0]["records"] == RECORDS
    (_, request), = broker.runtime.replica_manager.calls
    assert [t.topic for t in request.topics] == ["orders", "logs-a"]


def test_a_replica_fetch_must_come_from_that_broker_with_cluster_action(
        tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, cluster_action("User:broker-0"),
                            cluster_action("User:broker-1"), cluster_action("User:alice"))
    own = broker.post("/broker/v1/fetch", "broker-1", fetch_body("orders", replica_id=1))
    assert own.status_code == 200
    assert own.json()["responses"][0]["partitions"][0]["error_code"] == 0
    other = broker.post("/broker/v1/fetch", "broker-0", fetch_body("orders", replica_id=1))
    assert other.status_code == 403
    assert other.json()["error_name"] == "CLUSTER_AUTHORIZATION_FAILED"
    assert "may not act as replica 1: only User:broker-1" in other.json()["message"]
    user = broker.post("/broker/v1/fetch", "alice", fetch_body("orders", replica_id=0))
    assert user.status_code == 403
    assert len(broker.runtime.replica_manager.calls) == 1


def test_a_broker_without_cluster_action_is_not_a_replica(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path)
    answer = broker.post("/broker/v1/fetch", "broker-0", fetch_body("orders", replica_id=0))
    assert answer.status_code == 403


def test_list_offsets_and_offsets_for_leader_epoch_need_describe(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("orders", WRITE), cluster_action("User:broker-0"))
    lists = broker.post("/broker/v1/list-offsets", "alice", {"topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "timestamp": -2}]},
        {"name": "other", "partitions": [{"partition_index": 0, "timestamp": -2}]}]})
    assert [t["partitions"][0]["error_code"] for t in lists.json()["topics"]] == [0, DENIED]
    body = {"topics": [{"topic": "orders", "partitions": [{"partition": 0, "leader_epoch": 1}]},
                       {"topic": "other", "partitions": [{"partition": 0, "leader_epoch": 1}]}]}
    epochs = broker.post("/broker/v1/offsets-for-leader-epoch", "alice", body)
    assert [t["partitions"][0]["error_code"] for t in epochs.json()["topics"]] == [0, DENIED]
    replica = broker.post("/broker/v1/offsets-for-leader-epoch", "broker-0",
                          {**body, "replica_id": 0})
    assert [t["partitions"][0]["error_code"] for t in replica.json()["topics"]] == [0, 0]
    impostor = broker.post("/broker/v1/offsets-for-leader-epoch", "alice",
                           {**body, "replica_id": 0})
    assert impostor.status_code == 403


def test_init_producer_id_needs_idempotent_write_or_write_on_some_topic(
        tmp_path: Path) -> None:
    broker = secured_broker(
        tmp_path, acl("orders", WRITE),
        acl("kafka-cluster", AclOperation.IDEMPOTENT_WRITE, "User:broker-1",
            resource_type=AclResourceType.CLUSTER),
        acl("orders", WRITE, "User:bob", permission=AclPermissionType.DENY),
        acl("orders", WRITE, "User:bob"))
    assert broker.post("/broker/v1/init-producer-id", "alice", {}).json()["producer_id"] == 1000
    assert broker.post("/broker/v1/init-producer-id", "broker-1", {}).status_code == 200
    refused = broker.post("/broker/v1/init-producer-id", "bob", {})
    assert refused.status_code == 403
    assert refused.json()["error_name"] == "CLUSTER_AUTHORIZATION_FAILED"
    transactional = broker.post("/broker/v1/init-producer-id", "alice",
                                {"transactional_id": "tx"})
    assert transactional.status_code == 403
    assert transactional.json()["error_name"] == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_write_txn_markers_needs_cluster_action(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, cluster_action("User:broker-1"))
    body = {"markers": [{"producer_id": 4, "producer_epoch": 0, "transaction_result": False,
                         "topics": [{"name": "orders", "partition_indexes": [0]}]}]}
    assert broker.post("/broker/v1/write-txn-markers", "alice", body).status_code == 403
    assert broker.post("/broker/v1/write-txn-markers", "broker-1", body).status_code == 200


def test_create_chunks_needs_alter_per_topic(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("orders", ALTER))
    body = {"topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "broker_ids": [0, 1]}]},
        {"name": "audit", "partitions": [{"partition_index": 0, "broker_ids": [0, 1]},
                                         {"partition_index": 1, "broker_ids": [0, 1]}]}]}
    answer = broker.post("/broker/v1/create-chunks", "alice", body)
    topics = answer.json()["topics"]
    assert [p["error_code"] for p in topics[0]["partitions"]] == [0]
    assert [p["error_code"] for p in topics[1]["partitions"]] == [DENIED, DENIED]
    assert [args for _, args in broker.runtime.replica_manager.calls] == [
        ("orders", 0, (0, 1), -1)]


def test_status_and_metrics_need_describe_on_the_cluster(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("kafka-cluster", DESCRIBE, "User:bob",
                                          resource_type=AclResourceType.CLUSTER))
    for path in ("/broker/v1/status", "/metrics"):
        assert broker.client.get(path, headers=broker.headers("alice")).status_code == 403
        assert broker.client.get(path, headers=broker.headers("bob")).status_code == 200
