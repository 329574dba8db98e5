from __future__ import annotations

import itertools
import uuid
from typing import Any

from chunkraft.api.authorized import (
    alter_chunk_assignments_as,
    create_chunks_as,
    create_partitions_as,
    create_topics_as,
    delete_topics_as,
    describe_as,
)
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from chunkraft.protocol.chunks import AlterChunkAssignmentsRequest, CreateChunksRequest
from chunkraft.protocol.topics import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    MetadataRequest,
)
from chunkraft.records import AccessControlEntryRecord, RemoveTopicRecord
from chunkraft.records.uuids import kafka_uuid_str
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    OTHER_ID,
    apply,
    chunk,
    cluster,
    with_topic,
)

ALICE = Principal("User:alice")
AUTHORIZER = Authorizer(["User:admin"])
DENIED = Errors.TOPIC_AUTHORIZATION_FAILED.code
_ids = itertools.count(1)


def grant(operation: AclOperation, name: str = "orders", *,
          resource_type: AclResourceType = AclResourceType.TOPIC,
          principal: str = "User:alice") -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.UUID(int=next(_ids)), resource_type=resource_type, resource_name=name,
        pattern_type=AclPatternType.LITERAL, principal=principal, host="*",
        operation=operation, permission_type=AclPermissionType.ALLOW)


def topics_image(*acls: AccessControlEntryRecord) -> MetadataImage:
    image = with_topic(cluster(), "orders")
    image = with_topic(image, "payments", topic_id=OTHER_ID)
    image = apply(image, chunk(0, 9, 9, (0, 1), partition_id=0, topic_id=ORDERS_ID),
                  chunk(0, 9, 9, (0, 1), partition_id=0, topic_id=OTHER_ID))
    return apply(image, *acls) if acls else image


def codes(results: Any) -> list[tuple[str | None, int]]:
    return [(getattr(r, "name", None), r.error_code) for r in results]


# ------------------------------------------------------------------ CreateTopics


def create_request(*names: str) -> CreateTopicsRequest:
    return CreateTopicsRequest.model_validate(
        {"topics": [{"name": n, "num_partitions": 1, "replication_factor": 1} for n in names]})


def test_create_topics_refuses_each_topic_without_create_in_request_order() -> None:
    image = topics_image(grant(AclOperation.CREATE, "new1"))
    result = create_topics_as(ALICE, AUTHORIZER, create_request("new2", "new1"))(image)
    assert codes(result.response.topics) == [("new2", DENIED), ("new1", 0)]
    assert "User:alice is not authorized to CREATE topic 'new2'" in (
        result.response.topics[0].error_message or "")
    assert {r.name for r in result.records if hasattr(r, "name")} == {"new1"}


def test_a_duplicate_name_is_invalid_before_it_is_unauthorized() -> None:
    image = topics_image()
    result = create_topics_as(ALICE, AUTHORIZER, create_request("x", "x", "y"))(image)
    assert codes(result.response.topics) == [("x", Errors.INVALID_REQUEST.code), ("y", DENIED)]
    assert result.records == ()


def test_create_on_the_cluster_allows_every_topic() -> None:
    image = topics_image(grant(AclOperation.CREATE, "kafka-cluster",
                               resource_type=AclResourceType.CLUSTER))
    result = create_topics_as(ALICE, AUTHORIZER, create_request("a", "b"))(image)
    assert codes(result.response.topics) == [("a", 0), ("b", 0)]


def test_a_super_user_is_never_refused() -> None:
    result = create_topics_as(Principal("User:admin"), AUTHORIZER, create_request("a"))(
        topics_image())
    assert codes(result.response.topics) == [("a", 0)]


# ------------------------------------------------------------------ CreatePartitions


def test_create_partitions_needs_alter_and_hides_whether_a_topic_exists() -> None:
    image = topics_image(grant(AclOperation.ALTER, "orders"))
    request = CreatePartitionsRequest.model_validate({"topics": [
        {"name": "payments", "count": 5}, {"name": "ghost", "count": 5},
        {"name": "orders", "count": 4}]})
    result = create_partitions_as(ALICE, AUTHORIZER, request)(image)
    assert codes(result.response.results) == [("payments", DENIED), ("ghost", DENIED),
                                              ("orders", 0)]
    assert result.records and all(getattr(r, "topic_id", ORDERS_ID) == ORDERS_ID
                                  for r in result.records)


# ------------------------------------------------------------------ DeleteTopics


def test_delete_topics_by_name_needs_describe_and_delete() -> None:
    image = topics_image(grant(AclOperation.DESCRIBE, "payments"),
                         grant(AclOperation.DELETE, "orders"))
    request = DeleteTopicsRequest(topic_names=("payments", "orders", "ghost"))
    result = delete_topics_as(ALICE, AUTHORIZER, request)(image)
    assert codes(result.response.responses) == [("payments", DENIED), ("orders", 0),
                                                ("ghost", DENIED)]
    assert result.records == (RemoveTopicRecord(topic_id=ORDERS_ID),)


