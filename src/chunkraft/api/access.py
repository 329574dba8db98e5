"""Whole-request authorization: cluster-level permissions and brokers acting as themselves.

What a request needs (the table in ``docs/security.md``): a broker's calls need the caller to be
that broker (:meth:`~chunkraft.security.authorizer.Authorizer.may_act_as_broker`); the metadata
stream needs CLUSTER_ACTION on the cluster; quorum status and DescribeAcls DESCRIBE; ACL
changes and UnregisterBroker ALTER. A refusal is a 403 ``CLUSTER_AUTHORIZATION_FAILED`` with the
error body. (Per-topic checks are :mod:`chunkraft.api.authorized`'s, per item.)

A write is checked inside its operation, on the image the leader validates it against, so the
ACLs that decide are the leader's latest (a follower forwards without judging with ACLs that
may lag); the refusal is raised as an ApiException, which the app answers 403 and which leaves
nothing staged. A read is checked on the image of the node that answers it. Without an
authorizer (in-process tests of other layers) everything is allowed.
"""

from __future__ import annotations

from typing import TypeVar

from fastapi import Response

from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import error_response
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.result import ControllerResult, Operation
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.security.principal import Principal

__all__ = ["as_broker", "cluster_refusal", "on_cluster"]

R = TypeVar("R")


def _cluster_message(principal: Principal, operation: AclOperation) -> str:
    return (f"Principal {principal.name} is not authorized to {operation.name} on the cluster "
            "(it needs an ALLOW ACL for it on resource CLUSTER kafka-cluster, or to be a "
            "super user).")


def cluster_refusal(context: ControllerContext, principal: Principal, operation: AclOperation,
                    image: MetadataImage | None = None) -> Response | None:
    """A 403 answer if ``principal`` may not ``operation`` on the cluster (judged on ``image``,
    default this node's committed image), else None."""
    authorizer = context.authorizer
    if authorizer is None:
        return None
    image = image if image is not None else context.controller.image
    if authorizer.authorize_cluster(image, principal, operation):
        return None
    return error_response(Errors.CLUSTER_AUTHORIZATION_FAILED,
                          _cluster_message(principal, operation), 403)


def on_cluster(context: ControllerContext, principal: Principal, operation: AclOperation,
               write: Operation[R]) -> Operation[R]:
    """``write``, refused 403 unless ``principal`` may ``operation`` on the cluster."""
    authorizer = context.authorizer
    if authorizer is None:
        return write

    def checked(image: MetadataImage) -> ControllerResult[R]:
        if not authorizer.authorize_cluster(image, principal, operation):
            raise ApiException(Errors.CLUSTER_AUTHORIZATION_FAILED,
                               _cluster_message(principal, operation))
        return write(image)

    return checked


def as_broker(context: ControllerContext, principal: Principal, broker_id: int,
              write: Operation[R]) -> Operation[R]:
    """``write`` on behalf of broker ``broker_id``, refused 403 unless ``principal`` is that
    broker (``auth.broker.principal`` with CLUSTER_ACTION on the cluster) or a super user."""
    authorizer = context.authorizer
    if authorizer is None:
        return write

    def checked(image: MetadataImage) -> ControllerResult[R]:
        if not authorizer.may_act_as_broker(image, principal, broker_id):
            expected = authorizer.broker_principal.format(id=broker_id)
            raise ApiException(
                Errors.CLUSTER_AUTHORIZATION_FAILED,
                f"Principal {principal.name} may not act as broker {broker_id}: only "
                f"{expected} (with CLUSTER_ACTION on the cluster) or a super user may.")
        return write(image)

    return checked
