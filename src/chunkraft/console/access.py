"""What one principal may see and do, judged on one image: the console's single ACL check.

Every page and event of the console asks this object, so a principal sees only the topics it may
DESCRIBE and is offered only the actions its ACLs allow (the REST v3 routes the actions call
check again, on the leader's image: the offer is a courtesy, the refusal is theirs).
"""

from __future__ import annotations

from dataclasses import dataclass

from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal

__all__ = ["ConsoleAccess"]


@dataclass(frozen=True, slots=True)
class ConsoleAccess:
    """``principal`` judged by ``authorizer`` (None: everything allowed, as in in-process
    tests) on ``image``. Immutable; cheap to build per request."""

    image: MetadataImage
    principal: Principal
    authorizer: Authorizer | None

    @property
    def unrestricted(self) -> bool:
        """Whether every topic is allowed without asking (no authorizer, or a super user)."""
        return self.authorizer is None or self.authorizer.is_super_user(self.principal)

    def topic(self, name: str, operation: AclOperation = AclOperation.DESCRIBE) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self.image, self.principal, operation,
                                         AclResourceType.TOPIC, name)

    def cluster(self, operation: AclOperation) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_cluster(self.image, self.principal, operation)