def test_delete_by_the_id_of_a_topic_that_is_not_describable_looks_unknown() -> None:
    image = topics_image(grant(AclOperation.DESCRIBE, "orders"))
    request = DeleteTopicsRequest.model_validate({"topics": [
        {"topic_id": kafka_uuid_str(OTHER_ID)}, {"topic_id": kafka_uuid_str(ORDERS_ID)}]})
    result = delete_topics_as(ALICE, AUTHORIZER, request)(image)
    answers = result.response.responses
    assert [(a.name, a.error_code) for a in answers] == [
        (None, Errors.UNKNOWN_TOPIC_ID.code), ("orders", DENIED)]
    assert result.records == ()


def test_refused_and_answered_entries_keep_the_operation_order() -> None:
    image = topics_image(grant(AclOperation.DELETE, "orders"))
    request = DeleteTopicsRequest.model_validate({
        "topic_names": ["payments", "orders", "orders"],
        "topics": [{"topic_id": kafka_uuid_str(OTHER_ID)}]})
    result = delete_topics_as(ALICE, AUTHORIZER, request)(image)
    assert [(a.name, a.error_code) for a in result.response.responses] == [
        ("payments", DENIED), ("orders", Errors.INVALID_REQUEST.code),
        (None, Errors.UNKNOWN_TOPIC_ID.code)]


# ------------------------------------------------------------------ chunks


def cut(topic: str, start: int = 10) -> dict[str, Any]:
    return {"name": topic, "partitions": [{
        "partition_index": 0, "broker_ids": [1, 2], "prev_stop_offset": start - 1,
        "prev_end_offset": start - 1, "start_offset": start, "start_timestamp": 5000}]}


def test_create_chunks_from_an_admin_needs_alter_per_topic() -> None:
    image = topics_image(grant(AclOperation.ALTER, "orders"))
    request = CreateChunksRequest.model_validate({"topics": [cut("payments"), cut("orders")]})
    result = create_chunks_as(ALICE, AUTHORIZER, request)(image)
    assert [(t.name, [p.error_code for p in t.partitions]) for t in result.response.topics] == [
        ("payments", [DENIED]), ("orders", [0])]
    assert len(result.records) == 2


def test_create_chunks_from_a_broker_must_come_from_that_broker() -> None:
    image = topics_image(grant(AclOperation.CLUSTER_ACTION, "kafka-cluster",
                               resource_type=AclResourceType.CLUSTER, principal="User:*"))
    request = CreateChunksRequest.model_validate(
        {"topics": [cut("orders")], "broker_id": 0, "broker_epoch": 100})
    refused = create_chunks_as(Principal("User:broker-1"), AUTHORIZER, request)(image)
    assert refused.response.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED.code
    assert refused.records == ()
    accepted = create_chunks_as(Principal("User:broker-0"), AUTHORIZER, request)(image)
    assert accepted.response.error_code == 0
    assert [p.error_code for p in accepted.response.topics[0].partitions] == [0]


def test_alter_chunk_assignments_needs_alter_per_chunk_topic() -> None:
    image = topics_image(grant(AclOperation.ALTER, "orders"))
    request = AlterChunkAssignmentsRequest.model_validate({"chunks": [
        {"topic_name": "payments", "partition_id": 0, "start_offset": 0, "broker_ids": [1, 2]},
        {"topic_name": "orders", "partition_id": 0, "start_offset": 0, "broker_ids": [1, 2]}]})
    result = alter_chunk_assignments_as(ALICE, AUTHORIZER, request)(image)
    assert [(r.topic_name, r.error_code) for r in result.response.results] == [
        ("payments", DENIED), ("orders", 0)]
    assert len(result.records) == 1


# ------------------------------------------------------------------ Metadata


def test_metadata_of_all_topics_leaves_out_what_may_not_be_described() -> None:
    image = topics_image(grant(AclOperation.READ, "orders"))
    response = describe_as(image, ALICE, AUTHORIZER, MetadataRequest(), cluster_id="c",
                           controller_id=1)
    assert [t.name for t in response.topics] == ["orders"]


def test_metadata_of_named_topics_refuses_each_one_not_describable() -> None:
    image = topics_image(grant(AclOperation.READ, "orders"))
    request = MetadataRequest.model_validate({"topics": [
        {"name": "payments"}, {"name": "ghost"}, {"name": "orders"}]})
    response = describe_as(image, ALICE, AUTHORIZER, request, cluster_id="c", controller_id=1)
    assert [(t.name, t.error_code, len(t.partitions)) for t in response.topics] == [
        ("payments", DENIED, 0), ("ghost", DENIED, 0), ("orders", 0, 3)]
