"""The REST v3 ACL bodies (Confluent's ``KafkaAcl`` shapes), as pydantic models."""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chunkraft.api.v3.models import ListMetadata, RequestBody, ResourceMetadata

__all__ = [
    "MAX_ACL_TEXT",
    "AclOperationName",
    "AclPatternTypeName",
    "AclPermissionName",
    "AclResourceTypeName",
    "KafkaAcl",
    "KafkaAclBody",
    "KafkaAclList",
]


class AclResourceTypeName(enum.StrEnum):
    """Kafka's resource types by name (ANY only in filters)."""

    ANY = "ANY"
    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "CLUSTER"
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"
    DELEGATION_TOKEN = "DELEGATION_TOKEN"
    USER = "USER"


class AclPatternTypeName(enum.StrEnum):
    """LITERAL or PREFIXED in an ACL; ANY and MATCH only in filters."""

    ANY = "ANY"
    MATCH = "MATCH"
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class AclOperationName(enum.StrEnum):
    """Kafka's ACL operations by name (ANY only in filters)."""

    ANY = "ANY"
    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    CLUSTER_ACTION = "CLUSTER_ACTION"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"
    CREATE_TOKENS = "CREATE_TOKENS"
    DESCRIBE_TOKENS = "DESCRIBE_TOKENS"
    TWO_PHASE_COMMIT = "TWO_PHASE_COMMIT"


class AclPermissionName(enum.StrEnum):
    """ALLOW or DENY (ANY only in filters)."""

    ANY = "ANY"
    DENY = "DENY"
    ALLOW = "ALLOW"


MAX_ACL_TEXT = 0x7FFF // 4
"""Characters of an ACL's resource name, principal or host: the record codec stores at most
32767 bytes of UTF-8, which this many characters never exceed."""


def _only(*names: str) -> dict[str, Any]:
    return {"enum": list(names)}


class KafkaAclBody(RequestBody):
    """One ACL to create (Confluent's shape; ``host`` ``*`` matches any host). The values only
    filters take (ANY, MATCH) are declared out of the schema and refused by the operation
    with Kafka's messages, as are an empty name, a CLUSTER name other than ``kafka-cluster``
    and a principal that is not ``type:name``."""

    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"resource_type": {"const": "CLUSTER"}}},
        "then": {"properties": {"resource_name": {"const": "kafka-cluster"}}}})

    resource_type: AclResourceTypeName = Field(json_schema_extra=_only(
        *(name.value for name in AclResourceTypeName if name is not AclResourceTypeName.ANY)))
    resource_name: str = Field(max_length=MAX_ACL_TEXT, json_schema_extra={"minLength": 1})
    pattern_type: AclPatternTypeName = Field(
        default=AclPatternTypeName.LITERAL, json_schema_extra=_only("LITERAL", "PREFIXED"))
    principal: str = Field(max_length=MAX_ACL_TEXT,
                           json_schema_extra={"pattern": "^[^:]+:[\\s\\S]+$"})
    host: str = Field(default="*", max_length=MAX_ACL_TEXT)
    operation: AclOperationName = Field(json_schema_extra=_only(
        *(name.value for name in AclOperationName if name is not AclOperationName.ANY)))
    permission: AclPermissionName = Field(json_schema_extra=_only("ALLOW", "DENY"))


class KafkaAcl(BaseModel):
    kind: str = "KafkaAcl"
    metadata: ResourceMetadata
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


class KafkaAclList(BaseModel):
    kind: str = "KafkaAclList"
    metadata: ListMetadata
    data: list[KafkaAcl]



