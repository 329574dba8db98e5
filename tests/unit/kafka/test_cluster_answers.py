"""Metadata and DescribeCluster answers (chunkraft.kafka.cluster_answers) from a real metadata
image built from records, and that every version of them encodes with our codec and reads with
kafka-python's."""

from __future__ import annotations

import importlib
import uuid
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.kafka.cluster_answers import (
    ZERO_UUID,
    broker_nodes,
    describe_cluster_answer,
    metadata_answer,
    replica_nodes,
)
from chunkraft.kafka.codec.messages import decode, encode
from chunkraft.kafka.server.requests import KafkaSession
from chunkraft.protocol.acls import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from chunkraft.records import (
    AccessControlEntryRecord,
    BrokerEndpoint,
    RegisterBrokerRecord,
    TopicRecord,
)
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal
from tests.unit.controller.operations.topic_support import apply, chunk, partition

ORDERS = uuid.UUID(int=0x0DE75)
PAYMENTS = uuid.UUID(int=0x9A7)
UNKNOWN = uuid.UUID(int=0xDEAD)
ALICE = Principal("User:alice", "10.0.0.7")
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
TOPIC_AUTHORIZATION_FAILED = 29
UNKNOWN_TOPIC_ID = 100
NOT_REQUESTED = -(2**31)
MISMATCHED_ENDPOINT_TYPE = Errors.MISMATCHED_ENDPOINT_TYPE.code
UNSUPPORTED_ENDPOINT_TYPE = Errors.UNSUPPORTED_ENDPOINT_TYPE.code
INVALID_REQUEST = Errors.INVALID_REQUEST.code


def broker(broker_id: int, *, fenced: bool = False, sasl: bool = True,
           rack: str | None = None) -> RegisterBrokerRecord:
    endpoints = [BrokerEndpoint("HTTP", f"b{broker_id}.test", 9190 + broker_id, 0)]
    if sasl:
        endpoints.append(BrokerEndpoint("SASL_PLAINTEXT", f"b{broker_id}.test",
                                        9090 + broker_id, 2))
    return RegisterBrokerRecord(broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id + 1),
                                broker_epoch=100 + broker_id, end_points=tuple(endpoints),
                                rack=rack, fenced=fenced)


def image() -> MetadataImage:
    """Brokers 1, 2 (rack r2), 3 (fenced) and 4 (no SASL_PLAINTEXT endpoint); orders-0 led by
    1 with two inactive chunks, orders-1 led by the fenced 3; payments-0 led by 2."""
    return apply(
        MetadataImage.EMPTY,
        broker(1), broker(2, rack="r2"), broker(3, fenced=True), broker(4, sasl=False),
        TopicRecord(name="orders", topic_id=ORDERS),
        partition(0, (1, 2), ORDERS, leader_epoch=3, start_offset=100),
        partition(1, (3, 1), ORDERS, isr=(3,)),
        chunk(0, 49, 49, (1, 2), 0, ORDERS, epoch=1),
        chunk(50, 99, 99, (2, 3), 0, ORDERS),
        TopicRecord(name="payments", topic_id=PAYMENTS),
        partition(0, (2, 1), PAYMENTS),
    )


def session(listener: str = "SASL_PLAINTEXT", principal: Principal = ALICE) -> KafkaSession:
    return KafkaSession(listener, listener, principal.host, principal=principal)


def answer(request: dict[str, Any], version: int = 12, *, the_image: MetadataImage | None = None,
           authorizer: Authorizer | None = None, listener: str = "SASL_PLAINTEXT",
           self_id: int | None = 2) -> dict[str, Any]:
    return metadata_answer(the_image or image(), request, version, session(listener),
                           authorizer, cluster_id=CLUSTER, self_id=self_id)


