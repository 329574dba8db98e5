"""CreateTopics, DeleteTopics and CreatePartitions: Kafka request -> route body -> Kafka
response, with kafka-python's classes writing the requests and reading the answers."""

from __future__ import annotations

import uuid

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin import topics
from chunkraft.kafka.admin.common import ROUTES, ZERO_UUID, AdminApi
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.protocol.configs import (
    DescribeConfigsEntry,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from chunkraft.protocol.topics import (
    CreatableTopicResult,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsResponse,
)
from chunkraft.records.uuids import kafka_uuid_str
from tests.unit.controller.operations.cluster_builders import cluster
from tests.unit.kafka.admin.support import (
    SESSION,
    FakeGateway,
    ImageGateway,
    as_client_reads,
    from_kafka_python,
    kp,
    run,
)

CREATE = ROUTES[AdminApi.CREATE_TOPICS]
DELETE = ROUTES[AdminApi.DELETE_TOPICS]
PARTITIONS = ROUTES[AdminApi.CREATE_PARTITIONS]
DESCRIBE = ROUTES[AdminApi.DESCRIBE_CONFIGS]
ORDERS_ID = uuid.UUID(int=0x0DDE125)


def create_request(version: int, validate_only: bool = False) -> object:
    cls = kp("CreateTopicsRequest")
    return cls(topics=[
        cls.CreatableTopic(name="orders", num_partitions=3, replication_factor=2, assignments=[],
                           configs=[cls.CreatableTopic.CreatableTopicConfig(
                               name="retention.ms", value="1000")]),
        cls.CreatableTopic(name="manual", num_partitions=-1, replication_factor=-1, configs=[],
                           assignments=[
                               cls.CreatableTopic.CreatableReplicaAssignment(
                                   partition_index=0, broker_ids=[1, 2]),
                               cls.CreatableTopic.CreatableReplicaAssignment(
                                   partition_index=1, broker_ids=[2, 3])]),
    ], timeout_ms=1234, validate_only=validate_only)


def created(validate_only: bool = False) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=(
        CreatableTopicResult(name="orders",
                             topic_id=None if validate_only else kafka_uuid_str(ORDERS_ID),
                             num_partitions=3, replication_factor=2),
        CreatableTopicResult(name="manual", error_code=Errors.TOPIC_ALREADY_EXISTS.code,
                             error_message="Topic 'manual' already exists."),
    ))


ORDERS_CONFIGS = DescribeConfigsResponse(results=(DescribeConfigsResult(
    resource_type=2, resource_name="orders", configs=(
        DescribeConfigsEntry(name="segment.bytes", value="1073741824", config_source=5,
                             is_default=True),
        DescribeConfigsEntry(name="retention.ms", value="1000", config_source=1),
    )),))


@pytest.mark.parametrize("version", [2, 4, 5, 7])
def test_create_topics_sends_the_topics_and_answers_each(version: int) -> None:
    gateway = FakeGateway({CREATE: created(), DESCRIBE: ORDERS_CONFIGS})
    request = from_kafka_python(AdminApi.CREATE_TOPICS, "CreateTopics", version,
                                create_request(version))
    response = run(topics.create_topics, request, gateway)

    assert gateway.bodies(CREATE) == [{
        "topics": [
            {"name": "orders", "num_partitions": 3, "replication_factor": 2, "assignments": [],
             "configs": [{"name": "retention.ms", "value": "1000"}]},
            {"name": "manual", "num_partitions": -1, "replication_factor": -1, "configs": [],
             "assignments": [{"partition_index": 0, "broker_ids": [1, 2]},
                             {"partition_index": 1, "broker_ids": [2, 3]}]},
        ],
        "timeout_ms": 1234, "validate_only": False}]
    assert gateway.sessions[0] is SESSION
    answer = as_client_reads("CreateTopics", version, response)
    assert answer.throttle_time_ms == 0
    orders, manual = answer.topics
    assert (orders.name, orders.error_code, orders.error_message) == ("orders", 0, None)
    assert (manual.name, manual.error_code) == ("manual", Errors.TOPIC_ALREADY_EXISTS.code)
    assert manual.error_message == "Topic 'manual' already exists."
    fields = orders.to_dict()
    assert ("topic_id" in fields) is (version >= 7)
    assert ("configs" in fields) is (version >= 5)
    if version >= 7:
        assert orders.topic_id == ORDERS_ID
    if version >= 5:
        # Kafka fills these for a created topic: its size and its effective configuration.
        assert (orders.num_partitions, orders.replication_factor) == (3, 2)
        assert (manual.num_partitions, manual.replication_factor) == (-1, -1)
        assert [(c.name, c.value, c.config_source) for c in orders.configs] == [
            ("retention.ms", "1000", 1), ("segment.bytes", "1073741824", 5)]
        assert manual.configs == []
        assert gateway.bodies(DESCRIBE) == [{
            "resources": [{"resource_type": 2, "resource_name": "orders",
                           "configuration_keys": None}], "include_all": True}]
    else:
        assert gateway.bodies(DESCRIBE) == []


