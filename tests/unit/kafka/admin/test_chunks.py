"""KIP-1114's CreateChunks (17000) and AlterChunkAssignments (17001): their definitions load,
the codec round-trips them, and the handlers translate them (our codec on both sides: no
other codec knows these messages)."""

from __future__ import annotations

from typing import Any

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin import chunks
from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import api_specs, decode, encode
from chunkraft.kafka.schema.specs import OWN_RESOURCES, message_specs
from chunkraft.protocol.chunks import (
    AlterChunkAssignmentResult,
    AlterChunkAssignmentsResponse,
    CreateChunksPartitionResult,
    CreateChunksResponse,
    CreateChunksTopicResult,
)
from tests.unit.controller.operations.cluster_builders import cluster
from tests.unit.kafka.admin.support import (
    FakeGateway,
    ImageGateway,
    as_client_reads,
    from_kafka_python,
    from_ours,
    kp,
    round_trip,
    run,
)

CREATE = ROUTES[AdminApi.CREATE_CHUNKS]
ALTER = ROUTES[AdminApi.ALTER_CHUNK_ASSIGNMENTS]

CUT = {"partition_index": 0, "broker_ids": [2, 1], "leader": 2, "leader_epoch": 0,
       "prev_stop_offset": 9, "prev_end_offset": 11, "start_offset": 10,
       "start_timestamp": 1_700_000_000_000}


def create_body(**fields: Any) -> dict[str, Any]:
    return {"topics": [{"name": "orders", "partitions": [CUT, {**CUT, "partition_index": 1}]}],
            **fields}


@pytest.mark.parametrize("name", ["CreateChunks", "AlterChunkAssignments"])
def test_the_definitions_load_in_the_private_block(name: str) -> None:
    request, response = (message_specs()[f"{name}{kind}"] for kind in ("Request", "Response"))
    key = AdminApi.CREATE_CHUNKS if name == "CreateChunks" else AdminApi.ALTER_CHUNK_ASSIGNMENTS
    assert request.api_key == response.api_key == int(key) >= 17000
    assert request.source.startswith(OWN_RESOURCES)
    assert list(request.versions) == [0] and 0 in request.flexible
    assert api_specs()[int(key)].name == name
    with pytest.raises(KeyError):
        kp(f"{name}Request")  # chunkraft's own: kafka-python has no such message


def test_the_codec_round_trips_them_with_defaults() -> None:
    body = decode("CreateChunksRequest", 0, encode("CreateChunksRequest", 0, create_body()))
    assert (body["broker_id"], body["broker_epoch"], body["validate_only"]) == (-1, -1, False)
    assert body["topics"][0]["partitions"][0] == CUT
    alter = {"chunks": [{"topic_name": "orders", "partition_id": 3, "start_offset": 0,
                         "broker_ids": [1]}]}
    decoded = decode("AlterChunkAssignmentsRequest", 0,
                     encode("AlterChunkAssignmentsRequest", 0, alter))
    assert decoded["chunks"][0]["chunk_epoch"] == -1
    assert decoded["validate_only"] is False


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_chunks(validate_only: bool) -> None:
    gateway = FakeGateway({CREATE: CreateChunksResponse(topics=(CreateChunksTopicResult(
        name="orders", partitions=(
            CreateChunksPartitionResult(partition_index=0),
            CreateChunksPartitionResult(partition_index=1, error_code=10003,
                                        error_message="offsets"))),))})
    request = from_ours(AdminApi.CREATE_CHUNKS, "CreateChunks", 0, create_body(
        broker_id=2, broker_epoch=17, validate_only=validate_only))
    answer = round_trip("CreateChunks", 0, run(chunks.create_chunks, request, gateway))
    assert gateway.bodies(CREATE) == [create_body(broker_id=2, broker_epoch=17,
                                                  validate_only=validate_only)]
    assert (answer["throttle_time_ms"], answer["error_code"], answer["error_message"]) == (
        0, 0, None)
    assert answer["topics"] == [{"name": "orders", "partitions": [
        {"partition_index": 0, "error_code": 0, "error_message": None},
        {"partition_index": 1, "error_code": 10003, "error_message": "offsets"}]}]


