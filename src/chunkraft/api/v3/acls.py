"""``/v3/clusters/{cluster_id}/acls``: list, create and delete ACLs (Confluent's shape).

Enum values travel by name (``TOPIC``, ``LITERAL``, ``ALLOW``, ``READ``). Listing needs
DESCRIBE on the cluster; creating and deleting need ALTER on the cluster (else 403
CLUSTER_AUTHORIZATION_FAILED). A filter matches as Kafka's ``AclBindingFilter`` does: absent
names, principals and hosts match any, ANY types match any type, and pattern type MATCH matches
the ACLs that apply to a resource name. DELETE needs at least ``resource_type`` (ANY to mean
every type), so a bare ``DELETE .../acls`` never wipes every ACL by accident.
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Request, Response

from chunkraft.api.authentication import principal_of
from chunkraft.api.errors import error_response
from chunkraft.api.parameters import MinOffset, WaitMs
from chunkraft.api.rpc import execute_write
from chunkraft.api.v3.acl_models import (
    AclOperationName,
    AclPatternTypeName,
    AclPermissionName,
    AclResourceTypeName,
    KafkaAcl,
    KafkaAclBody,
    KafkaAclList,
)
from chunkraft.api.v3.common import (
    ERROR_RESPONSES,
    Links,
    NoBody,
    body_schema,
    check_cluster,
    context_of,
    item_error_response,
    json_answer,
    read_body_as,
    read_image,
)
from chunkraft.api.v3.encoding import acl_dict, list_json
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations import acls
from chunkraft.controller.operations.acls import AclFilter, acl_matches
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import (
    AclCreation,
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilter,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from chunkraft.records import AccessControlEntryRecord

__all__ = ["router"]

router = APIRouter(tags=["v3 ACLs"])


def _cluster_forbidden(request: Request, image: MetadataImage, operation: AclOperation
                       ) -> Response | None:
    authorizer = context_of(request).authorizer
    if authorizer is None or authorizer.authorize_cluster(image, principal_of(request),
                                                          operation):
        return None
    return error_response(Errors.CLUSTER_AUTHORIZATION_FAILED,
                          f"not authorized to {operation.name} the cluster's ACLs", 403)


def _filter(resource_type: AclResourceTypeName | None, resource_name: str | None,
            pattern_type: AclPatternTypeName | None, principal: str | None, host: str | None,
            operation: AclOperationName | None, permission: AclPermissionName | None
            ) -> AclFilter:
    return AclFilter(
        resource_type=AclResourceType[resource_type or "ANY"],
        resource_name=resource_name,
        pattern_type=AclPatternType[pattern_type or "ANY"],
        principal=principal,
        host=host,
        operation=AclOperation[operation or "ANY"],
        permission_type=AclPermissionType[permission or "ANY"],
    )


def _sort_key(acl: AccessControlEntryRecord) -> tuple[int, str, int, str, str, int, int]:
    return (acl.resource_type, acl.resource_name, acl.pattern_type, acl.principal, acl.host,
            acl.operation, acl.permission_type)


def _acl_list(request: Request, links: Links, found: list[AccessControlEntryRecord],
              offset: int) -> Response:
    items = [json.dumps(acl_dict(links, acl), separators=(",", ":"))
             for acl in sorted(found, key=_sort_key)]
    return json_answer(list_json("KafkaAclList", str(request.url), None, offset, items), offset)


@router.get("/clusters/{cluster_id}/acls", summary="The ACLs that match a filter",
            response_model=None, responses={200: {"model": KafkaAclList}, **ERROR_RESPONSES})
async def list_acls(request: Request, cluster_id: str,
                    resource_type: AclResourceTypeName | None = None,
                    resource_name: str | None = None,
                    pattern_type: AclPatternTypeName | None = None,
                    principal: str | None = None, host: str | None = None,
                    operation: AclOperationName | None = None,
                    permission: AclPermissionName | None = None,
                    min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    image = await read_image(request, cluster_id, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    refused = _cluster_forbidden(request, image, AclOperation.DESCRIBE)
    if refused is not None:
        return refused
    acl_filter = _filter(resource_type, resource_name, pattern_type, principal, host,
                         operation, permission)
    found = [acl for acl in image.acls if acl_matches(acl_filter, acl)]
    return _acl_list(request, Links(request, cluster_id), found, image.offset)


@router.post("/clusters/{cluster_id}/acls", summary="Create one ACL", status_code=201,
             response_model=None, openapi_extra=body_schema(KafkaAclBody),
             responses={201: {"model": KafkaAcl, "description": "Created (or already there)."},
                        **ERROR_RESPONSES})
async def create_acl(request: Request, cluster_id: str) -> Response:
    read = await read_body_as(request, cluster_id, KafkaAclBody)
    if isinstance(read, Response):
        return read
    raw, body = read
    refused = _cluster_forbidden(request, context_of(request).controller.image,
                                 AclOperation.ALTER)
    if refused is not None:
        return refused
    creation = AclCreation(
        resource_type=AclResourceType[body.resource_type],
        resource_name=body.resource_name,
        resource_pattern_type=AclPatternType[body.pattern_type],
        principal=body.principal, host=body.host,
        operation=AclOperation[body.operation],
        permission_type=AclPermissionType[body.permission])
    request_ = CreateAclsRequest(creations=(creation,))
    outcome = await execute_write(request, raw, lambda image: acls.create_acls(image, request_),
                                  CreateAclsResponse)
    if isinstance(outcome, Response):
        return outcome
    result = outcome.response.results[0]
    if result.error_code:
        return item_error_response(result.error_code, result.error_message, outcome.offset)
    links = Links(request, cluster_id)
    answer = {"kind": "KafkaAcl", "metadata": {"self": links.acls(),
                                               "metadata_offset": outcome.offset},
              **body.model_dump(mode="json")}
    return json_answer(answer, outcome.offset, 201)


@router.delete("/clusters/{cluster_id}/acls", summary="Delete the ACLs that match a filter",
               response_model=None,
               responses={200: {"model": KafkaAclList, "description": "The deleted ACLs."},
                          **ERROR_RESPONSES})
async def delete_acls(request: Request, cluster_id: str, resource_type: AclResourceTypeName,
                      resource_name: str | None = None,
                      pattern_type: AclPatternTypeName | None = None,
                      principal: str | None = None, host: str | None = None,
                      operation: AclOperationName | None = None,
                      permission: AclPermissionName | None = None) -> Response:
    read = await read_body_as(request, cluster_id, NoBody)
    if isinstance(read, Response):
        return read
    raw, _ = read
    context = context_of(request)
    refused = check_cluster(context, cluster_id) or _cluster_forbidden(
        request, context.controller.image, AclOperation.ALTER)
    if refused is not None:
        return refused
    acl_filter = _filter(resource_type, resource_name, pattern_type, principal, host,
                         operation, permission)
    request_ = DeleteAclsRequest(filters=(DeleteAclsFilter(
        resource_type_filter=acl_filter.resource_type,
        resource_name_filter=acl_filter.resource_name,
        pattern_type_filter=acl_filter.pattern_type,
        principal_filter=acl_filter.principal, host_filter=acl_filter.host,
        operation=acl_filter.operation, permission_type=acl_filter.permission_type),))
    outcome = await execute_write(request, raw, lambda image: acls.delete_acls(image, request_),
                                  DeleteAclsResponse)
    if isinstance(outcome, Response):
        return outcome
    result = outcome.response.filter_results[0]
    if result.error_code:
        return item_error_response(result.error_code, result.error_message, outcome.offset)
    deleted = [AccessControlEntryRecord(
        resource_type=int(m.resource_type), resource_name=m.resource_name,
        pattern_type=int(m.pattern_type), principal=m.principal, host=m.host,
        operation=int(m.operation), permission_type=int(m.permission_type))
        for m in result.matching_acls]
    return _acl_list(request, Links(request, cluster_id), deleted, outcome.offset)
