"""DescribeConfigs 1-4, AlterConfigs 0-2 and IncrementalAlterConfigs 0-1 over the routes.

Pure translation, as :mod:`chunkraft.kafka.admin.topics`. Resource types, config sources and
config types are Kafka's codes on both sides. The one difference of the route on purpose:
``/describe-configs`` describes only the keys set on the resource unless ``include_all`` is
true, where Kafka's DescribeConfigs with null ``configuration_keys`` answers every key; so the
Kafka request always asks with ``include_all``.

Per version (Kafka's definitions): ``config_source`` and ``synonyms`` exist from v1 (synonyms
only when ``include_synonyms`` asks), ``config_type`` and ``documentation`` from v3
(documentation only when ``include_documentation`` asks; both flags default to false in the
versions that lack them). The answer is built once with every field and the codec keeps the
fields the version has.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.errors import answers_request_errors
from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import KafkaRequest
from chunkraft.protocol.configs import (
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    DescribeConfigsEntry,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
    OpType,
)

__all__ = [
    "alter_configs",
    "alter_configs_body",
    "describe_configs",
    "describe_configs_body",
    "incremental_alter_configs",
    "incremental_alter_configs_body",
]


# ------------------------------------------------------------------ DescribeConfigs


def describe_configs_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/describe-configs`` body of a DescribeConfigs request."""
    return {
        "resources": [{
            "resource_type": r["resource_type"],
            "resource_name": r["resource_name"],
            "configuration_keys": (None if r["configuration_keys"] is None
                                   else list(r["configuration_keys"])),
        } for r in body["resources"]],
        "include_synonyms": body["include_synonyms"],
        "include_documentation": body["include_documentation"],
        "include_all": True,
    }


def _entry(entry: DescribeConfigsEntry, synonyms: bool, documentation: bool
           ) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": None if entry.is_sensitive else entry.value,
        "read_only": entry.read_only,
        "config_source": entry.config_source,
        "is_default": entry.is_default,
        "is_sensitive": entry.is_sensitive,
        # The flags are the client's: what it did not ask for it does not get back.
        "synonyms": [{"name": s.name, "value": None if entry.is_sensitive else s.value,
                      "source": s.source} for s in entry.synonyms] if synonyms else [],
        "config_type": entry.config_type,
        "documentation": entry.documentation if documentation else None,
    }


@answers_request_errors(AdminApi.DESCRIBE_CONFIGS)
async def describe_configs(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """DescribeConfigs: one result per resource of the request, in request order."""
    body = request.body
    answer = DescribeConfigsResponse.model_validate(await gateway.read(
        ROUTES[AdminApi.DESCRIBE_CONFIGS], describe_configs_body(body), request.session))
    synonyms, documentation = body["include_synonyms"], body["include_documentation"]
    return {"throttle_time_ms": 0, "results": [{
        "error_code": r.error_code,
        "error_message": r.error_message,
        "resource_type": r.resource_type,
        "resource_name": r.resource_name,
        "configs": [_entry(e, synonyms, documentation) for e in r.configs],
    } for r in answer.results]}


# ------------------------------------------------------------------ AlterConfigs (legacy)


def alter_configs_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/alter-configs`` body: each resource's dynamic keys become exactly its list."""
    return {
        "resources": [{
            "resource_type": r["resource_type"],
            "resource_name": r["resource_name"],
            "configs": [{"name": c["name"], "value": c["value"]} for c in r["configs"]],
        } for r in body["resources"]],
        "validate_only": body["validate_only"],
    }


def _responses(responses: tuple[AlterConfigsResourceResponse, ...]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "responses": [{
        "error_code": r.error_code,
        "error_message": r.error_message,
        "resource_type": r.resource_type,
        "resource_name": r.resource_name,
    } for r in responses]}


@answers_request_errors(AdminApi.ALTER_CONFIGS)
async def alter_configs(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """AlterConfigs: one response per distinct resource, in request order (the route's)."""
    answer = AlterConfigsResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.ALTER_CONFIGS], alter_configs_body(request.body), request.session))
    return _responses(answer.responses)


# ------------------------------------------------------------------ IncrementalAlterConfigs


def incremental_alter_configs_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/incremental-alter-configs`` body: SET / DELETE / APPEND / SUBTRACT per key, for
    the resources :func:`_refused_here` does not answer."""
    refused = _refused_here(body["resources"])
    return {
        "resources": [{
            "resource_type": r["resource_type"],
            "resource_name": r["resource_name"],
            "configs": [{"name": c["name"], "config_operation": c["config_operation"],
                         "value": c["value"]} for c in r["configs"]],
        } for r in body["resources"] if _key(r) not in refused],
        "validate_only": body["validate_only"],
    }


_OPERATIONS = frozenset(int(op) for op in OpType)


def _key(resource: dict[str, Any]) -> tuple[int, str]:
    return resource["resource_type"], resource["resource_name"]


def _refused_here(resources: list[dict[str, Any]]) -> dict[tuple[int, str], str]:
    """The resources that name an operation Kafka does not know, with their INVALID_REQUEST
    message. Kafka refuses only such a resource; the route's schema would refuse the whole
    body, so these are answered here and never sent. A resource named twice is refused as
    a duplicate first, the route's (and Kafka's) first check."""
    counts = Counter(_key(r) for r in resources)
    refused: dict[tuple[int, str], str] = {}
    for resource in resources:
        unknown = [c["config_operation"] for c in resource["configs"]
                   if c["config_operation"] not in _OPERATIONS]
        if unknown:
            refused[_key(resource)] = ("Duplicate resource." if counts[_key(resource)] > 1
                                       else f"Unknown alter config operation {unknown[0]}.")
    return refused


@answers_request_errors(AdminApi.INCREMENTAL_ALTER_CONFIGS)
async def incremental_alter_configs(request: KafkaRequest, gateway: AdminGateway
                                    ) -> dict[str, Any]:
    """IncrementalAlterConfigs: one response per distinct resource, in request order."""
    resources = request.body["resources"]
    refused = _refused_here(resources)
    route_body = incremental_alter_configs_body(request.body)
    answered: dict[tuple[int, str], AlterConfigsResourceResponse] = {}
    if route_body["resources"]:
        answer = IncrementalAlterConfigsResponse.model_validate(await gateway.write(
            ROUTES[AdminApi.INCREMENTAL_ALTER_CONFIGS], route_body, request.session))
        answered = {(r.resource_type, r.resource_name): r for r in answer.responses}
    responses = []
    for key in dict.fromkeys(_key(r) for r in resources):
        if key in refused:
            responses.append(AlterConfigsResourceResponse(
                error_code=Errors.INVALID_REQUEST.code, error_message=refused[key],
                resource_type=key[0], resource_name=key[1]))
        elif key in answered:
            responses.append(answered[key])
    return _responses(tuple(responses))
