from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.record_budget import MAX_RECORDS_PER_USER_OP
from chunkraft.controller.operations.topics import create_topics, delete_topics, describe
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.topics import (
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicState,
    MetadataRequest,
    MetadataResponsePartition,
)
from chunkraft.records import (
    PartitionChangeRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    RemoveTopicRecord,
    TopicRecord,
)
from chunkraft.records.uuids import kafka_uuid_str
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    OTHER_ID,
    apply,
    chunk,
    cluster,
    commit_valid,
    partition,
    partition_of,
    topic_of,
    with_topic,
)


def _ids() -> Callable[[], uuid.UUID]:
    counter: Iterator[int] = itertools.count(1)
    return lambda: uuid.UUID(int=0xF00 + next(counter))


def _create(image: MetadataImage, *topics: dict[str, Any], validate_only: bool = False,
            **options: Any) -> ControllerResult[CreateTopicsResponse]:
    request = CreateTopicsRequest.model_validate(
        {"topics": list(topics), "validate_only": validate_only})
    return create_topics(image, request, new_topic_id=_ids(), **options)


def _by_name(result: ControllerResult[CreateTopicsResponse]) -> dict[str, CreatableTopicResult]:
    return {t.name: t for t in result.response.topics}


def _error(result: CreatableTopicResult) -> tuple[Errors, str | None]:
    return Errors.for_code(result.error_code), result.error_message


# ------------------------------------------------------------------ create_topics


def test_create_topic_writes_a_topic_and_its_partitions() -> None:
    image = cluster((0, 1, 2))
    result = _create(image, {"name": "orders", "num_partitions": 3, "replication_factor": 2})
    (response,) = result.response.topics
    assert (response.error_code, response.num_partitions, response.replication_factor) == (
        0, 3, 2)
    topic_id = uuid.UUID(int=0xF01)
    assert response.topic_id == kafka_uuid_str(topic_id)
    assert result.records[0] == TopicRecord(name="orders", topic_id=topic_id)
    assert [type(r) for r in result.records] == [TopicRecord] + [PartitionRecord] * 3

    after = commit_valid(image, result)
    topic = topic_of(after)
    assert topic.topic_id == topic_id and sorted(topic.partitions) == [0, 1, 2]
    for index in range(3):
        p = partition_of(after, index)
        assert len(p.replicas) == 2 and len(set(p.replicas)) == 2
        assert (p.isr, p.leader) == (p.replicas, p.replicas[0])
        assert (p.leader_epoch, p.partition_epoch, p.start_offset, p.start_timestamp) == (
            0, 0, 0, -1)
        assert p.prior_partition_epochs == ()
    assert {partition_of(after, i).leader for i in range(3)} == {0, 1, 2}  # leaders spread


def test_minus_one_takes_the_controllers_defaults() -> None:
    result = _create(cluster((0, 1, 2)), {"name": "orders"},
                     default_num_partitions=4, default_replication_factor=3)
    (response,) = result.response.topics
    assert (response.num_partitions, response.replication_factor) == (4, 3)
    assert len(result.records) == 5


def test_manual_assignment_places_partitions_as_given() -> None:
    image = cluster((0, 1, 2))
    result = _create(image, {"name": "orders", "assignments": [
        {"partition_index": 1, "broker_ids": [2, 0]},
        {"partition_index": 0, "broker_ids": [1, 2]},
    ]})
    assert result.response.topics[0].error_code == 0
    after = commit_valid(image, result)
    assert partition_of(after, 0).replicas == (1, 2) and partition_of(after, 0).leader == 1
    assert partition_of(after, 1).replicas == (2, 0) and partition_of(after, 1).leader == 2


