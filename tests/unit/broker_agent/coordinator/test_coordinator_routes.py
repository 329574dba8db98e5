"""The transaction coordinator's routes: authorization and answers without a coordinator."""

from __future__ import annotations

from pathlib import Path

from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from tests.unit.broker_agent.server.support import acl, secured_broker

TXN = AclResourceType.TRANSACTIONAL_ID


def test_find_coordinator_needs_describe_per_key(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("t-ok", AclOperation.DESCRIBE, resource_type=TXN))
    answer = broker.post("/broker/v1/find-coordinator", "alice",
                         {"key_type": 1, "keys": ["t-ok", "t-no"]}).json()
    codes = {c["key"]: c["error_code"] for c in answer["coordinators"]}
    # This fake broker runs no coordinator: the allowed key is merely not available.
    assert codes == {"t-ok": Errors.COORDINATOR_NOT_AVAILABLE.code,
                     "t-no": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code}
    groups = broker.post("/broker/v1/find-coordinator", "alice",
                         {"key_type": 0, "keys": ["g"]}).json()
    assert groups["coordinators"][0]["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED.code


def test_add_partitions_needs_write_on_the_id_and_each_topic(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("t", AclOperation.WRITE, resource_type=TXN),
                            acl("allowed", AclOperation.WRITE))
    body = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "topics": [
        {"name": "allowed", "partitions": [0]}, {"name": "denied", "partitions": [0, 1]}]}
    answer = broker.post("/broker/v1/add-partitions-to-txn", "alice", body).json()
    codes = {(t["name"], r["partition_index"]): r["error_code"]
             for t in answer["results"] for r in t["results"]}
    assert codes == {("allowed", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                     ("denied", 0): Errors.TOPIC_AUTHORIZATION_FAILED.code,
                     ("denied", 1): Errors.TOPIC_AUTHORIZATION_FAILED.code}
    answer = broker.post("/broker/v1/add-partitions-to-txn", "bob", body).json()
    assert {r["error_code"] for t in answer["results"] for r in t["results"]} == {
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code}


def test_end_txn_and_add_offsets_need_write_on_the_id(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("t", AclOperation.WRITE, resource_type=TXN))
    end = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "committed": True}
    assert broker.post("/broker/v1/end-txn", "bob", end).json()["error_code"] == \
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code
    assert broker.post("/broker/v1/end-txn", "alice", end).json()["error_code"] == \
        Errors.COORDINATOR_NOT_AVAILABLE.code
    offsets = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "group_id": "g"}
    assert broker.post("/broker/v1/add-offsets-to-txn", "alice", offsets).json()[
        "error_code"] == Errors.GROUP_AUTHORIZATION_FAILED.code
