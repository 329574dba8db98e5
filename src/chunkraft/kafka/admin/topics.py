"""CreateTopics 2-7, DeleteTopics 1-6 and CreatePartitions 0-3 over the controller RPC routes.

Each handler only translates: the Kafka request (its decoded body already holds Kafka's
default for every field its version lacks) becomes the route's body, the route's answer
becomes the Kafka response for the request's version. Validation, authorization and every
per-topic error are the route's, the same operation REST runs.

One thing the topics route does not answer: CreateTopics v5+ tells the client each new topic's
effective configuration (``configs``, what ``kafka-topics --create`` prints back), which Kafka
fills when the principal may DESCRIBE_CONFIGS the topic, else it sets
``topic_config_error_code``. That is a second call, a read of ``/describe-configs``: of the new
topics themselves when they were created; with ``validate_only`` there is no topic to describe
yet, so the requested configs are laid over the cluster-wide defaults of their broker synonyms
(what Kafka's controller computes for a topic it is about to create). A refusal of that read
costs the client the configs, never the topics.
"""

from __future__ import annotations

from typing import Any

from chunkraft.configs.keys import TOPIC_KEYS
from chunkraft.configs.resolve import ConfigSource
from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.common import ROUTES, AdminApi, topic_id_text, topic_uuid
from chunkraft.kafka.admin.errors import answers_request_errors
from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.server.requests import KafkaRequest, KafkaSession
from chunkraft.protocol.configs import DescribeConfigsEntry, DescribeConfigsResponse
from chunkraft.protocol.topics import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
)

__all__ = ["create_partitions", "create_topics", "delete_topics"]

_TOPIC = 2
"""Kafka's ConfigResource type of a topic; 4 is a broker (``""``: the cluster default)."""
_BROKER = 4
_CONFIGS_IN_RESPONSE = 5
"""The first CreateTopics version whose answer carries each topic's configs."""


# ------------------------------------------------------------------ CreateTopics


def create_topics_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/create-topics`` body of a CreateTopics request."""
    return {
        "topics": [{
            "name": topic["name"],
            "num_partitions": topic["num_partitions"],
            "replication_factor": topic["replication_factor"],
            "assignments": [{"partition_index": a["partition_index"],
                             "broker_ids": list(a["broker_ids"])}
                            for a in topic["assignments"]],
            "configs": [{"name": c["name"], "value": c["value"]} for c in topic["configs"]],
        } for topic in body["topics"]],
        "timeout_ms": body["timeout_ms"],
        "validate_only": body["validate_only"],
    }


@answers_request_errors(AdminApi.CREATE_TOPICS)
async def create_topics(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """CreateTopics: one result per distinct topic, in request order (the route's)."""
    body = request.body
    answer = CreateTopicsResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.CREATE_TOPICS], create_topics_body(body), request.session))
    results: list[dict[str, Any]] = [{
        "name": topic.name,
        "topic_id": topic_uuid(topic.topic_id),
        "error_code": topic.error_code,
        "error_message": topic.error_message,
        "topic_config_error_code": 0,
        "num_partitions": topic.num_partitions,
        "replication_factor": topic.replication_factor,
        "configs": [],
    } for topic in answer.topics]
    created = [r["name"] for r in results if r["error_code"] == 0]
    if request.version >= _CONFIGS_IN_RESPONSE and created:
        requested = {t["name"]: {c["name"]: c["value"] for c in t["configs"]}
                     for t in body["topics"]}
        configs = await _effective_configs(created, requested, body["validate_only"],
                                           gateway, request.session)
        for result in results:
            if result["name"] in configs:
                result["topic_config_error_code"], result["configs"] = configs[result["name"]]
    return {"throttle_time_ms": 0, "topics": results}


def _config_entry(name: str, value: str | None, source: int, *, read_only: bool = False,
                  sensitive: bool = False) -> dict[str, Any]:
    # Kafka never sends a sensitive value back, here as in DescribeConfigs.
    return {"name": name, "value": None if sensitive else value, "read_only": read_only,
            "config_source": source, "is_sensitive": sensitive}


def _from_describe(entry: DescribeConfigsEntry) -> dict[str, Any]:
    return _config_entry(entry.name, entry.value, entry.config_source,
                         read_only=entry.read_only, sensitive=entry.is_sensitive)