@pytest.mark.parametrize(
    ("topic", "error", "message"),
    [
        ({"num_partitions": 1, "assignments": [{"partition_index": 0, "broker_ids": [0]}]},
         Errors.INVALID_REQUEST, "A manual partition assignment was specified, but "
         "numPartitions was not set to -1."),
        ({"replication_factor": 1, "assignments": [{"partition_index": 0, "broker_ids": [0]}]},
         Errors.INVALID_REQUEST, "A manual partition assignment was specified, but replication "
         "factor was not set to -1."),
        ({"assignments": [{"partition_index": 0, "broker_ids": [0]},
                          {"partition_index": 0, "broker_ids": [1]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "Found multiple manual partition assignments for partition 0"),
        ({"assignments": [{"partition_index": 0, "broker_ids": [0, 1]},
                          {"partition_index": 1, "broker_ids": [1]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes a "
         "partition with 1 replica(s), but this is not consistent with previous partitions, "
         "which have 2 replica(s)."),
        ({"assignments": [{"partition_index": 0, "broker_ids": [0]},
                          {"partition_index": 2, "broker_ids": [1]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "partitions should be a consecutive 0-based integer sequence"),
        ({"assignments": [{"partition_index": 0, "broker_ids": [0, 7]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker 7, "
         "but no such broker is registered."),
        ({"assignments": [{"partition_index": 0, "broker_ids": [1, 1]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes the broker 1 more than once."),
        ({"assignments": [{"partition_index": 0, "broker_ids": []}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes an empty replica list."),
        ({"assignments": [{"partition_index": 0, "broker_ids": [0, 3]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 3, which is fenced."),
        ({"replication_factor": 0}, Errors.INVALID_REPLICATION_FACTOR,
         "Replication factor must be larger than 0, or -1 to use the default value."),
        ({"replication_factor": -2}, Errors.INVALID_REPLICATION_FACTOR,
         "Replication factor must be larger than 0, or -1 to use the default value."),
        ({"num_partitions": 0}, Errors.INVALID_PARTITIONS,
         "Number of partitions was set to an invalid non-positive value."),
        ({"replication_factor": 4}, Errors.INVALID_REPLICATION_FACTOR,
         "Unable to replicate the partition 4 time(s): The target replication factor of 4 "
         "cannot be reached because only 3 broker(s) are registered and usable (1 more are "
         "fenced or in controlled shutdown)."),
    ],
)
def test_bad_topic_specs_are_refused_with_kafkas_errors(
    topic: dict[str, Any], error: Errors, message: str
) -> None:
    image = cluster((0, 1, 2, 3), fenced=(3,))
    result = _create(image, {"name": "orders", **topic}, {"name": "ok"})
    outcomes = _by_name(result)
    assert _error(outcomes["orders"]) == (error, message)
    assert outcomes["orders"].topic_id is None and outcomes["orders"].num_partitions == -1
    # The other topic of the request is created, and nothing of the refused one is written.
    assert outcomes["ok"].error_code == 0
    assert [r.name for r in result.records if isinstance(r, TopicRecord)] == ["ok"]
    after = commit_valid(image, result)
    assert after.topics.get_by_name("orders") is None
    assert len(topic_of(after, "ok").partitions) == 1


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is illegal, it can't be empty"),
        (".", 'Topic name cannot be "." or ".."'),
        ("..", 'Topic name cannot be "." or ".."'),
        ("a" * 250, "Topic name is illegal, it can't be longer than 249 characters, topic "
                    "name: " + "a" * 250),
        ("bad name", 'Topic name "bad name" is illegal, it contains a character other than '
                     "ASCII alphanumerics, '.', '_' and '-'"),
    ],
)
def test_illegal_names_are_invalid_topic_exceptions(name: str, message: str) -> None:
    result = _create(cluster(), {"name": name})
    assert _error(result.response.topics[0]) == (Errors.INVALID_TOPIC_EXCEPTION, message)
    assert result.records == ()


def test_a_name_of_249_characters_is_legal() -> None:
    result = _create(cluster(), {"name": "a" * 249})
    assert result.response.topics[0].error_code == 0


def test_existing_duplicate_and_colliding_names() -> None:
    image = with_topic(cluster(), "orders")
    image = with_topic(image, "in_flight", replicas=((0,),), topic_id=OTHER_ID)
    result = _create(image, {"name": "orders"}, {"name": "twice"}, {"name": "in.flight"},
                     {"name": "twice"}, {"name": "new.one"}, {"name": "new_one"})
    outcomes = _by_name(result)
    assert list(outcomes) == ["orders", "twice", "in.flight", "new.one", "new_one"]
    assert _error(outcomes["orders"]) == (Errors.TOPIC_ALREADY_EXISTS,
                                          "Topic 'orders' already exists.")
    assert _error(outcomes["twice"]) == (Errors.INVALID_REQUEST, "Duplicate topic name.")
    assert _error(outcomes["in.flight"]) == (
        Errors.INVALID_TOPIC_EXCEPTION, "Topic 'in.flight' collides with existing topic: in_flight")
    assert outcomes["new.one"].error_code == 0
    assert _error(outcomes["new_one"]) == (
        Errors.INVALID_TOPIC_EXCEPTION, "Topic 'new_one' collides with existing topic: new.one")
    assert [r.name for r in result.records if isinstance(r, TopicRecord)] == ["new.one"]


def test_validate_only_answers_the_same_and_writes_nothing() -> None:
    image = cluster((0, 1))
    topics = ({"name": "orders", "num_partitions": 2, "replication_factor": 2},
              {"name": "wide", "replication_factor": 3})
    real = _create(image, *topics)
    dry = _create(image, *topics, validate_only=True)
    assert dry.records == ()
    assert commit_valid(image, dry) is image
    assert [(t.name, t.error_code, t.error_message, t.num_partitions, t.replication_factor)
            for t in dry.response.topics] == [
        (t.name, t.error_code, t.error_message, t.num_partitions, t.replication_factor)
        for t in real.response.topics]
    codes = [Errors.for_code(t.error_code) for t in dry.response.topics]
    assert codes == [Errors.NONE, Errors.INVALID_REPLICATION_FACTOR]
    assert all(t.topic_id is None for t in dry.response.topics)


def test_a_drawn_topic_id_already_in_use_is_drawn_again() -> None:
    image = with_topic(cluster(), topic_id=uuid.UUID(int=0xF01))
    result = _create(image, {"name": "fresh"}, {"name": "fresher"})
    ids = [r.topic_id for r in result.records if isinstance(r, TopicRecord)]
    assert ids == [uuid.UUID(int=0xF02), uuid.UUID(int=0xF03)]
    commit_valid(image, result)


def test_the_record_limit_refuses_topics_that_would_exceed_it() -> None:
    image = cluster((0,))
    fits = MAX_RECORDS_PER_USER_OP - 1  # one TopicRecord + 9,999 PartitionRecords
    result = _create(image, {"name": "big", "num_partitions": fits, "replication_factor": 1},
                     {"name": "one_more", "num_partitions": 1, "replication_factor": 1},
                     {"name": "huge", "num_partitions": fits + 1, "replication_factor": 1})
    outcomes = _by_name(result)
    assert outcomes["big"].error_code == 0
    assert len(result.records) == MAX_RECORDS_PER_USER_OP
    assert _error(outcomes["one_more"]) == (
        Errors.POLICY_VIOLATION,
        "Creating topic 'one_more' needs 2 records, but only 0 of the 10000 records one "
        "operation may write are left after the items before it; send it in a separate request.")
    assert _error(outcomes["huge"]) == (
        Errors.POLICY_VIOLATION,
        "Creating topic 'huge' needs 10001 records, but one operation writes at most 10000; "
        "split it into smaller steps.")
    after = commit_valid(image, result)
    assert len(topic_of(after, "big").partitions) == fits


def test_malformed_requests_fail_validation() -> None:
    with pytest.raises(ValidationError):
        CreateTopicsRequest.model_validate(
            {"topics": [{"name": "x", "configs": [{"name": "retention.ms", "value": 1}]}]})
    with pytest.raises(ValidationError):
        CreateTopicsRequest.model_validate({"topics": [{"name": "x", "num_partitions": "3"}]})
    with pytest.raises(ValidationError):
        CreateTopicsRequest.model_validate({"topics": [{"name": "x", "num_partitions": 2**31}]})


# ------------------------------------------------------------------ delete_topics


def _two_topics() -> MetadataImage:
    image = with_topic(cluster(), "orders")
    image = with_topic(image, "payments", replicas=((0,),), topic_id=OTHER_ID)
    return apply(image, chunk(0, 9, 9, (0, 1)))


def test_delete_by_name_and_by_id_removes_topics_with_their_chunks() -> None:
    image = _two_topics()
    request = DeleteTopicsRequest(topic_names=("orders",),
                                  topics=(DeleteTopicState(topic_id=OTHER_ID.hex),))
    result = delete_topics(image, request)
    assert result.records == (RemoveTopicRecord(topic_id=ORDERS_ID),
                              RemoveTopicRecord(topic_id=OTHER_ID))
    assert [(r.name, r.topic_id, r.error_code) for r in result.response.responses] == [
        ("orders", kafka_uuid_str(ORDERS_ID), 0), ("payments", OTHER_ID.hex, 0)]
    after = commit_valid(image, result)
    assert len(after.topics) == 0 and after.topics.chunk_count() == 0


def test_delete_errors() -> None:
    image = _two_topics()
    unknown_id = kafka_uuid_str(uuid.UUID(int=0xDEAD))
    request = DeleteTopicsRequest.model_validate({
        "topic_names": ["twice", "twice", "ghost"],
        "topics": [
            {"name": "orders", "topic_id": kafka_uuid_str(ORDERS_ID)},
            {},
            {"topic_id": unknown_id},
            {"topic_id": "not-a-uuid"},
            {"topic_id": kafka_uuid_str(OTHER_ID)},
            {"topic_id": kafka_uuid_str(OTHER_ID)},
        ],
    })
    result = delete_topics(image, request)
    assert result.records == ()
    assert [(r.name, r.topic_id, Errors.for_code(r.error_code), r.error_message)
            for r in result.response.responses] == [
        ("twice", None, Errors.INVALID_REQUEST, "Duplicate topic name."),
        ("ghost", None, Errors.UNKNOWN_TOPIC_OR_PARTITION, "Topic 'ghost' does not exist."),
        ("orders", kafka_uuid_str(ORDERS_ID), Errors.INVALID_REQUEST,
         "You may not specify both topic name and topic id."),
        (None, None, Errors.INVALID_REQUEST, "Neither topic name nor id were specified."),
        (None, unknown_id, Errors.UNKNOWN_TOPIC_ID, f"Topic id {unknown_id} does not exist."),
        (None, "not-a-uuid", Errors.INVALID_REQUEST, "Invalid topic id 'not-a-uuid'."),
        (None, kafka_uuid_str(OTHER_ID), Errors.INVALID_REQUEST, "Duplicate topic id."),
    ]
    assert commit_valid(image, result) is image


def test_one_id_in_two_text_forms_is_a_duplicate() -> None:
    image = _two_topics()
    request = DeleteTopicsRequest(topics=(DeleteTopicState(topic_id=ORDERS_ID.hex),
                                          DeleteTopicState(topic_id=kafka_uuid_str(ORDERS_ID))))
    result = delete_topics(image, request)
    assert [(r.topic_id, r.error_message) for r in result.response.responses] == [
        (ORDERS_ID.hex, "Duplicate topic id.")]
    assert result.records == ()


def test_a_name_that_resolves_to_an_id_also_given_is_refused_and_the_id_deletes() -> None:
    image = _two_topics()
    request = DeleteTopicsRequest.model_validate(
        {"topic_names": ["orders"], "topics": [{"topic_id": kafka_uuid_str(ORDERS_ID)}]})
    result = delete_topics(image, request)
    first, second = result.response.responses
    assert (first.name, Errors.for_code(first.error_code), first.error_message) == (
        "orders", Errors.INVALID_REQUEST,
        "The provided topic name maps to an ID that was already supplied.")
    assert (second.name, second.error_code) == ("orders", 0)
    assert result.records == (RemoveTopicRecord(topic_id=ORDERS_ID),)
    assert commit_valid(image, result).topics.get_by_name("orders") is None


# ------------------------------------------------------------------ describe


def _described_image() -> MetadataImage:
    image = cluster((0, 1, 2), racks={0: "r0"}, fenced=(2,))
    image = with_topic(image, "orders", replicas=((0, 1), (2, 1), (1, 2)))
    return apply(
        image,
        TopicRecord(name="payments", topic_id=OTHER_ID),
        partition(0, (1,), OTHER_ID, leader=-1, isr=(1,), leader_epoch=4),
        partition(1, (0,), OTHER_ID, leader_epoch=2, prior_partition_epochs=(
            PriorPartitionEpoch(partition_id=0, leader_epoch=3),)),
        chunk(0, 9, 11, (0, 1), start_timestamp=5),
        chunk(12, 19, 19, (1, 2), adding_replicas=(2,), removing_replicas=(0,),
              epoch=3),
        PartitionChangeRecord(partition_id=0, topic_id=ORDERS_ID, start_offset=20,
                              start_timestamp=77),
    )


def test_describe_everything() -> None:
    image = _described_image()
    result = describe(image, MetadataRequest(), cluster_id="c1", controller_id=3001)
    response = result.response
    assert result.records == ()
    assert (response.cluster_id, response.controller_id, response.metadata_offset) == (
        "c1", 3001, image.offset)
    assert [(b.node_id, b.host, b.port, b.rack, b.fenced) for b in response.brokers] == [
        (0, "b0.test", 9000, "r0", False), (1, "b1.test", 9001, None, False),
        (2, "b2.test", 9002, None, True)]
    assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
        ("orders", kafka_uuid_str(ORDERS_ID), 0), ("payments", kafka_uuid_str(OTHER_ID), 0)]
    orders, payments = response.topics
    p0, p1, p2 = orders.partitions
    assert (p0.partition_index, p0.leader_id, p0.leader_epoch, p0.replica_nodes, p0.isr_nodes,
            p0.offline_replicas, p0.start_offset, p0.start_timestamp, p0.error_code) == (
        0, 0, 0, (0, 1), (0, 1), (), 20, 77, 0)
    assert [(c.start_offset, c.start_timestamp, c.stop_offset, c.end_offset, c.chunk_epoch,
             c.replicas, c.isr, c.adding_replicas, c.removing_replicas) for c in p0.chunks] == [
        (0, 5, 9, 11, 0, (0, 1), (0, 1), (), ()),
        (12, 1012, 19, 19, 3, (1, 2), (1, 2), (2,), (0,))]
    # The leader of partition 1 is fenced: it is named, but the partition has no usable leader.
    assert (p1.leader_id, p1.offline_replicas, Errors.for_code(p1.error_code)) == (
        2, (2,), Errors.LEADER_NOT_AVAILABLE)
    assert (p2.error_code, p2.offline_replicas, p2.chunks) == (0, (2,), ())
    leaderless, expanded = payments.partitions
    assert (leaderless.leader_id, leaderless.leader_epoch) == (-1, 4)
    assert Errors.for_code(leaderless.error_code) is Errors.LEADER_NOT_AVAILABLE
    assert [(p.partition_index, p.leader_epoch) for p in expanded.prior_partition_epochs] == [
        (0, 3)]


def test_describe_without_chunks() -> None:
    response = describe(_described_image(), MetadataRequest(include_chunks=False),
                        cluster_id=None, controller_id=-1).response
    partitions: list[MetadataResponsePartition] = [
        p for t in response.topics for p in t.partitions]
    assert all(p.chunks == () for p in partitions)


def test_describe_requested_topics() -> None:
    image = _described_image()
    unknown_id = kafka_uuid_str(uuid.UUID(int=0xDEAD))
    request = MetadataRequest.model_validate({"topics": [
        {"name": "payments"}, {"topic_id": kafka_uuid_str(ORDERS_ID)}, {"name": "payments"},
        {"name": "ghost"}, {"topic_id": unknown_id}, {"topic_id": "nope"}, {},
    ]})
    topics = describe(image, request, cluster_id="c", controller_id=1).response.topics
    assert [(t.name, t.topic_id, Errors.for_code(t.error_code), t.error_message, len(t.partitions))
            for t in topics] == [
        ("payments", kafka_uuid_str(OTHER_ID), Errors.NONE, None, 2),
        ("orders", kafka_uuid_str(ORDERS_ID), Errors.NONE, None, 3),
        ("ghost", None, Errors.UNKNOWN_TOPIC_OR_PARTITION, "Topic 'ghost' does not exist.", 0),
        (None, unknown_id, Errors.UNKNOWN_TOPIC_ID, f"Topic id {unknown_id} does not exist.", 0),
        (None, "nope", Errors.INVALID_REQUEST, "Invalid topic id 'nope'.", 0),
        (None, None, Errors.INVALID_REQUEST, "Neither topic name nor id were specified.", 0),
    ]
