"""A request-level error, answered the way Kafka answers it for each admin API.

Kafka has no top-level error code in most admin responses: when the whole request fails (the
principal may not ALTER the cluster, no controller leads, the body is over a limit), every
item of the answer carries the error instead: each topic of a CreateTopics, each creation of
a CreateAcls, each resource of a DescribeConfigs (``AbstractRequest.getErrorResponse`` in
Kafka). :func:`whole_request_error` builds that answer from the request's own body, for every
API the admin handlers serve; :func:`answers_request_errors` wraps a handler so that a
:class:`~chunkraft.kafka.admin.gateway.GatewayError` from the route or a
:class:`~chunkraft.kafka.server.requests.KafkaRequestError` from the handler is answered so.

Error messages go into every ``error_message`` field; the codec drops the field at versions
that do not have it, so the same answer serves every version.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.common import ZERO_UUID, AdminApi
from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.server.requests import KafkaRequest, KafkaRequestError

__all__ = ["AdminHandler", "answers_request_errors", "whole_request_error"]

AdminHandler = Callable[[KafkaRequest, AdminGateway], Awaitable[dict[str, Any]]]
"""An admin API's handler: the decoded request and the gateway in, the response body out."""

_Builder = Callable[[int, dict[str, Any], int, str | None], dict[str, Any]]


def _distinct(values: Iterable[Any]) -> list[Any]:
    # The requests whose items Kafka keys by name (mapKey) answer each name once.
    return list(dict.fromkeys(values))


def _create_topics(version: int, body: dict[str, Any], code: int,
                   message: str | None) -> dict[str, Any]:
    names = _distinct(topic["name"] for topic in body.get("topics", ()))
    return {"throttle_time_ms": 0, "topics": [
        {"name": name, "topic_id": ZERO_UUID, "error_code": code, "error_message": message,
         "num_partitions": -1, "replication_factor": -1, "configs": []} for name in names]}


def _delete_topics(version: int, body: dict[str, Any], code: int,
                   message: str | None) -> dict[str, Any]:
    if version >= 6:
        named = [(topic.get("name"), topic.get("topic_id") or ZERO_UUID)
                 for topic in body.get("topics", ())]
    else:
        named = [(name, ZERO_UUID) for name in _distinct(body.get("topic_names", ()))]
    return {"throttle_time_ms": 0, "responses": [
        {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
        for name, topic_id in named]}


def _create_partitions(version: int, body: dict[str, Any], code: int,
                       message: str | None) -> dict[str, Any]:
    names = _distinct(topic["name"] for topic in body.get("topics", ()))
    return {"throttle_time_ms": 0, "results": [
        {"name": name, "error_code": code, "error_message": message} for name in names]}


def _describe_configs(version: int, body: dict[str, Any], code: int,
                      message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [
        {"error_code": code, "error_message": message, "resource_type": r["resource_type"],
         "resource_name": r["resource_name"], "configs": []}
        for r in body.get("resources", ())]}


def _alter_configs(version: int, body: dict[str, Any], code: int,
                   message: str | None) -> dict[str, Any]:
    resources = _distinct((r["resource_type"], r["resource_name"])
                          for r in body.get("resources", ()))
    return {"throttle_time_ms": 0, "responses": [
        {"error_code": code, "error_message": message, "resource_type": kind,
         "resource_name": name} for kind, name in resources]}


def _describe_acls(version: int, body: dict[str, Any], code: int,
                   message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "resources": []}


def _create_acls(version: int, body: dict[str, Any], code: int,
                 message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [
        {"error_code": code, "error_message": message} for _ in body.get("creations", ())]}


def _delete_acls(version: int, body: dict[str, Any], code: int,
                 message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": message, "matching_acls": []}
        for _ in body.get("filters", ())]}


def _create_chunks(version: int, body: dict[str, Any], code: int,
                   message: str | None) -> dict[str, Any]:
    # The one response with a top-level error; its items repeat it, as the route's do.
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code,
             "error_message": message} for p in topic.get("partitions", ())]}
        for topic in body.get("topics", ())]}


def _alter_chunk_assignments(version: int, body: dict[str, Any], code: int,
                             message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [
        {"topic_name": c["topic_name"], "partition_id": c["partition_id"],
         "start_offset": c["start_offset"], "error_code": code, "error_message": message}
        for c in body.get("chunks", ())]}


_BUILDERS: dict[AdminApi, _Builder] = {
    AdminApi.CREATE_TOPICS: _create_topics,
    AdminApi.DELETE_TOPICS: _delete_topics,
    AdminApi.CREATE_PARTITIONS: _create_partitions,
    AdminApi.DESCRIBE_CONFIGS: _describe_configs,
    AdminApi.ALTER_CONFIGS: _alter_configs,
    AdminApi.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    AdminApi.DESCRIBE_ACLS: _describe_acls,
    AdminApi.CREATE_ACLS: _create_acls,
    AdminApi.DELETE_ACLS: _delete_acls,
    AdminApi.CREATE_CHUNKS: _create_chunks,
    AdminApi.ALTER_CHUNK_ASSIGNMENTS: _alter_chunk_assignments,
}


def whole_request_error(api_key: int, version: int, body: dict[str, Any], error: Errors,
                        message: str | None = None) -> dict[str, Any]:
    """The response of ``api_key`` at ``version`` to a request (decoded ``body``) that failed
    as a whole with ``error``: every item of the request answered with its code and
    ``message`` (the error's own message when None). ValueError for an API key this module
    does not serve."""
    try:
        build = _BUILDERS[AdminApi(api_key)]
    except ValueError:
        raise ValueError(f"no admin API has key {api_key}") from None
    return build(version, body, error.code, error.message if message is None else message)


def answers_request_errors(api: AdminApi) -> Callable[[AdminHandler], AdminHandler]:
    """Decorates ``api``'s handler: a whole-request refusal from the gateway, or a
    KafkaRequestError the handler raises, becomes :func:`whole_request_error`'s answer."""

    def decorate(handler: AdminHandler) -> AdminHandler:
        @functools.wraps(handler)
        async def handle(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
            try:
                return await handler(request, gateway)
            except GatewayError as exc:
                return whole_request_error(api, request.version, request.body, exc.error,
                                           exc.message)
            except KafkaRequestError as exc:
                return whole_request_error(api, request.version, request.body, exc.error,
                                           exc.message)

        return handle

    return decorate
