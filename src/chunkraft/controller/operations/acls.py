"""ACL operations: CreateAcls, DeleteAcls (by filter) and DescribeAcls, as Kafka's
``AclControlManager`` does them; ACLs live in the metadata log (AccessControlEntryRecord)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import NamedTuple

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import (
    AclCreation,
    AclCreationResult,
    AclDescription,
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilter,
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from chunkraft.records import ZERO_UUID, AccessControlEntryRecord, RemoveAccessControlEntryRecord
from chunkraft.records.uuids import random_kafka_uuid

__all__ = [
    "CLUSTER_RESOURCE_NAME",
    "WILDCARD_RESOURCE",
    "AclFilter",
    "acl_matches",
    "create_acls",
    "delete_acls",
    "describe_acls",
]

CLUSTER_RESOURCE_NAME = "kafka-cluster"
"""The only name a CLUSTER resource may have (Kafka's ``Resource.CLUSTER_NAME``)."""
WILDCARD_RESOURCE = "*"
"""A LITERAL ACL on this name applies to every resource of its type."""

_MAX_STRING_BYTES = 0x7FFF  # the record codec's STRING limit
_MAX_ID_ATTEMPTS = 64


class AclFilter(NamedTuple):
    """A DeleteAcls / DescribeAcls filter: None and the ANY values match anything."""

    resource_type: AclResourceType
    resource_name: str | None
    pattern_type: AclPatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def problem(self) -> str | None:
        """Kafka's ``validateFilter``: UNKNOWN anywhere makes the filter unusable."""
        if (self.resource_type is AclResourceType.UNKNOWN
                or self.pattern_type is AclPatternType.UNKNOWN):
            return "Unknown patternFilter."
        if (self.operation is AclOperation.UNKNOWN
                or self.permission_type is AclPermissionType.UNKNOWN):
            return "Unknown entryFilter."
        return None


def acl_matches(acl_filter: AclFilter, acl: AccessControlEntryRecord) -> bool:
    """Kafka's ``AclBindingFilter.matches``: the resource pattern filter, then the entry filter.

    Pattern type MATCH with a name matches the ACLs that apply to that resource name: the
    LITERAL ACL of the name, the LITERAL wildcard ``*`` and PREFIXED ACLs that prefix it.
    """
    kind = acl_filter.pattern_type
    if acl_filter.resource_type is not AclResourceType.ANY and (
        acl_filter.resource_type != acl.resource_type
    ):
        return False
    if kind not in (AclPatternType.ANY, AclPatternType.MATCH) and kind != acl.pattern_type:
        return False
    name = acl_filter.resource_name
    if name is not None:
        if kind is AclPatternType.ANY or kind == acl.pattern_type:
            if name != acl.resource_name:
                return False
        elif acl.pattern_type == AclPatternType.LITERAL:
            if name != acl.resource_name and acl.resource_name != WILDCARD_RESOURCE:
                return False
        elif acl.pattern_type == AclPatternType.PREFIXED:
            if not name.startswith(acl.resource_name):
                return False
        else:
            return False
    if acl_filter.principal is not None and acl_filter.principal != acl.principal:
        return False
    if acl_filter.host is not None and acl_filter.host != acl.host:
        return False
    if acl_filter.operation is not AclOperation.ANY and acl_filter.operation != acl.operation:
        return False
    return acl_filter.permission_type is AclPermissionType.ANY or (
        acl_filter.permission_type == acl.permission_type
    )


# ------------------------------------------------------------------ CreateAcls


def create_acls(
    image: MetadataImage,
    request: CreateAclsRequest,
    *,
    new_id: Callable[[], uuid.UUID] = random_kafka_uuid,
) -> ControllerResult[CreateAclsResponse]:
    """One AccessControlEntryRecord per new, valid ACL; one result per creation, in order.

    INVALID_REQUEST (Kafka's ``validateNewAcl`` and the broker's checks) for: resource type
    UNKNOWN or ANY; pattern type other than LITERAL or PREFIXED; operation UNKNOWN or ANY;
    permission type other than ALLOW or DENY; an empty resource name; a CLUSTER resource not
    named ``kafka-cluster``; a principal not of the form ``Type:name``; a string too long for a
    record. An ACL equal to an existing one (or to an earlier creation of the request) succeeds
    and writes nothing.

    ``new_id`` makes the ACL ids: the leader draws them now and the record carries them, so
    replay stays deterministic (tests pass a counter). Ids that are zero or already taken are
    drawn again.
    """
    existing = {_binding(acl) for acl in image.acls}
    taken = set(image.acls.by_id)
    records: list[AccessControlEntryRecord] = []
    results: list[AclCreationResult] = []
    for creation in request.creations:
        problem = _creation_problem(creation)
        if problem is not None:
            results.append(_creation_error(Errors.INVALID_REQUEST, problem))
            continue
        record = AccessControlEntryRecord(
            resource_type=int(creation.resource_type),
            resource_name=creation.resource_name,
            pattern_type=int(creation.resource_pattern_type),
            principal=creation.principal,
            host=creation.host,
            operation=int(creation.operation),
            permission_type=int(creation.permission_type),
        )
        binding = _binding(record)
        if binding in existing:
            results.append(AclCreationResult())
            continue
        acl_id = _fresh_id(new_id, taken)
        if acl_id is None:
            results.append(_creation_error(
                Errors.UNKNOWN_SERVER_ERROR, "could not draw an unused ACL id"
            ))
            continue
        existing.add(binding)
        taken.add(acl_id)
        records.append(record._replace(id=acl_id))
        results.append(AclCreationResult())
    return ControllerResult.of(CreateAclsResponse(results=tuple(results)), records)


def _creation_problem(creation: AclCreation) -> str | None:
    if creation.resource_type in (AclResourceType.UNKNOWN, AclResourceType.ANY):
        return f"Invalid resourceType {creation.resource_type.name}"
    if creation.resource_pattern_type not in (AclPatternType.LITERAL, AclPatternType.PREFIXED):
        return f"Invalid patternType {creation.resource_pattern_type.name}"
    if creation.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {creation.operation.name}"
    if creation.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {creation.permission_type.name}"
    if not creation.resource_name:
        return "Resource name should not be empty"
    if (creation.resource_type is AclResourceType.CLUSTER
            and creation.resource_name != CLUSTER_RESOURCE_NAME):
        return f"The only valid name for the CLUSTER resource is {CLUSTER_RESOURCE_NAME}"
    principal_type, colon, principal_name = creation.principal.partition(":")
    if not colon or not principal_type or not principal_name:
        return (
            f"Invalid principal {creation.principal!r}: expected principalType:principalName, "
            "e.g. User:alice"
        )
    for field, value in (("resource name", creation.resource_name),
                         ("principal", creation.principal), ("host", creation.host)):
        if len(value.encode()) > _MAX_STRING_BYTES:
            return f"The {field} is longer than {_MAX_STRING_BYTES} bytes"
    return None


def _creation_error(error: Errors, message: str) -> AclCreationResult:
    return AclCreationResult(error_code=error.code, error_message=message)


def _fresh_id(new_id: Callable[[], uuid.UUID], taken: set[uuid.UUID]) -> uuid.UUID | None:
    for _ in range(_MAX_ID_ATTEMPTS):
        candidate = new_id()
        if candidate != ZERO_UUID and candidate not in taken:
            return candidate
    return None


def _binding(acl: AccessControlEntryRecord) -> tuple[int, str, int, str, str, int, int]:
    return (acl.resource_type, acl.resource_name, acl.pattern_type, acl.principal, acl.host,
            acl.operation, acl.permission_type)


# ------------------------------------------------------------------ DeleteAcls


def delete_acls(
    image: MetadataImage, request: DeleteAclsRequest
) -> ControllerResult[DeleteAclsResponse]:
    """Deletes every ACL that any filter matches: one RemoveAccessControlEntryRecord per ACL.

    Per filter, in order: INVALID_REQUEST for UNKNOWN in a type ("Unknown patternFilter." /
    "Unknown entryFilter.", as Kafka), else the ACLs it matched (an ACL two filters match is
    listed in both results and removed once). A filter that matches nothing succeeds.
    """
    removed: dict[uuid.UUID, None] = {}
    results: list[DeleteAclsFilterResult] = []
    for delete_filter in request.filters:
        acl_filter = _delete_filter(delete_filter)
        problem = acl_filter.problem()
        if problem is not None:
            results.append(DeleteAclsFilterResult(
                error_code=Errors.INVALID_REQUEST.code, error_message=problem
            ))
            continue
        matching: list[DeleteAclsMatchingAcl] = []
        for acl in image.acls:
            if acl_matches(acl_filter, acl):
                removed[acl.id] = None
                matching.append(DeleteAclsMatchingAcl(
                    resource_type=AclResourceType(acl.resource_type),
                    resource_name=acl.resource_name,
                    pattern_type=AclPatternType(acl.pattern_type),
                    principal=acl.principal,
                    host=acl.host,
                    operation=AclOperation(acl.operation),
                    permission_type=AclPermissionType(acl.permission_type),
                ))
        results.append(DeleteAclsFilterResult(matching_acls=tuple(matching)))
    records = [RemoveAccessControlEntryRecord(id=acl_id) for acl_id in removed]
    return ControllerResult.of(DeleteAclsResponse(filter_results=tuple(results)), records)


def _delete_filter(delete_filter: DeleteAclsFilter) -> AclFilter:
    return AclFilter(
        resource_type=delete_filter.resource_type_filter,
        resource_name=delete_filter.resource_name_filter,
        pattern_type=delete_filter.pattern_type_filter,
        principal=delete_filter.principal_filter,
        host=delete_filter.host_filter,
        operation=delete_filter.operation,
        permission_type=delete_filter.permission_type,
    )


# ------------------------------------------------------------------ DescribeAcls


def describe_acls(
    image: MetadataImage, request: DescribeAclsRequest
) -> ControllerResult[DescribeAclsResponse]:
    """The ACLs the request's filter matches, grouped by resource pattern; writes nothing.

    INVALID_REQUEST for a filter with UNKNOWN in a type, as DeleteAcls. Resources are sorted by
    (type, name, pattern type) and their entries by (principal, host, operation, permission), so
    equal images answer equally.
    """
    acl_filter = AclFilter(
        resource_type=request.resource_type_filter,
        resource_name=request.resource_name_filter,
        pattern_type=request.pattern_type_filter,
        principal=request.principal_filter,
        host=request.host_filter,
        operation=request.operation,
        permission_type=request.permission_type,
    )
    problem = acl_filter.problem()
    if problem is not None:
        return ControllerResult.of(DescribeAclsResponse(
            error_code=Errors.INVALID_REQUEST.code, error_message=problem
        ))
    return ControllerResult.of(DescribeAclsResponse(
        resources=_grouped(acl for acl in image.acls if acl_matches(acl_filter, acl))
    ))


def _grouped(acls: Iterable[AccessControlEntryRecord]) -> tuple[DescribeAclsResource, ...]:
    by_resource: dict[tuple[int, str, int], list[AccessControlEntryRecord]] = {}
    for acl in acls:
        by_resource.setdefault(
            (acl.resource_type, acl.resource_name, acl.pattern_type), []
        ).append(acl)
    return tuple(
        DescribeAclsResource(
            resource_type=AclResourceType(resource_type),
            resource_name=resource_name,
            pattern_type=AclPatternType(pattern_type),
            acls=tuple(
                AclDescription(
                    principal=acl.principal,
                    host=acl.host,
                    operation=AclOperation(acl.operation),
                    permission_type=AclPermissionType(acl.permission_type),
                )
                for acl in sorted(entries, key=lambda a: (a.principal, a.host, a.operation,
                                                          a.permission_type))
            ),
        )
        for (resource_type, resource_name, pattern_type), entries in sorted(by_resource.items())
    )