def by_name(found: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    return {topic["name"]: topic for topic in found["topics"]}


# --- brokers and controller id ----------------------------------------------------------------


def test_brokers_are_the_unfenced_ones_with_an_endpoint_on_the_sessions_listener() -> None:
    assert answer({"topics": None})["brokers"] == [
        {"node_id": 1, "host": "b1.test", "port": 9091, "rack": None},
        {"node_id": 2, "host": "b2.test", "port": 9092, "rack": "r2"}]
    assert [n["node_id"] for n in broker_nodes(image(), "HTTP")] == [1, 2, 4]
    assert [n["port"] for n in broker_nodes(image(), "HTTP")] == [9191, 9192, 9194]
    assert broker_nodes(image(), "SSL") == []


def test_the_controller_id_is_this_broker_or_the_first_live_one() -> None:
    assert answer({"topics": None}, self_id=2)["controller_id"] == 2
    assert answer({"topics": None}, self_id=None)["controller_id"] == 1
    assert answer({"topics": None}, self_id=None, listener="SSL")["controller_id"] == -1


def test_the_cluster_id_and_unrequested_operations() -> None:
    found = answer({"topics": None})
    assert found["cluster_id"] == CLUSTER
    assert found["cluster_authorized_operations"] == NOT_REQUESTED
    assert {t["topic_authorized_operations"] for t in found["topics"]} == {NOT_REQUESTED}


# --- topics -----------------------------------------------------------------------------------


def test_null_asks_for_every_topic() -> None:
    found = answer({"topics": None})
    assert sorted((t["name"], t["topic_id"]) for t in found["topics"]) == [
        ("orders", ORDERS), ("payments", PAYMENTS)]
    assert {t["error_code"] for t in found["topics"]} == {0}


def test_an_empty_list_is_every_topic_at_v0_only() -> None:
    assert set(by_name(answer({"topics": []}, version=0))) == {"orders", "payments"}
    assert answer({"topics": []}, version=1)["topics"] == []
    assert answer({"topics": []}, version=12)["topics"] == []


def test_topics_by_name_and_by_id() -> None:
    found = answer({"topics": [{"name": "payments", "topic_id": None},
                               {"name": None, "topic_id": ORDERS}]})
    assert [(t["name"], t["topic_id"], t["error_code"]) for t in found["topics"]] == [
        ("payments", PAYMENTS, 0), ("orders", ORDERS, 0)]


def test_unknown_names_and_ids() -> None:
    found = answer({"topics": [{"name": "nope", "topic_id": ZERO_UUID},
                               {"name": None, "topic_id": UNKNOWN}]})
    assert [(t["name"], t["topic_id"], t["error_code"], t["partitions"])
            for t in found["topics"]] == [
        ("nope", ZERO_UUID, UNKNOWN_TOPIC_OR_PARTITION, []),
        (None, UNKNOWN, UNKNOWN_TOPIC_ID, [])]


def test_a_topic_asked_twice_is_answered_once() -> None:
    found = answer({"topics": [{"name": "orders"}, {"name": "orders"}, {"name": "nope"},
                               {"name": "nope"}]}, version=4)
    assert [t["name"] for t in found["topics"]] == ["orders", "nope"]


def test_partitions_show_the_active_chunk_then_the_brokers_of_inactive_ones() -> None:
    orders = by_name(answer({"topics": None}))["orders"]
    first, second = orders["partitions"]
    # Active chunk on [1, 2]; inactive chunks on [1, 2] and [2, 3]: each broker once, in order,
    # and broker 3 (fenced) offline. The ISR stays the active chunk's.
    assert first == {"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 3,
                     "replica_nodes": [1, 2, 3], "isr_nodes": [1, 2], "offline_replicas": [3]}
    # Led by a fenced broker: LEADER_NOT_AVAILABLE, and the fenced replica is offline.
    assert second["error_code"] == LEADER_NOT_AVAILABLE
    assert (second["leader_id"], second["offline_replicas"]) == (3, [3])


def test_replica_nodes_are_the_active_chunks_then_each_inactive_chunks_brokers_once() -> None:
    active = partition(0, (3, 1), ORDERS)
    chunks = (chunk(0, 9, 9, (1, 2), 0, ORDERS), chunk(10, 19, 19, (5, 2), 0, ORDERS, isr=(2,)),
              chunk(20, 29, 29, (4,), 0, ORDERS, isr=(6, 4)))
    assert replica_nodes(active, chunks) == [3, 1, 2, 5, 4, 6]
    assert replica_nodes(active, ()) == [3, 1]


def test_an_unregistered_leader_is_not_available_either() -> None:
    the_image = apply(image(), TopicRecord(name="ghost", topic_id=UNKNOWN),
                      partition(0, (7, 1), UNKNOWN))
    ghost = by_name(answer({"topics": [{"name": "ghost"}]}, the_image=the_image))["ghost"]
    (only,) = ghost["partitions"]
    assert only["error_code"] == LEADER_NOT_AVAILABLE and only["offline_replicas"] == [7]


# --- chunks (KIP-1114) ------------------------------------------------------------------------


def test_chunks_only_when_asked_and_from_v9() -> None:
    asked = by_name(answer({"topics": None, "include_chunks": True}))["orders"]
    first = asked["partitions"][0]
    assert first["active_chunk_start_offset"] == 100
    assert first["chunks"] == [
        {"start_offset": 0, "start_timestamp": 1000, "stop_offset": 49, "end_offset": 49,
         "chunk_epoch": 1, "replicas": [1, 2], "isr": [1, 2]},
        {"start_offset": 50, "start_timestamp": 1050, "stop_offset": 99, "end_offset": 99,
         "chunk_epoch": 0, "replicas": [2, 3], "isr": [2, 3]}]
    assert asked["partitions"][1]["chunks"] == []
    for request, version in (({"topics": None}, 12), ({"topics": None, "include_chunks": True},
                                                       8)):
        plain = by_name(answer(request, version=version))["orders"]["partitions"][0]
        assert "chunks" not in plain and "active_chunk_start_offset" not in plain


def test_chunks_survive_the_codec_and_are_absent_unless_asked() -> None:
    asked = answer({"topics": None, "include_chunks": True})
    read = decode("MetadataResponse", 12, encode("MetadataResponse", 12, asked))
    partition_0 = by_name(read)["orders"]["partitions"][0]
    assert [c["start_offset"] for c in partition_0["chunks"]] == [0, 50]
    assert partition_0["active_chunk_start_offset"] == 100
    plain = answer({"topics": None})
    assert encode("MetadataResponse", 12, plain) != encode("MetadataResponse", 12, asked)


# --- authorization ----------------------------------------------------------------------------


def with_acl(operation: AclOperation, name: str, principal: str = "User:alice",
             permission: AclPermissionType = AclPermissionType.ALLOW) -> MetadataImage:
    return apply(image(), AccessControlEntryRecord(
        id=uuid.UUID(int=0xAC1), resource_type=AclResourceType.TOPIC,
        resource_name=name, pattern_type=AclPatternType.LITERAL, principal=principal,
        host="*", operation=operation, permission_type=permission))


AUTHORIZER = Authorizer(["User:admin"])


def test_a_principal_sees_only_the_topics_it_may_describe() -> None:
    the_image = with_acl(AclOperation.READ, "orders")  # READ implies DESCRIBE
    assert set(by_name(answer({"topics": None}, the_image=the_image,
                              authorizer=AUTHORIZER))) == {"orders"}
    assert answer({"topics": None}, the_image=image(), authorizer=AUTHORIZER)["topics"] == []


def test_a_topic_asked_for_without_describe_fails_whether_it_exists_or_not() -> None:
    found = answer({"topics": [{"name": "payments"}, {"name": "nope"}, {"name": "orders"}]},
                   the_image=with_acl(AclOperation.DESCRIBE, "orders"), authorizer=AUTHORIZER)
    assert [(t["name"], t["error_code"], t["partitions"] == []) for t in found["topics"]] == [
        ("payments", TOPIC_AUTHORIZATION_FAILED, True),
        ("nope", TOPIC_AUTHORIZATION_FAILED, True),
        ("orders", 0, False)]


def test_a_topic_id_without_describe_does_not_tell_its_name() -> None:
    # Kafka (KafkaApis.handleTopicMetadataRequest) answers an id the principal may not
    # describe with TOPIC_AUTHORIZATION_FAILED and a null name: the name is what is protected.
    found = answer({"topics": [{"name": None, "topic_id": PAYMENTS}]},
                   the_image=with_acl(AclOperation.DESCRIBE, "orders"), authorizer=AUTHORIZER)
    (topic,) = found["topics"]
    assert topic["error_code"] == TOPIC_AUTHORIZATION_FAILED
    assert topic["name"] is None


def test_a_deny_wins_and_super_users_see_everything() -> None:
    denied = with_acl(AclOperation.DESCRIBE, "orders", permission=AclPermissionType.DENY)
    assert answer({"topics": None}, the_image=denied, authorizer=AUTHORIZER)["topics"] == []
    admin = metadata_answer(denied, {"topics": None}, 12, session(principal=Principal(
        "User:admin")), AUTHORIZER, cluster_id=CLUSTER, self_id=None)
    assert {t["name"] for t in admin["topics"]} == {"orders", "payments"}


def test_without_acls_the_no_acl_setting_decides() -> None:
    open_authorizer = Authorizer(["User:admin"], allow_everyone_if_no_acl_found=True)
    assert len(answer({"topics": None}, authorizer=open_authorizer)["topics"]) == 2
    assert answer({"topics": None}, authorizer=AUTHORIZER)["topics"] == []


# --- DescribeCluster --------------------------------------------------------------------------

CONTROLLERS = [{"broker_id": 1, "host": "c1.test", "port": 9093, "rack": None},
               {"broker_id": 2, "host": "c2.test", "port": 9093, "rack": None}]


def describe(request: dict[str, Any], version: int = 1, *, self_id: int | None = 2,
             controllers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return describe_cluster_answer(image(), request, version, session(), cluster_id=CLUSTER,
                                   self_id=self_id, controllers=controllers)


def test_a_broker_describes_the_brokers() -> None:
    for version, request in ((0, {}), (1, {"endpoint_type": 1}), (1, {})):
        found = describe(request, version)
        assert found["error_code"] == 0 and found["endpoint_type"] == 1
        assert found["brokers"] == [
            {"broker_id": 1, "host": "b1.test", "port": 9091, "rack": None},
            {"broker_id": 2, "host": "b2.test", "port": 9092, "rack": "r2"}]
        assert (found["controller_id"], found["cluster_id"]) == (2, CLUSTER)


def test_a_controller_describes_the_controllers() -> None:
    found = describe({"endpoint_type": 2}, controllers=CONTROLLERS, self_id=1)
    assert (found["error_code"], found["endpoint_type"]) == (0, 2)
    assert found["brokers"] == CONTROLLERS and found["controller_id"] == 1
    assert describe({"endpoint_type": 2}, controllers=CONTROLLERS,
                    self_id=None)["controller_id"] == -1


# Kafka's rule (AuthHelper.computeDescribeClusterResponse): the other known endpoint type is
# MISMATCHED_ENDPOINT_TYPE (the admin client's MismatchedEndpointTypeException: "use
# --bootstrap-controller"), a type it does not know UNSUPPORTED_ENDPOINT_TYPE; either is
# INVALID_REQUEST at v0.


def test_a_broker_asked_for_the_controllers_answers_a_mismatch() -> None:
    found = describe({"endpoint_type": 2})
    assert (found["error_code"], found["brokers"]) == (MISMATCHED_ENDPOINT_TYPE, [])
    assert found["error_message"]


def test_a_controller_asked_for_the_brokers_answers_a_mismatch() -> None:
    found = describe({"endpoint_type": 1}, 1, controllers=CONTROLLERS)
    assert (found["error_code"], found["brokers"]) == (MISMATCHED_ENDPOINT_TYPE, [])
    assert found["error_message"]


def test_a_controller_asked_at_v0_answers_invalid_request() -> None:
    assert describe({}, 0, controllers=CONTROLLERS)["error_code"] == INVALID_REQUEST


@pytest.mark.parametrize("controllers", [None, CONTROLLERS])
def test_an_unknown_endpoint_type_is_unsupported(
        controllers: list[dict[str, Any]] | None) -> None:
    found = describe({"endpoint_type": 3}, 1, controllers=controllers)
    assert (found["error_code"], found["brokers"]) == (UNSUPPORTED_ENDPOINT_TYPE, [])


# --- every version encodes, and a stock codec reads it ----------------------------------------


def kafka_python(name: str) -> Any:
    return importlib.import_module("tests.support.kafka_messages").kafka_python_classes()[name]


@pytest.mark.parametrize("version", range(13))
def test_every_metadata_version_encodes_and_reads_back(version: int) -> None:
    request: dict[str, Any] = {"topics": [] if version == 0 else None, "include_chunks": True}
    found = answer(request, version)
    wire = encode("MetadataResponse", version, found)
    ours = decode("MetadataResponse", version, wire)
    assert [b["node_id"] for b in ours["brokers"]] == [1, 2]
    theirs = kafka_python("MetadataResponse").decode(wire, version=version)
    assert sorted(t.name for t in theirs.topics) == ["orders", "payments"]
    orders = next(t for t in theirs.topics if t.name == "orders")
    assert [(p.partition_index, p.leader_id, p.error_code) for p in orders.partitions] == [
        (0, 1, 0), (1, 3, LEADER_NOT_AVAILABLE)]
    if version >= 10:
        assert orders.topic_id == ORDERS


@pytest.mark.parametrize("version", range(13))
def test_error_topics_encode_at_every_version(version: int) -> None:
    found = answer({"topics": [{"name": "nope", "topic_id": ZERO_UUID},
                               {"name": "orders", "topic_id": ZERO_UUID}]}, version,
                   authorizer=AUTHORIZER, the_image=with_acl(AclOperation.DESCRIBE, "orders"))
    theirs = kafka_python("MetadataResponse").decode(
        encode("MetadataResponse", version, found), version=version)
    assert [(t.name, t.error_code) for t in theirs.topics] == [
        ("nope", TOPIC_AUTHORIZATION_FAILED), ("orders", 0)]


@pytest.mark.parametrize("version", range(2))
@pytest.mark.parametrize("controllers", [None, CONTROLLERS])
def test_every_describe_cluster_version_encodes_and_reads_back(
        version: int, controllers: list[dict[str, Any]] | None) -> None:
    request: dict[str, Any] = {"endpoint_type": 2 if controllers else 1}
    found = describe(request, version, controllers=controllers)
    wire = encode("DescribeClusterResponse", version, found)
    theirs = kafka_python("DescribeClusterResponse").decode(wire, version=version)
    assert theirs.cluster_id == CLUSTER
    assert theirs.error_code == found["error_code"]
    assert [b.broker_id for b in theirs.brokers] == [b["broker_id"] for b in found["brokers"]]
    if controllers is None or version == 1:
        assert [b.broker_id for b in theirs.brokers] == [1, 2]