@pytest.mark.parametrize("version", [3, 5, 7])
def test_create_topics_validate_only_passes_through_and_lays_configs_over_defaults(
        version: int) -> None:
    defaults = DescribeConfigsResponse(results=(DescribeConfigsResult(
        resource_type=4, resource_name="", configs=(
            DescribeConfigsEntry(name="log.retention.ms", value="5", config_source=3),
            DescribeConfigsEntry(name="log.segment.bytes", value="1073741824",
                                 config_source=5, is_default=True),
        )),))
    gateway = FakeGateway({CREATE: created(validate_only=True), DESCRIBE: defaults})
    request = from_kafka_python(AdminApi.CREATE_TOPICS, "CreateTopics", version,
                                create_request(version, validate_only=True))
    response = run(topics.create_topics, request, gateway)

    assert gateway.bodies(CREATE)[0]["validate_only"] is True
    orders = as_client_reads("CreateTopics", version, response).topics[0]
    assert orders.error_code == 0
    if version < 5:
        assert gateway.bodies(DESCRIBE) == []
        return
    (sent,) = gateway.bodies(DESCRIBE)
    assert sent["resources"][0]["resource_type"] == 4
    assert sent["resources"][0]["resource_name"] == ""
    assert "log.retention.ms" in sent["resources"][0]["configuration_keys"]
    # The topic's own value wins over the cluster default; unset keys show the default's.
    assert [(c.name, c.value, c.config_source) for c in orders.configs] == [
        ("retention.ms", "1000", 1), ("segment.bytes", "1073741824", 5)]
    if version >= 7:
        assert orders.topic_id in (None, ZERO_UUID)  # kafka-python reads the zero uuid as None


def test_create_topics_configs_refused_costs_the_configs_not_the_topics() -> None:
    refused = GatewayError(403, Errors.CLUSTER_AUTHORIZATION_FAILED, "no")
    gateway = FakeGateway({CREATE: created(), DESCRIBE: refused})
    request = from_kafka_python(AdminApi.CREATE_TOPICS, "CreateTopics", 7, create_request(7))
    orders, manual = as_client_reads("CreateTopics", 7,
                                     run(topics.create_topics, request, gateway)).topics
    assert orders.error_code == 0
    assert orders.topic_config_error_code == Errors.CLUSTER_AUTHORIZATION_FAILED.code
    assert orders.configs == []
    assert manual.topic_config_error_code == 0


@pytest.mark.parametrize("version", [2, 5, 7])
def test_create_topics_whole_request_error_answers_every_topic(version: int) -> None:
    gateway = FakeGateway({CREATE: GatewayError(503, Errors.NOT_CONTROLLER, "no leader yet")})
    request = from_kafka_python(AdminApi.CREATE_TOPICS, "CreateTopics", version,
                                create_request(version))
    answer = as_client_reads("CreateTopics", version,
                             run(topics.create_topics, request, gateway))
    assert [(t.name, t.error_code, t.error_message) for t in answer.topics] == [
        ("orders", 41, "no leader yet"), ("manual", 41, "no leader yet")]


