"""whole_request_error for every admin API and version, and the handlers' decorator."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.common import AdminApi
from chunkraft.kafka.admin.errors import answers_request_errors, whole_request_error
from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.admin.registry import ADMIN_APIS
from chunkraft.kafka.codec.messages import api_specs, decode, encode
from chunkraft.kafka.schema.specs import FieldSpec
from chunkraft.kafka.server.requests import KafkaRequest, KafkaRequestError
from tests.unit.kafka.admin.support import FakeGateway, from_ours, kp

TOPIC_ID = uuid.UUID(int=7)
ACL_FILTER = {"resource_type_filter": 2, "resource_name_filter": "t", "pattern_type_filter": 3,
              "principal_filter": None, "host_filter": None, "operation": 1,
              "permission_type": 1}
ACL = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
       "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}

BODIES: dict[AdminApi, dict[str, Any]] = {
    AdminApi.CREATE_TOPICS: {"topics": [{"name": "a"}, {"name": "b"}]},
    AdminApi.DELETE_TOPICS: {"topic_names": ["a", "b"],
                             "topics": [{"name": None, "topic_id": TOPIC_ID},
                                        {"name": "b"}]},
    AdminApi.CREATE_PARTITIONS: {"topics": [{"name": "a", "count": 2, "assignments": None},
                                            {"name": "b", "count": 2, "assignments": None}]},
    AdminApi.DESCRIBE_CONFIGS: {"resources": [
        {"resource_type": 2, "resource_name": "a", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "1", "configuration_keys": None}]},
    AdminApi.ALTER_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": "a"},
                                           {"resource_type": 4, "resource_name": ""}]},
    AdminApi.INCREMENTAL_ALTER_CONFIGS: {"resources": [
        {"resource_type": 2, "resource_name": "a"}, {"resource_type": 4, "resource_name": ""}]},
    AdminApi.DESCRIBE_ACLS: ACL_FILTER,
    AdminApi.CREATE_ACLS: {"creations": [ACL, ACL]},
    AdminApi.DELETE_ACLS: {"filters": [ACL_FILTER, ACL_FILTER]},
    AdminApi.CREATE_CHUNKS: {"topics": [{"name": "a", "partitions": [
        {"partition_index": 0}, {"partition_index": 1}]}]},
    AdminApi.ALTER_CHUNK_ASSIGNMENTS: {"chunks": [
        {"topic_name": "a", "partition_id": 0, "start_offset": 5},
        {"topic_name": "a", "partition_id": 1, "start_offset": 9}]},
}

CASES = [(api, version) for api, low, high, _, _ in ADMIN_APIS
         for version in range(low, high + 1)]


def _errors(value: Any) -> list[int]:
    """Every ``error_code`` anywhere in a decoded message."""
    found: list[int] = []
    if isinstance(value, dict):
        if "error_code" in value:
            found.append(value["error_code"])
        for item in value.values():
            found.extend(_errors(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_errors(item))
    return found


@pytest.mark.parametrize(("api", "version"), CASES,
                         ids=[f"{api.name}-v{version}" for api, version in CASES])
def test_every_item_of_every_api_carries_the_error(api: AdminApi, version: int) -> None:
    name = api_specs()[int(api)].name
    # The body as the handler sees it: decoded, with Kafka's defaults for what is missing.
    body = decode(f"{name}Request", version, encode(f"{name}Request", version, BODIES[api]))
    response = whole_request_error(api, version, body, Errors.CLUSTER_AUTHORIZATION_FAILED,
                                   "denied")
    ours = decode(f"{name}Response", version, encode(f"{name}Response", version, response))
    errors = _errors(ours)
    # DescribeAcls has one filter and answers at the top; CreateChunks answers both there
    # and on each partition; the others answer on each item of the request.
    expected = {AdminApi.DESCRIBE_ACLS: 1, AdminApi.CREATE_CHUNKS: 3}.get(api, 2)
    assert errors == [31] * expected, ours
    assert ours["throttle_time_ms"] == 0
    if api < 17000:
        theirs = kp(f"{name}Response").decode(encode(f"{name}Response", version, response),
                                             version=version).to_dict()
        assert _errors(theirs) == errors
        messages = [v for k, v in _walk(theirs) if k == "error_message"]
        # Filled wherever the version has an error_message (DeleteTopics only from v5).
        if _has_error_message(api_specs()[int(api)].response.fields, version):
            assert messages and set(messages) == {"denied"}
        else:
            assert messages == []


def _has_error_message(fields: tuple[FieldSpec, ...], version: int) -> bool:
    return any(version in f.versions and (f.key == "error_message"
                                          or _has_error_message(f.fields, version))
               for f in fields)


def _walk(value: Any) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            pairs.append((key, item))
            pairs.extend(_walk(item))
    elif isinstance(value, list):
        for item in value:
            pairs.extend(_walk(item))
    return pairs


def test_delete_topics_v6_answers_by_id_and_name_as_asked() -> None:
    body = decode("DeleteTopicsRequest", 6,
                  encode("DeleteTopicsRequest", 6, BODIES[AdminApi.DELETE_TOPICS]))
    response = whole_request_error(AdminApi.DELETE_TOPICS, 6, body, Errors.NOT_CONTROLLER)
    assert [(r["name"], r["topic_id"]) for r in response["responses"]] == [
        (None, TOPIC_ID), ("b", uuid.UUID(int=0))]
    assert response["responses"][0]["error_message"] == Errors.NOT_CONTROLLER.message


def test_names_a_request_keys_by_name_are_answered_once() -> None:
    body = {"topics": [{"name": "a"}, {"name": "a"}, {"name": "b"}]}
    response = whole_request_error(AdminApi.CREATE_TOPICS, 7, body, Errors.NOT_CONTROLLER)
    assert [t["name"] for t in response["topics"]] == ["a", "b"]


def test_an_unknown_api_key_is_refused() -> None:
    with pytest.raises(ValueError, match="no admin API has key 3"):
        whole_request_error(3, 0, {}, Errors.NOT_CONTROLLER)


def test_a_handler_raising_kafka_request_error_is_answered_for_the_whole_request() -> None:
    @answers_request_errors(AdminApi.CREATE_ACLS)
    async def refuses(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
        raise KafkaRequestError(Errors.SECURITY_DISABLED, "no authorizer")

    request = from_ours(AdminApi.CREATE_ACLS, "CreateAcls", 2,
                        {"creations": [ACL, ACL, ACL]})

    async def handle() -> dict[str, Any]:
        return await refuses(request, FakeGateway({}))

    response = asyncio.run(handle())
    assert response["results"] == [{"error_code": 54, "error_message": "no authorizer"}] * 3


def test_other_exceptions_are_not_swallowed() -> None:
    @answers_request_errors(AdminApi.CREATE_ACLS)
    async def breaks(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
        raise RuntimeError("a bug")

    request = from_ours(AdminApi.CREATE_ACLS, "CreateAcls", 2, {"creations": [ACL]})

    async def handle() -> dict[str, Any]:
        return await breaks(request, FakeGateway({}))

    with pytest.raises(RuntimeError, match="a bug"):
        asyncio.run(handle())
