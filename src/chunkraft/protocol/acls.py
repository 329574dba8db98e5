"""ACL messages: CreateAcls, DeleteAcls and DescribeAcls, shaped like Kafka's.

Resource types, pattern types, operations and permission types are Kafka's enums with Kafka's
codes (what AccessControlEntryRecord stores). A request may give each as its code (``2``) or its
name (``"TOPIC"``, any case); responses carry codes. A code or name Kafka does not define fails
model validation (HTTP 400); a defined value that makes no sense where it is used (``ANY`` in an
ACL to create, ``UNKNOWN`` in a filter) is answered with INVALID_REQUEST by the operation, as
Kafka answers it.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator

from chunkraft.protocol.base import Message, StrictInt

__all__ = [
    "AclCreation",
    "AclCreationResult",
    "AclDescription",
    "AclOperation",
    "AclPatternType",
    "AclPermissionType",
    "AclResourceType",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "DeleteAclsFilter",
    "DeleteAclsFilterResult",
    "DeleteAclsMatchingAcl",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DescribeAclsRequest",
    "DescribeAclsResource",
    "DescribeAclsResponse",
]


class AclResourceType(enum.IntEnum):
    """Kafka's ``ResourceType``."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclPatternType(enum.IntEnum):
    """Kafka's ``PatternType``: ANY and MATCH only in filters; ACLs are LITERAL or PREFIXED."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """Kafka's ``AclOperation``."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    """Kafka's ``AclPermissionType``."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = TypeVar("E", bound=enum.IntEnum)


def _by_name_or_code(enum_type: type[E]) -> BeforeValidator:
    """Accepts a member's name (any case) as well as its code: a JSON integer, never a bool,
    a float or a string of digits (the messages' scalars are strict, see ``base``)."""

    def parse(value: Any) -> Any:
        if isinstance(value, bool | float) or (
                isinstance(value, str) and value.strip().lstrip("-").isdigit()):
            raise ValueError(f"{enum_type.__name__} must be a name or an integer code, "
                             f"not {value!r}")
        if isinstance(value, str):
            try:
                return enum_type[value.strip().upper()]
            except KeyError:
                names = ", ".join(member.name for member in enum_type)
                raise ValueError(
                    f"unknown {enum_type.__name__} {value!r}; expected one of {names} "
                    "or its code"
                ) from None
        return value

    return BeforeValidator(parse)


ResourceTypeField = Annotated[AclResourceType, _by_name_or_code(AclResourceType)]
PatternTypeField = Annotated[AclPatternType, _by_name_or_code(AclPatternType)]
OperationField = Annotated[AclOperation, _by_name_or_code(AclOperation)]
PermissionTypeField = Annotated[AclPermissionType, _by_name_or_code(AclPermissionType)]


# ------------------------------------------------------------------ CreateAcls


class AclCreation(Message):
    """An ACL to create (Kafka's ``AclCreation``; ``host`` ``*`` matches any host)."""

    resource_type: ResourceTypeField
    resource_name: str
    resource_pattern_type: PatternTypeField = AclPatternType.LITERAL
    principal: str
    host: str = "*"
    operation: OperationField
    permission_type: PermissionTypeField


class CreateAclsRequest(Message):
    """ACLs to create; each succeeds or fails on its own."""

    creations: tuple[AclCreation, ...] = ()


class AclCreationResult(Message):
    """The outcome of one creation, in request order."""

    error_code: StrictInt = 0
    error_message: str | None = None


class CreateAclsResponse(Message):
    """One result per creation, in request order."""

    results: tuple[AclCreationResult, ...] = ()


# ------------------------------------------------------------------ DeleteAcls


class DeleteAclsFilter(Message):
    """Matches ACLs: null names, principals and hosts match any; ANY types match any type.

    ``pattern_type_filter`` MATCH matches the ACLs that apply to ``resource_name_filter``: the
    literal ACL of that name, the wildcard ``*`` literal ACL, and prefixed ACLs whose name is a
    prefix of it.
    """

    resource_type_filter: ResourceTypeField
    resource_name_filter: str | None = None
    pattern_type_filter: PatternTypeField = AclPatternType.LITERAL
    principal_filter: str | None = None
    host_filter: str | None = None
    operation: OperationField
    permission_type: PermissionTypeField


class DeleteAclsRequest(Message):
    """Filters; every ACL that matches any filter is deleted."""

    filters: tuple[DeleteAclsFilter, ...] = ()


class DeleteAclsMatchingAcl(Message):
    """An ACL a filter matched (and that is deleted)."""

    error_code: StrictInt = 0
    error_message: str | None = None
    resource_type: AclResourceType
    resource_name: str
    pattern_type: AclPatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


class DeleteAclsFilterResult(Message):
    """One filter's outcome: an error, or the ACLs it matched."""

    error_code: StrictInt = 0
    error_message: str | None = None
    matching_acls: tuple[DeleteAclsMatchingAcl, ...] = ()


class DeleteAclsResponse(Message):
    """One result per filter, in request order."""

    filter_results: tuple[DeleteAclsFilterResult, ...] = ()


# ------------------------------------------------------------------ DescribeAcls


class DescribeAclsRequest(Message):
    """One filter, as in DeleteAcls (Kafka's DescribeAcls request carries one)."""

    resource_type_filter: ResourceTypeField = AclResourceType.ANY
    resource_name_filter: str | None = None
    pattern_type_filter: PatternTypeField = AclPatternType.ANY
    principal_filter: str | None = None
    host_filter: str | None = None
    operation: OperationField = AclOperation.ANY
    permission_type: PermissionTypeField = AclPermissionType.ANY


class AclDescription(Message):
    """An access control entry of a described resource."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


class DescribeAclsResource(Message):
    """A resource pattern and its matching entries."""

    resource_type: AclResourceType
    resource_name: str
    pattern_type: AclPatternType
    acls: tuple[AclDescription, ...] = ()


class DescribeAclsResponse(Message):
    """An error, or the matching ACLs grouped by resource pattern."""

    error_code: StrictInt = 0
    error_message: str | None = None
    resources: tuple[DescribeAclsResource, ...] = ()