# ------------------------------------------------------------------ DeleteTopics


@pytest.mark.parametrize("version", [1, 3, 4, 5])
def test_delete_topics_by_name(version: int) -> None:
    gateway = FakeGateway({DELETE: DeleteTopicsResponse(responses=(
        DeletableTopicResult(name="orders", topic_id=kafka_uuid_str(ORDERS_ID)),
        DeletableTopicResult(name="gone", error_code=3, error_message="no such topic"),
    ))})
    request = from_kafka_python(AdminApi.DELETE_TOPICS, "DeleteTopics", version,
                                kp("DeleteTopicsRequest")(topic_names=["orders", "gone"],
                                                          timeout_ms=500))
    response = run(topics.delete_topics, request, gateway)
    assert gateway.bodies(DELETE) == [{"topic_names": ["orders", "gone"], "timeout_ms": 500}]
    answer = as_client_reads("DeleteTopics", version, response)
    assert [(r.name, r.error_code) for r in answer.responses] == [("orders", 0), ("gone", 3)]
    assert ("error_message" in answer.responses[1].to_dict()) is (version >= 5)
    if version >= 5:
        assert answer.responses[1].error_message == "no such topic"


def test_delete_topics_v6_by_id_and_by_name() -> None:
    cls = kp("DeleteTopicsRequest")
    message = cls(topics=[cls.DeleteTopicState(name=None, topic_id=ORDERS_ID),
                          cls.DeleteTopicState(name="other", topic_id=ZERO_UUID)],
                  timeout_ms=500)
    unknown = uuid.UUID(int=99)
    gateway = FakeGateway({DELETE: DeleteTopicsResponse(responses=(
        DeletableTopicResult(name="orders", topic_id=kafka_uuid_str(ORDERS_ID)),
        DeletableTopicResult(name=None, topic_id=None, error_code=100,
                             error_message=f"unknown id {unknown}"),
    ))})
    request = from_kafka_python(AdminApi.DELETE_TOPICS, "DeleteTopics", 6, message)
    response = run(topics.delete_topics, request, gateway)
    assert gateway.bodies(DELETE) == [{"topics": [
        {"name": None, "topic_id": kafka_uuid_str(ORDERS_ID)},
        {"name": "other", "topic_id": None}], "timeout_ms": 500}]
    orders, missing = as_client_reads("DeleteTopics", 6, response).responses
    assert (orders.name, orders.topic_id, orders.error_code) == ("orders", ORDERS_ID, 0)
    assert (missing.name, missing.error_code) == (None, 100)


@pytest.mark.parametrize("version", [1, 6])
def test_delete_topics_whole_request_error(version: int) -> None:
    cls = kp("DeleteTopicsRequest")
    message = (cls(topics=[cls.DeleteTopicState(name=None, topic_id=ORDERS_ID)], timeout_ms=1)
               if version >= 6 else cls(topic_names=["orders", "orders"], timeout_ms=1))
    gateway = FakeGateway({DELETE: GatewayError(401, Errors.SASL_AUTHENTICATION_FAILED, None)})
    request = from_kafka_python(AdminApi.DELETE_TOPICS, "DeleteTopics", version, message)
    answer = as_client_reads("DeleteTopics", version, run(topics.delete_topics, request,
                                                          gateway))
    assert [r.error_code for r in answer.responses] == [58]
    if version >= 6:
        assert answer.responses[0].topic_id == ORDERS_ID
        assert answer.responses[0].error_message == Errors.SASL_AUTHENTICATION_FAILED.message