async def _effective_configs(names: list[str], requested: dict[str, dict[str, str | None]],
                             validate_only: bool, gateway: AdminGateway,
                             session: KafkaSession
                             ) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """Each new topic's (topic_config_error_code, configs sorted by name)."""
    try:
        if validate_only:
            return await _laid_over_defaults(names, requested, gateway, session)
        answer = DescribeConfigsResponse.model_validate(await gateway.read(
            ROUTES[AdminApi.DESCRIBE_CONFIGS],
            {"resources": [{"resource_type": _TOPIC, "resource_name": name,
                            "configuration_keys": None} for name in names],
             "include_all": True}, session))
    except GatewayError as exc:
        return {name: (exc.error.code, []) for name in names}
    found: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    for result in answer.results:
        if result.error_code:
            found[result.resource_name] = (result.error_code, [])
        else:
            entries = sorted(result.configs, key=lambda e: e.name)
            found[result.resource_name] = (0, [_from_describe(e) for e in entries])
    return found


async def _laid_over_defaults(names: list[str], requested: dict[str, dict[str, str | None]],
                              gateway: AdminGateway, session: KafkaSession
                              ) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    synonyms = {key.name: key.synonym for key in TOPIC_KEYS.values() if key.synonym}
    answer = DescribeConfigsResponse.model_validate(await gateway.read(
        ROUTES[AdminApi.DESCRIBE_CONFIGS],
        {"resources": [{"resource_type": _BROKER, "resource_name": "",
                        "configuration_keys": sorted(set(synonyms.values()))}],
         "include_all": True}, session))
    result = answer.results[0] if answer.results else None
    if result is None or result.error_code:
        code = result.error_code if result is not None else Errors.UNKNOWN_SERVER_ERROR.code
        return {name: (code, []) for name in names}
    defaults = {entry.name: entry for entry in result.configs}
    found: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    for name in names:
        own = requested.get(name, {})
        entries = []
        for key in sorted(synonyms):
            if key in own:
                entries.append(_config_entry(key, own[key], ConfigSource.DYNAMIC_TOPIC_CONFIG))
            elif synonyms[key] in defaults:
                default = defaults[synonyms[key]]
                entries.append(_config_entry(key, default.value, default.config_source,
                                             read_only=default.read_only,
                                             sensitive=default.is_sensitive))
        found[name] = (0, entries)
    return found


# ------------------------------------------------------------------ DeleteTopics


def delete_topics_body(version: int, body: dict[str, Any]) -> dict[str, Any]:
    """The ``/delete-topics`` body: names before v6, names or ids (the zero uuid: none) from
    v6, as Kafka's request carries them."""
    if version >= 6:
        return {"topics": [{"name": t["name"], "topic_id": topic_id_text(t["topic_id"])}
                           for t in body["topics"]],
                "timeout_ms": body["timeout_ms"]}
    return {"topic_names": list(body["topic_names"]), "timeout_ms": body["timeout_ms"]}


@answers_request_errors(AdminApi.DELETE_TOPICS)
async def delete_topics(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """DeleteTopics: one result per distinct requested topic (the route's)."""
    answer = DeleteTopicsResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.DELETE_TOPICS], delete_topics_body(request.version, request.body),
        request.session))
    # Before v6 a result's name is not nullable; the route names every topic asked by name.
    nullable = request.version >= 6
    return {"throttle_time_ms": 0, "responses": [{
        "name": r.name if r.name is not None or nullable else "",
        "topic_id": topic_uuid(r.topic_id),
        "error_code": r.error_code,
        "error_message": r.error_message,
    } for r in answer.responses]}


# ------------------------------------------------------------------ CreatePartitions


def create_partitions_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/create-partitions`` body (KIP-195): absolute counts, null assignments to let
    the controller place the new partitions."""
    return {
        "topics": [{
            "name": topic["name"],
            "count": topic["count"],
            "assignments": None if topic["assignments"] is None else [
                {"broker_ids": list(a["broker_ids"])} for a in topic["assignments"]],
        } for topic in body["topics"]],
        "timeout_ms": body["timeout_ms"],
        "validate_only": body["validate_only"],
    }


@answers_request_errors(AdminApi.CREATE_PARTITIONS)
async def create_partitions(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """CreatePartitions: one result per distinct topic, in request order (the route's)."""
    answer = CreatePartitionsResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.CREATE_PARTITIONS], create_partitions_body(request.body),
        request.session))
    return {"throttle_time_ms": 0, "results": [
        {"name": r.name, "error_code": r.error_code, "error_message": r.error_message}
        for r in answer.results]}
