"""Authorization of the broker's data plane, Kafka's ``KafkaApis`` rules over the broker's image.

The ACLs are those of the broker's own metadata image (``runtime.follower.image``), judged by
:class:`~chunkraft.security.authorizer.Authorizer` (super users, then ACLs). What each request
needs (the table in ``docs/broker.md``):

- Produce: WRITE on each topic (TOPIC_AUTHORIZATION_FAILED per partition of a refused topic,
  inside the 200 answer); with a ``transactional_id`` also WRITE on that TRANSACTIONAL_ID
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition otherwise).
- Fetch by a consumer: READ on each topic (per topic). Fetch by a replica (``replica_id`` >= 0,
  followers and chunk copiers): the caller must be that broker with CLUSTER_ACTION on the
  cluster (:meth:`Authorizer.may_act_as_broker`), else the whole request is refused 403.
- ListOffsets: DESCRIBE per topic. OffsetsForLeaderEpoch: DESCRIBE per topic, or for a replica
  the same rule as a replica's fetch.
- InitProducerId: with a transactional id WRITE on it; without, IDEMPOTENT_WRITE on the
  cluster or WRITE on some topic (Kafka's ``authorizeByResourceType``), else 403.
- WriteTxnMarkers: CLUSTER_ACTION on the cluster (the transaction coordinator is a broker).
- CreateChunks (a chunk roll the controller forwards with the admin's own credentials): ALTER
  on each topic, per topic.
- Status and metrics: DESCRIBE on the cluster.

A whole-request refusal is a 403 with the error body (as the controller's
:mod:`chunkraft.api.access`). Without an authorizer everything is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import Response

from chunkraft.api.errors import error_response
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
)
from chunkraft.security.authorizer import WILDCARD_PRINCIPAL, Authorizer
from chunkraft.security.principal import Principal

__all__ = [
    "allowed_topics",
    "broker_refusal",
    "cluster_refusal",
    "may_write_some_topic",
    "transactional_id_allowed",
]


def allowed_topics(authorizer: Authorizer | None, image: MetadataImage, principal: Principal,
                   operation: AclOperation, names: Iterable[str]) -> set[str]:
    """The names among ``names`` that ``principal`` may ``operation`` (each judged once)."""
    unique = set(names)
    if authorizer is None or authorizer.is_super_user(principal):
        return unique
    return {name for name in unique
            if authorizer.authorize(image, principal, operation, AclResourceType.TOPIC, name)}


def cluster_refusal(authorizer: Authorizer | None, image: MetadataImage, principal: Principal,
                    operation: AclOperation) -> Response | None:
    """A 403 CLUSTER_AUTHORIZATION_FAILED answer unless ``principal`` may ``operation`` on the
    cluster; None when it may."""
    if authorizer is None or authorizer.authorize_cluster(image, principal, operation):
        return None
    return error_response(
        Errors.CLUSTER_AUTHORIZATION_FAILED,
        f"Principal {principal.name} is not authorized to {operation.name} on the cluster (it "
        "needs an ALLOW ACL for it on resource CLUSTER kafka-cluster, or to be a super user).",
        403)


def broker_refusal(authorizer: Authorizer | None, image: MetadataImage, principal: Principal,
                   broker_id: int) -> Response | None:
    """A 403 answer unless ``principal`` may act as broker ``broker_id`` (its own principal
    with CLUSTER_ACTION on the cluster, or a super user); None when it may."""
    if authorizer is None or authorizer.may_act_as_broker(image, principal, broker_id):
        return None
    expected = authorizer.broker_principal_of(broker_id)
    return error_response(
        Errors.CLUSTER_AUTHORIZATION_FAILED,
        f"Principal {principal.name} may not act as replica {broker_id}: only {expected} (with "
        "CLUSTER_ACTION on the cluster) or a super user may.", 403)


def transactional_id_allowed(authorizer: Authorizer | None, image: MetadataImage,
                             principal: Principal, transactional_id: str) -> bool:
    """WRITE on the TRANSACTIONAL_ID ``transactional_id``."""
    return authorizer is None or authorizer.authorize(
        image, principal, AclOperation.WRITE, AclResourceType.TRANSACTIONAL_ID, transactional_id)


def may_write_some_topic(authorizer: Authorizer | None, image: MetadataImage,
                         principal: Principal) -> bool:
    """Whether ``principal`` may WRITE at least one topic name, Kafka's
    ``authorizeByResourceType(TOPIC, WRITE)`` in its usual cases.

    Each ALLOW ACL of WRITE (or ALL) on topics for the principal (or ``User:*``) and host is a
    candidate; it counts if the topic it names (a literal name, or the prefix itself for a
    PREFIXED ACL, or ``*``) is actually writable under every ACL, so a DENY that covers it
    wins. With no topic ACL at all, ``allow.everyone.if.no.acl.found`` decides.
    """
    if authorizer is None or authorizer.is_super_user(principal):
        return True
    any_topic_acl = False
    for acl in image.acls:
        if acl.resource_type != AclResourceType.TOPIC:
            continue
        any_topic_acl = True
        if (acl.permission_type != AclPermissionType.ALLOW
                or acl.operation not in (AclOperation.WRITE, AclOperation.ALL)
                or acl.principal not in (principal.name, WILDCARD_PRINCIPAL)
                or acl.host not in ("*", principal.host)
                or acl.pattern_type not in (AclPatternType.LITERAL, AclPatternType.PREFIXED)):
            continue
        if authorizer.authorize(image, principal, AclOperation.WRITE, AclResourceType.TOPIC,
                                acl.resource_name):
            return True
    return not any_topic_acl and authorizer.allow_everyone_if_no_acl_found