# ------------------------------------------------------------------ CreatePartitions


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@pytest.mark.parametrize("validate_only", [False, True])
def test_create_partitions(version: int, validate_only: bool) -> None:
    cls = kp("CreatePartitionsRequest")
    message = cls(topics=[
        cls.CreatePartitionsTopic(name="orders", count=6, assignments=None),
        cls.CreatePartitionsTopic(name="manual", count=3, assignments=[
            cls.CreatePartitionsTopic.CreatePartitionsAssignment(broker_ids=[3, 1])]),
    ], timeout_ms=900, validate_only=validate_only)
    gateway = FakeGateway({PARTITIONS: CreatePartitionsResponse(results=(
        CreatePartitionsTopicResult(name="orders"),
        CreatePartitionsTopicResult(name="manual", error_code=39,
                                    error_message="Duplicate brokers"),
    ))})
    request = from_kafka_python(AdminApi.CREATE_PARTITIONS, "CreatePartitions", version,
                                message)
    response = run(topics.create_partitions, request, gateway)
    assert gateway.bodies(PARTITIONS) == [{"topics": [
        {"name": "orders", "count": 6, "assignments": None},
        {"name": "manual", "count": 3, "assignments": [{"broker_ids": [3, 1]}]},
    ], "timeout_ms": 900, "validate_only": validate_only}]
    answer = as_client_reads("CreatePartitions", version, response)
    assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
        ("orders", 0, None), ("manual", 39, "Duplicate brokers")]


def test_create_partitions_whole_request_error() -> None:
    cls = kp("CreatePartitionsRequest")
    message = cls(topics=[cls.CreatePartitionsTopic(name="a", count=2, assignments=None),
                          cls.CreatePartitionsTopic(name="b", count=2, assignments=None)],
                  timeout_ms=1, validate_only=False)
    gateway = FakeGateway({PARTITIONS: GatewayError(400, Errors.INVALID_REQUEST, "too big")})
    request = from_kafka_python(AdminApi.CREATE_PARTITIONS, "CreatePartitions", 3, message)
    answer = as_client_reads("CreatePartitions", 3, run(topics.create_partitions, request,
                                                        gateway))
    assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
        ("a", 42, "too big"), ("b", 42, "too big")]


# ------------------------------------------------------------------ the real operations


def test_the_real_operations_accept_the_bodies_and_answer_through_the_handlers() -> None:
    gateway = ImageGateway(cluster(1, 2, 3))
    request = from_kafka_python(AdminApi.CREATE_TOPICS, "CreateTopics", 7, create_request(7))
    orders, manual = as_client_reads("CreateTopics", 7,
                                     run(topics.create_topics, request, gateway)).topics
    assert (orders.error_code, manual.error_code) == (0, 0), (orders, manual)
    assert orders.topic_id not in (None, ZERO_UUID)
    assert (orders.num_partitions, orders.replication_factor) == (3, 2)
    assert (manual.num_partitions, manual.replication_factor) == (2, 2)
    assert ("retention.ms", "1000", 1) in [(c.name, c.value, c.config_source)
                                           for c in orders.configs]
    assert gateway.paths == [CREATE, DESCRIBE]

    cls = kp("CreatePartitionsRequest")
    grow = cls(topics=[cls.CreatePartitionsTopic(name="orders", count=2, assignments=None)],
               timeout_ms=1, validate_only=False)
    request = from_kafka_python(AdminApi.CREATE_PARTITIONS, "CreatePartitions", 3, grow)
    (shrink,) = as_client_reads("CreatePartitions", 3, run(topics.create_partitions, request,
                                                           gateway)).results
    assert shrink.error_code == Errors.INVALID_PARTITIONS.code

    cls = kp("DeleteTopicsRequest")
    delete = cls(topics=[cls.DeleteTopicState(name=None, topic_id=orders.topic_id)],
                 timeout_ms=1)
    request = from_kafka_python(AdminApi.DELETE_TOPICS, "DeleteTopics", 6, delete)
    (deleted,) = as_client_reads("DeleteTopics", 6, run(topics.delete_topics, request,
                                                        gateway)).responses
    assert (deleted.name, deleted.error_code) == ("orders", 0)