def test_create_chunks_whole_request_error_sets_the_top_level_and_every_partition() -> None:
    gateway = FakeGateway({CREATE: GatewayError(403, Errors.CLUSTER_AUTHORIZATION_FAILED,
                                                "not broker 2")})
    request = from_ours(AdminApi.CREATE_CHUNKS, "CreateChunks", 0, create_body(broker_id=2))
    answer = round_trip("CreateChunks", 0, run(chunks.create_chunks, request, gateway))
    assert (answer["error_code"], answer["error_message"]) == (31, "not broker 2")
    assert [(p["partition_index"], p["error_code"]) for p in answer["topics"][0]["partitions"]
            ] == [(0, 31), (1, 31)]


def alter_body(validate_only: bool = False) -> dict[str, Any]:
    return {"chunks": [
        {"topic_name": "orders", "partition_id": 0, "start_offset": 0, "chunk_epoch": 2,
         "broker_ids": [3, 1]},
        {"topic_name": "orders", "partition_id": 1, "start_offset": 50, "chunk_epoch": -1,
         "broker_ids": [2]},
    ], "validate_only": validate_only}


@pytest.mark.parametrize("validate_only", [False, True])
def test_alter_chunk_assignments(validate_only: bool) -> None:
    gateway = FakeGateway({ALTER: AlterChunkAssignmentsResponse(results=(
        AlterChunkAssignmentResult(topic_name="orders", partition_id=0, start_offset=0),
        AlterChunkAssignmentResult(topic_name="orders", partition_id=1, start_offset=50,
                                   error_code=10001, error_message="no chunk at 50")))})
    request = from_ours(AdminApi.ALTER_CHUNK_ASSIGNMENTS, "AlterChunkAssignments", 0,
                        alter_body(validate_only))
    answer = round_trip("AlterChunkAssignments", 0,
                        run(chunks.alter_chunk_assignments, request, gateway))
    assert gateway.bodies(ALTER) == [alter_body(validate_only)]
    assert answer == {"throttle_time_ms": 0, "results": [
        {"topic_name": "orders", "partition_id": 0, "start_offset": 0, "error_code": 0,
         "error_message": None},
        {"topic_name": "orders", "partition_id": 1, "start_offset": 50, "error_code": 10001,
         "error_message": "no chunk at 50"}]}


def test_alter_chunk_assignments_whole_request_error() -> None:
    gateway = FakeGateway({ALTER: GatewayError(503, Errors.NOT_CONTROLLER, None)})
    request = from_ours(AdminApi.ALTER_CHUNK_ASSIGNMENTS, "AlterChunkAssignments", 0,
                        alter_body())
    answer = round_trip("AlterChunkAssignments", 0,
                        run(chunks.alter_chunk_assignments, request, gateway))
    assert [(r["partition_id"], r["start_offset"], r["error_code"], r["error_message"])
            for r in answer["results"]] == [(0, 0, 41, Errors.NOT_CONTROLLER.message),
                                            (1, 50, 41, Errors.NOT_CONTROLLER.message)]


def test_the_real_operations_cut_and_move_a_chunk() -> None:
    from chunkraft.kafka.admin import topics

    gateway = ImageGateway(cluster(1, 2, 3))
    cls = kp("CreateTopicsRequest")
    create = cls(topics=[cls.CreatableTopic(name="orders", num_partitions=1,
                                            replication_factor=1, assignments=[], configs=[])],
                 timeout_ms=1, validate_only=False)
    request = from_kafka_python(AdminApi.CREATE_TOPICS, "CreateTopics", 4, create)
    assert as_client_reads("CreateTopics", 4, run(topics.create_topics, request,
                                                  gateway)).topics[0].error_code == 0

    cut = {"topics": [{"name": "orders", "partitions": [
        {**CUT, "broker_ids": [2], "leader": -1, "leader_epoch": -1, "prev_end_offset": 9}]}]}
    request = from_ours(AdminApi.CREATE_CHUNKS, "CreateChunks", 0, cut)
    answer = round_trip("CreateChunks", 0, run(chunks.create_chunks, request, gateway))
    assert answer["topics"][0]["partitions"][0]["error_code"] == 0, answer

    move = {"chunks": [{"topic_name": "orders", "partition_id": 0, "start_offset": 0,
                        "broker_ids": [3]}]}
    request = from_ours(AdminApi.ALTER_CHUNK_ASSIGNMENTS, "AlterChunkAssignments", 0, move)
    answer = round_trip("AlterChunkAssignments", 0,
                        run(chunks.alter_chunk_assignments, request, gateway))
    assert answer["results"][0]["error_code"] == 0, answer
