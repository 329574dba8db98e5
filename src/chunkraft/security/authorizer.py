"""Authorizer: Kafka's StandardAuthorizer rules over the ACLs of a metadata image.

STUB (the lead is implementing it): every check allows. The signatures are final.
"""

from __future__ import annotations

from collections.abc import Iterable

from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.security.principal import Principal

__all__ = ["DEFAULT_BROKER_PRINCIPAL", "Authorizer"]

DEFAULT_BROKER_PRINCIPAL = "User:broker-{id}"


class Authorizer:
    """Whether a principal may perform an operation on a resource: super users, then ACLs."""

    def __init__(self, super_users: Iterable[str] = (), *,
                 allow_everyone_if_no_acl_found: bool = False,
                 broker_principal: str = DEFAULT_BROKER_PRINCIPAL) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.broker_principal = broker_principal

    def is_super_user(self, principal: Principal) -> bool:
        return principal.name in self.super_users

    def authorize(self, image: MetadataImage, principal: Principal, operation: AclOperation,
                  resource_type: AclResourceType, resource_name: str) -> bool:
        return True

    def authorize_cluster(self, image: MetadataImage, principal: Principal,
                          operation: AclOperation) -> bool:
        return True

    def may_act_as_broker(self, image: MetadataImage, principal: Principal,
                          broker_id: int) -> bool:
        return True
