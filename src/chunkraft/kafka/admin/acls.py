"""DescribeAcls, CreateAcls and DeleteAcls 1-3 over the ACL routes.

Pure translation, as :mod:`chunkraft.kafka.admin.topics`: the routes take Kafka's enum codes
and answer with them. One code path differs: a code Kafka does not define (a resource type
99, say) is read by Kafka as UNKNOWN (``ResourceType.fromCode``), which the operation then
refuses with INVALID_REQUEST for that creation or filter alone; the route's schema would
refuse the whole body instead, so such a code is sent as UNKNOWN (0), as Kafka reads it.
"""

from __future__ import annotations

import enum
from typing import Any

from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.errors import answers_request_errors
from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import KafkaRequest
from chunkraft.protocol.acls import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    CreateAclsResponse,
    DeleteAclsResponse,
    DescribeAclsResponse,
)

__all__ = [
    "create_acls",
    "create_acls_body",
    "delete_acls",
    "delete_acls_body",
    "describe_acls",
    "describe_acls_body",
]


def _known(code: int, kind: type[enum.IntEnum]) -> int:
    return code if code in kind._value2member_map_ else 0


def _filter(f: dict[str, Any]) -> dict[str, Any]:
    return {
        "resource_type_filter": _known(f["resource_type_filter"], AclResourceType),
        "resource_name_filter": f["resource_name_filter"],
        "pattern_type_filter": _known(f["pattern_type_filter"], AclPatternType),
        "principal_filter": f["principal_filter"],
        "host_filter": f["host_filter"],
        "operation": _known(f["operation"], AclOperation),
        "permission_type": _known(f["permission_type"], AclPermissionType),
    }


# ------------------------------------------------------------------ DescribeAcls


def describe_acls_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/describe-acls`` body: the request is one filter."""
    return _filter(body)


@answers_request_errors(AdminApi.DESCRIBE_ACLS)
async def describe_acls(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """DescribeAcls: an error, or the matching ACLs grouped by resource pattern."""
    answer = DescribeAclsResponse.model_validate(await gateway.read(
        ROUTES[AdminApi.DESCRIBE_ACLS], describe_acls_body(request.body), request.session))
    return {
        "throttle_time_ms": 0,
        "error_code": answer.error_code,
        "error_message": answer.error_message,
        "resources": [{
            "resource_type": int(r.resource_type),
            "resource_name": r.resource_name,
            "pattern_type": int(r.pattern_type),
            "acls": [{"principal": a.principal, "host": a.host, "operation": int(a.operation),
                      "permission_type": int(a.permission_type)} for a in r.acls],
        } for r in answer.resources],
    }


# ------------------------------------------------------------------ CreateAcls


def create_acls_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/create-acls`` body."""
    return {"creations": [{
        "resource_type": _known(c["resource_type"], AclResourceType),
        "resource_name": c["resource_name"],
        "resource_pattern_type": _known(c["resource_pattern_type"], AclPatternType),
        "principal": c["principal"],
        "host": c["host"],
        "operation": _known(c["operation"], AclOperation),
        "permission_type": _known(c["permission_type"], AclPermissionType),
    } for c in body["creations"]]}


@answers_request_errors(AdminApi.CREATE_ACLS)
async def create_acls(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """CreateAcls: one result per creation, in request order."""
    answer = CreateAclsResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.CREATE_ACLS], create_acls_body(request.body), request.session))
    return {"throttle_time_ms": 0, "results": [
        {"error_code": r.error_code, "error_message": r.error_message}
        for r in answer.results]}


# ------------------------------------------------------------------ DeleteAcls


def delete_acls_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/delete-acls`` body."""
    return {"filters": [_filter(f) for f in body["filters"]]}


@answers_request_errors(AdminApi.DELETE_ACLS)
async def delete_acls(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """DeleteAcls: one result per filter, in request order, with the ACLs it deleted."""
    answer = DeleteAclsResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.DELETE_ACLS], delete_acls_body(request.body), request.session))
    return {"throttle_time_ms": 0, "filter_results": [{
        "error_code": r.error_code,
        "error_message": r.error_message,
        "matching_acls": [{
            "error_code": m.error_code,
            "error_message": m.error_message,
            "resource_type": int(m.resource_type),
            "resource_name": m.resource_name,
            "pattern_type": int(m.pattern_type),
            "principal": m.principal,
            "host": m.host,
            "operation": int(m.operation),
            "permission_type": int(m.permission_type),
        } for m in r.matching_acls],
    } for r in answer.filter_results]}
