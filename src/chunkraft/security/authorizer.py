"""Authorizer: Kafka's StandardAuthorizer rules over the ACLs of a metadata image.

The rules, as Kafka applies them:

- a super user (``super.users``) may do anything;
- the ACLs that apply to a resource are the LITERAL ACLs of its name, the LITERAL wildcard
  ``*`` of its type and the PREFIXED ACLs whose name prefixes it;
- an ACL applies to a request when its principal is the request's or ``User:*`` and its host is
  the request's or ``*``;
- a DENY of the operation (or of ALL) wins over any ALLOW;
- an ALLOW of the operation, of ALL, or of an operation that implies it (READ, WRITE, DELETE and
  ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows;
- when no ACL at all applies to the resource, ``allow.everyone.if.no.acl.found`` decides
  (default: deny).

ACLs are indexed once per ACL image (images are immutable, so the index of the image a request
sees is always exact) and each check is a few dictionary lookups.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from chunkraft.controller.image import AclsImage, MetadataImage
from chunkraft.controller.operations.acls import CLUSTER_RESOURCE_NAME, WILDCARD_RESOURCE
from chunkraft.protocol.acls import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
)
from chunkraft.records import AccessControlEntryRecord
from chunkraft.security.principal import Principal

__all__ = ["DEFAULT_BROKER_PRINCIPAL", "WILDCARD_PRINCIPAL", "Authorizer"]

DEFAULT_BROKER_PRINCIPAL = "User:broker-{id}"
"""The principal a broker authenticates as; ``{id}`` is its node id."""
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
_CACHED_INDEXES = 4

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS,
                                       AclOperation.ALTER_CONFIGS})


def _allow_grants(acl_operation: int, wanted: AclOperation) -> bool:
    if acl_operation == AclOperation.ALL or acl_operation == wanted:
        return True
    if wanted is AclOperation.DESCRIBE:
        return acl_operation in _IMPLIES_DESCRIBE
    if wanted is AclOperation.DESCRIBE_CONFIGS:
        return acl_operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


@dataclass
class _TypeIndex:
    """The ACLs of one resource type: LITERAL by name, PREFIXED by prefix."""

    literal: dict[str, list[AccessControlEntryRecord]] = field(default_factory=dict)
    prefixed: dict[str, list[AccessControlEntryRecord]] = field(default_factory=dict)
    longest_prefix: int = 0

    def matching(self, name: str) -> Iterator[AccessControlEntryRecord]:
        yield from self.literal.get(name, ())
        if name != WILDCARD_RESOURCE:
            yield from self.literal.get(WILDCARD_RESOURCE, ())
        if self.prefixed:
            for length in range(1, min(len(name), self.longest_prefix) + 1):
                yield from self.prefixed.get(name[:length], ())


def _index(acls: AclsImage) -> dict[int, _TypeIndex]:
    index: dict[int, _TypeIndex] = {}
    for acl in acls:
        entry = index.setdefault(acl.resource_type, _TypeIndex())
        if acl.pattern_type == AclPatternType.PREFIXED:
            entry.prefixed.setdefault(acl.resource_name, []).append(acl)
            entry.longest_prefix = max(entry.longest_prefix, len(acl.resource_name))
        elif acl.pattern_type == AclPatternType.LITERAL:
            entry.literal.setdefault(acl.resource_name, []).append(acl)
    return index


class Authorizer:
    """Whether a principal may perform an operation on a resource: super users, then ACLs.

    Thread-safe and cheap: the ACL index is built once per ACL image. ``broker_principal`` (with
    ``{id}``) names the principal each broker authenticates as, so a broker may act only as
    itself (:meth:`may_act_as_broker`).
    """

    def __init__(self, super_users: Iterable[str] = (), *,
                 allow_everyone_if_no_acl_found: bool = False,
                 broker_principal: str = DEFAULT_BROKER_PRINCIPAL) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.broker_principal = broker_principal
        self._lock = threading.Lock()
        # A few recent ACL images (the leader's committed and speculative images alternate),
        # each held with its index so that an id is never reused while cached.
        self._indexes: list[tuple[AclsImage, dict[int, _TypeIndex]]] = []

    def is_super_user(self, principal: Principal) -> bool:
        return principal.name in self.super_users

    def authorize(self, image: MetadataImage, principal: Principal, operation: AclOperation,
                  resource_type: AclResourceType, resource_name: str) -> bool:
        """Kafka's rules (module docstring) for one operation on one named resource."""
        if principal.name in self.super_users:
            return True
        type_index = self._index_of(image.acls).get(resource_type)
        if type_index is None:
            return self.allow_everyone_if_no_acl_found
        found_any = False
        allowed = False
        for acl in type_index.matching(resource_name):
            found_any = True
            if acl.principal != principal.name and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD_HOST and acl.host != principal.host:
                continue
            if acl.permission_type == AclPermissionType.DENY:
                if acl.operation == AclOperation.ALL or acl.operation == operation:
                    return False
            elif acl.permission_type == AclPermissionType.ALLOW and _allow_grants(
                    acl.operation, operation):
                allowed = True  # keep looking: a DENY further on still wins
        if not found_any:
            return self.allow_everyone_if_no_acl_found
        return allowed

    def authorize_cluster(self, image: MetadataImage, principal: Principal,
                          operation: AclOperation) -> bool:
        return self.authorize(image, principal, operation, AclResourceType.CLUSTER,
                              CLUSTER_RESOURCE_NAME)

    def broker_principal_of(self, broker_id: int) -> str:
        return self.broker_principal.replace("{id}", str(broker_id))

    def may_act_as_broker(self, image: MetadataImage, principal: Principal,
                          broker_id: int) -> bool:
        """A super user, or the broker's own principal with CLUSTER_ACTION on the cluster."""
        if principal.name in self.super_users:
            return True
        return principal.name == self.broker_principal_of(broker_id) and self.authorize_cluster(
            image, principal, AclOperation.CLUSTER_ACTION)

    def _index_of(self, acls: AclsImage) -> dict[int, _TypeIndex]:
        for cached, index in self._indexes:
            if cached is acls:
                return index
        index = _index(acls)
        with self._lock:
            self._indexes = [(acls, index), *self._indexes[:_CACHED_INDEXES - 1]]
        return index
