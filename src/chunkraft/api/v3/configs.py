"""Configurations in Confluent's REST v3 shapes: a topic's (``/topics/{topic_name}/configs``), a
broker's (``/brokers/{broker_id}/configs``) and the cluster-wide default of every broker
(``/broker-configs``).

Each has ``GET`` (every key, with its value, source and synonyms), ``GET/PUT/DELETE .../{name}``
(one key; PUT sets it, DELETE removes it so the value is inherited again: 204 on success) and
``POST ...configs:alter`` (a batch of SET / DELETE / APPEND / SUBTRACT, all or nothing: 204).
They run the controller's DescribeConfigs and IncrementalAlterConfigs
(:mod:`chunkraft.controller.operations.configs`) as the principal: DESCRIBE_CONFIGS to read,
ALTER_CONFIGS to write, on the topic or on the cluster. Errors are the ErrorBody: 400
INVALID_CONFIG (unknown key, bad value), 404 an unknown topic (or an unknown key asked by name),
403 not authorized.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response

from chunkraft.api.authentication import principal_of
from chunkraft.api.config_access import config_refusal
from chunkraft.api.errors import error_response
from chunkraft.api.forwarding import OFFSET_HEADER
from chunkraft.api.parameters import MinOffset, TopicNamePath, WaitMs
from chunkraft.api.rpc import committed_image, execute_write
from chunkraft.api.v3.common import (
    ERROR_RESPONSES,
    Links,
    NoBody,
    at_offset,
    body_schema,
    check_cluster,
    check_topic_name,
    context_of,
    item_error_response,
    json_answer,
    read_body_as,
)
from chunkraft.api.v3.config_models import (
    AlterConfigsBody,
    KafkaBrokerConfig,
    KafkaBrokerConfigList,
    KafkaClusterConfig,
    KafkaClusterConfigList,
    KafkaTopicConfig,
    KafkaTopicConfigList,
    UpdateConfigBody,
)
from chunkraft.configs.resolve import ConfigSource
from chunkraft.controller.operations.configs import describe_configs, incremental_alter_configs
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.configs import (
    DescribeConfigsEntry,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    OpType,
)
from chunkraft.records import BROKER_RESOURCE, TOPIC_RESOURCE

__all__ = ["router"]

router = APIRouter(tags=["v3 configs"])


@dataclass(frozen=True)
class _Target:
    """Whose configurations a route serves, and how its answers name them."""

    resource_type: int
    resource_name: str
    kind: str
    url: str
    crn: str
    fields: dict[str, Any]

    def entry(self, cluster_id: str, entry: DescribeConfigsEntry) -> dict[str, Any]:
        quoted = urllib.parse.quote(entry.name, safe="")
        return {
            "kind": self.kind,
            "metadata": {"self": f"{self.url}/{quoted}",
                         "resource_name": f"{self.crn}/config={entry.name}"},
            "cluster_id": cluster_id,
            **self.fields,
            "name": entry.name,
            "value": entry.value,
            "is_default": entry.is_default,
            "is_read_only": entry.read_only,
            "is_sensitive": entry.is_sensitive,
            "source": ConfigSource(entry.config_source).name,
            "synonyms": [{"name": s.name, "value": s.value,
                          "source": ConfigSource(s.source).name} for s in entry.synonyms],
        }


def _topic(request: Request, cluster_id: str, topic_name: TopicNamePath) -> _Target:
    links = Links(request, cluster_id)
    return _Target(TOPIC_RESOURCE, topic_name, "KafkaTopicConfig",
                   f"{links.topic(topic_name)}/configs", f"{links.crn}/topic={topic_name}",
                   {"topic_name": topic_name})


def _broker(request: Request, cluster_id: str, broker_id: int) -> _Target:
    links = Links(request, cluster_id)
    return _Target(BROKER_RESOURCE, str(broker_id), "KafkaBrokerConfig",
                   f"{links.broker(broker_id)}/configs", f"{links.crn}/broker={broker_id}",
                   {"broker_id": broker_id})


def _cluster_default(request: Request, cluster_id: str) -> _Target:
    links = Links(request, cluster_id)
    return _Target(BROKER_RESOURCE, "", "KafkaClusterConfig", f"{links.cluster}/broker-configs",
                   links.crn, {"config_type": "BROKER"})


def _checked(request: Request, cluster_id: str, target: _Target) -> Response | None:
    refused = check_cluster(context_of(request), cluster_id)
    if refused is None and target.resource_type == TOPIC_RESOURCE:
        refused = check_topic_name(target.resource_name)
    return refused


# ------------------------------------------------------------------ reads


async def _describe(request: Request, cluster_id: str, target: _Target, name: str | None,
                    min_offset: int, wait_ms: int) -> Response:
    refused = _checked(request, cluster_id, target)
    if refused is not None:
        return refused
    image = await committed_image(request, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    wanted = DescribeConfigsResource(
        resource_type=target.resource_type, resource_name=target.resource_name,
        configuration_keys=None if name is None else (name,))
    refusal = config_refusal(context_of(request).authorizer, principal_of(request), image,
                             AclOperation.DESCRIBE_CONFIGS)
    (result,) = describe_configs(image, DescribeConfigsRequest(
        resources=(wanted,), include_synonyms=True, include_all=True),
        refusal=refusal).response.results
    if result.error_code:
        error = Errors.for_code(result.error_code)
        if error is Errors.INVALID_CONFIG and name is not None:  # no such key: nothing there
            return at_offset(error_response(error, result.error_message, 404), image.offset)
        return item_error_response(result.error_code, result.error_message, image.offset)
    entries = [target.entry(cluster_id, entry) for entry in result.configs]
    if name is not None:
        return json_answer(entries[0], image.offset)
    return json_answer({"kind": f"{target.kind}List",
                        "metadata": {"self": target.url, "next": None,
                                     "metadata_offset": image.offset},
                        "data": entries}, image.offset)


# ------------------------------------------------------------------ writes


Changes = Callable[[Any], list[tuple[str, str | None, OpType]]]


async def _alter(request: Request, cluster_id: str, target: _Target,
                 body_model: type[Any], changes: Changes) -> Response:
    refused = _checked(request, cluster_id, target)
    if refused is not None:
        return refused
    read = await read_body_as(request, cluster_id, body_model)
    if isinstance(read, Response):
        return read
    raw, body = read
    protocol = IncrementalAlterConfigsRequest(
        resources=(IncrementalAlterConfigsResource(
            resource_type=target.resource_type, resource_name=target.resource_name,
            configs=tuple(IncrementalAlterableConfig(name=n, value=v, config_operation=op)
                          for n, v, op in changes(body))),),
        validate_only=getattr(body, "validate_only", False))
    authorizer = context_of(request).authorizer
    principal = principal_of(request)
    outcome = await execute_write(
        request, raw,
        lambda image: incremental_alter_configs(
            image, protocol,
            refusal=config_refusal(authorizer, principal, image, AclOperation.ALTER_CONFIGS)),
        IncrementalAlterConfigsResponse)
    if isinstance(outcome, Response):
        return outcome
    (result,) = outcome.response.responses
    if result.error_code:
        return item_error_response(result.error_code, result.error_message, outcome.offset)
    return Response(status_code=204, headers={OFFSET_HEADER: str(outcome.offset)})


def _batch(body: AlterConfigsBody) -> list[tuple[str, str | None, OpType]]:
    return [(item.name, item.value, OpType[item.operation.value]) for item in body.data]


def _put(name: str) -> Changes:
    return lambda body: [(name, body.value, OpType.SET)]


def _delete(name: str) -> Changes:
    return lambda body: [(name, None, OpType.DELETE)]


BrokerId = Annotated[int, Path(ge=0, le=2**31 - 1)]
_DONE: dict[int | str, dict[str, Any]] = {204: {"description": "Done."}, **ERROR_RESPONSES}
_ALTER = body_schema(AlterConfigsBody)
_PUT = body_schema(UpdateConfigBody)
TOPIC = "/clusters/{cluster_id}/topics/{topic_name}/configs"
BROKER = "/clusters/{cluster_id}/brokers/{broker_id}/configs"
DEFAULT = "/clusters/{cluster_id}/broker-configs"


# ------------------------------------------------------------------ a topic's


@router.get(TOPIC, summary="Every configuration key of a topic", response_model=None,
            responses={200: {"model": KafkaTopicConfigList}, **ERROR_RESPONSES})
async def list_topic_configs(request: Request, cluster_id: str, topic_name: TopicNamePath,
                             min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    return await _describe(request, cluster_id, _topic(request, cluster_id, topic_name), None,
                           min_offset, wait_ms)


@router.post(f"{TOPIC}:alter", summary="Change configurations of a topic (all or none)",
             status_code=204, response_model=None, openapi_extra=_ALTER, responses=_DONE)
async def alter_topic_configs(request: Request, cluster_id: str,
                              topic_name: TopicNamePath) -> Response:
    return await _alter(request, cluster_id, _topic(request, cluster_id, topic_name),
                        AlterConfigsBody, _batch)


@router.get(f"{TOPIC}/{{name}}", summary="One configuration key of a topic",
            response_model=None, responses={200: {"model": KafkaTopicConfig},
                                            **ERROR_RESPONSES})
async def get_topic_config(request: Request, cluster_id: str, topic_name: TopicNamePath, name: str,
                           min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    return await _describe(request, cluster_id, _topic(request, cluster_id, topic_name), name,
                           min_offset, wait_ms)


@router.put(f"{TOPIC}/{{name}}", summary="Set one configuration key of a topic",
            status_code=204, response_model=None, openapi_extra=_PUT, responses=_DONE)
async def put_topic_config(request: Request, cluster_id: str, topic_name: TopicNamePath,
                           name: str) -> Response:
    return await _alter(request, cluster_id, _topic(request, cluster_id, topic_name),
                        UpdateConfigBody, _put(name))


@router.delete(f"{TOPIC}/{{name}}", summary="Delete a topic's key (inherit it again)",
               status_code=204, response_model=None, responses=_DONE)
async def delete_topic_config(request: Request, cluster_id: str, topic_name: TopicNamePath,
                              name: str) -> Response:
    return await _alter(request, cluster_id, _topic(request, cluster_id, topic_name), NoBody,
                        _delete(name))


# ------------------------------------------------------------------ a broker's


@router.get(BROKER, summary="Every configuration key of a broker", response_model=None,
            responses={200: {"model": KafkaBrokerConfigList}, **ERROR_RESPONSES})
async def list_broker_configs(request: Request, cluster_id: str, broker_id: BrokerId,
                              min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    return await _describe(request, cluster_id, _broker(request, cluster_id, broker_id), None,
                           min_offset, wait_ms)


@router.post(f"{BROKER}:alter", summary="Change configurations of a broker (all or none)",
             status_code=204, response_model=None, openapi_extra=_ALTER, responses=_DONE)
async def alter_broker_configs(request: Request, cluster_id: str,
                               broker_id: BrokerId) -> Response:
    return await _alter(request, cluster_id, _broker(request, cluster_id, broker_id),
                        AlterConfigsBody, _batch)


@router.get(f"{BROKER}/{{name}}", summary="One configuration key of a broker",
            response_model=None, responses={200: {"model": KafkaBrokerConfig},
                                            **ERROR_RESPONSES})
async def get_broker_config(request: Request, cluster_id: str, broker_id: BrokerId, name: str,
                            min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    return await _describe(request, cluster_id, _broker(request, cluster_id, broker_id), name,
                           min_offset, wait_ms)


@router.put(f"{BROKER}/{{name}}", summary="Set one configuration key of a broker",
            status_code=204, response_model=None, openapi_extra=_PUT, responses=_DONE)
async def put_broker_config(request: Request, cluster_id: str, broker_id: BrokerId,
                            name: str) -> Response:
    return await _alter(request, cluster_id, _broker(request, cluster_id, broker_id),
                        UpdateConfigBody, _put(name))


@router.delete(f"{BROKER}/{{name}}", summary="Delete a broker's key (inherit it again)",
               status_code=204, response_model=None, responses=_DONE)
async def delete_broker_config(request: Request, cluster_id: str, broker_id: BrokerId,
                               name: str) -> Response:
    return await _alter(request, cluster_id, _broker(request, cluster_id, broker_id), NoBody,
                        _delete(name))


# ------------------------------------------------------------------ the cluster default


@router.get(DEFAULT, summary="Every broker key's cluster-wide default", response_model=None,
            responses={200: {"model": KafkaClusterConfigList}, **ERROR_RESPONSES})
async def list_cluster_configs(request: Request, cluster_id: str, min_offset: MinOffset = -1,
                               wait_ms: WaitMs = 5000) -> Response:
    return await _describe(request, cluster_id, _cluster_default(request, cluster_id), None,
                           min_offset, wait_ms)


@router.post(f"{DEFAULT}:alter", summary="Change cluster-wide broker defaults (all or none)",
             status_code=204, response_model=None, openapi_extra=_ALTER, responses=_DONE)
async def alter_cluster_configs(request: Request, cluster_id: str) -> Response:
    return await _alter(request, cluster_id, _cluster_default(request, cluster_id),
                        AlterConfigsBody, _batch)


@router.get(f"{DEFAULT}/{{name}}", summary="One broker key's cluster-wide default",
            response_model=None, responses={200: {"model": KafkaClusterConfig},
                                            **ERROR_RESPONSES})
async def get_cluster_config(request: Request, cluster_id: str, name: str,
                             min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    return await _describe(request, cluster_id, _cluster_default(request, cluster_id), name,
                           min_offset, wait_ms)


@router.put(f"{DEFAULT}/{{name}}", summary="Set one broker key's cluster-wide default",
            status_code=204, response_model=None, openapi_extra=_PUT, responses=_DONE)
async def put_cluster_config(request: Request, cluster_id: str, name: str) -> Response:
    return await _alter(request, cluster_id, _cluster_default(request, cluster_id),
                        UpdateConfigBody, _put(name))


@router.delete(f"{DEFAULT}/{{name}}", summary="Delete a cluster-wide broker default",
               status_code=204, response_model=None, responses=_DONE)
async def delete_cluster_config(request: Request, cluster_id: str, name: str) -> Response:
    return await _alter(request, cluster_id, _cluster_default(request, cluster_id), NoBody,
                        _delete(name))
