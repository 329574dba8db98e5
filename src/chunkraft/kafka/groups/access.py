"""Who may do what to a group, as Kafka's ``KafkaApis`` decides it for the group APIs."""

from __future__ import annotations

from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.security.principal import Principal

__all__ = ["GROUP_OPERATIONS", "authorized_operations", "group_allowed", "group_refusal"]

GROUP_OPERATIONS = (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE)
"""The operations that apply to a group (DescribeGroups' authorized operations)."""
NOT_REQUESTED = -(2**31)


def group_allowed(runtime: Any, principal: Principal, operation: AclOperation,
                  group_id: str) -> bool:
    """Whether ``principal`` may do ``operation`` on group ``group_id`` (no authorizer:
    everyone may)."""
    authorizer = runtime.authorizer
    return authorizer is None or bool(authorizer.authorize(
        runtime.follower.image, principal, operation, AclResourceType.GROUP, group_id))


def group_refusal(principal: Principal, operation: AclOperation, group_id: str
                  ) -> tuple[Errors, str]:
    """GROUP_AUTHORIZATION_FAILED with the message Kafka operators read in logs."""
    return (Errors.GROUP_AUTHORIZATION_FAILED,
            f"Principal {principal.name} is not authorized to {operation.name} group "
            f"{group_id!r}.")


def authorized_operations(runtime: Any, principal: Principal, group_id: str,
                          requested: bool) -> int:
    """Kafka's bit field of the group operations ``principal`` may do (or the "not
    requested" value)."""
    if not requested:
        return NOT_REQUESTED
    bits = 0
    for operation in GROUP_OPERATIONS:
        if group_allowed(runtime, principal, operation, group_id):
            bits |= 1 << int(operation)
    return bits
