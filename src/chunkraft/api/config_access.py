"""Who may alter or describe which configurations (Kafka's ``ControllerApis`` rules).

A topic's configurations need ALTER_CONFIGS (DESCRIBE_CONFIGS to read) on the topic; a broker's,
and the cluster default of every broker, need it on the cluster. A refusal answers that resource
alone (TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED) and the others go on; it is
decided inside the operation, on the image the operation reads (see :mod:`chunkraft.api.access`).
"""

from __future__ import annotations

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.configs import Refusal
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.records import TOPIC_RESOURCE
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal

__all__ = ["config_refusal"]


def _allow_all(resource_type: int, resource_name: str) -> ApiException | None:
    return None


def config_refusal(authorizer: Authorizer | None, principal: Principal, image: MetadataImage,
                   operation: AclOperation) -> Refusal:
    """The :data:`~chunkraft.controller.operations.configs.Refusal` of ``principal`` for
    ``operation`` (ALTER_CONFIGS or DESCRIBE_CONFIGS), judged on ``image``."""
    if authorizer is None or authorizer.is_super_user(principal):
        return _allow_all

    def refusal(resource_type: int, resource_name: str) -> ApiException | None:
        if resource_type == TOPIC_RESOURCE:
            if authorizer.authorize(image, principal, operation, AclResourceType.TOPIC,
                                    resource_name):
                return None
            return Errors.TOPIC_AUTHORIZATION_FAILED.exception(
                f"Principal {principal.name} is not authorized to {operation.name} topic "
                f"'{resource_name}'.")
        if authorizer.authorize_cluster(image, principal, operation):
            return None
        return Errors.CLUSTER_AUTHORIZATION_FAILED.exception(
            f"Principal {principal.name} is not authorized to {operation.name} on the cluster "
            "(broker configurations need it on resource CLUSTER kafka-cluster).")

    return refusal
