"""Images and principals for the Metadata JSON tests: every case the answer has to write."""

from __future__ import annotations

import uuid

from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.acls import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from chunkraft.records import (
    AccessControlEntryRecord,
    ChunkChangeRecord,
    PriorPartitionEpoch,
    TopicRecord,
)
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    OTHER_ID,
    apply,
    chunk,
    cluster,
    partition,
    with_topic,
)

ADMIN = Principal("User:admin")
ALICE = Principal("User:alice", host="10.0.0.7")
AUTHORIZER = Authorizer(["User:admin"])
THIRD_ID = uuid.UUID(int=0x3333)
_acl_ids = iter(range(1, 10**6))


def acl(operation: AclOperation, name: str, *, permission: AclPermissionType =
        AclPermissionType.ALLOW, pattern: AclPatternType = AclPatternType.LITERAL,
        principal: str = "User:alice", host: str = "*") -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.UUID(int=next(_acl_ids)), resource_type=AclResourceType.TOPIC,
        resource_name=name, pattern_type=pattern, principal=principal, host=host,
        operation=operation, permission_type=permission)


def rich_image() -> MetadataImage:
    """Three topics over brokers 0-3 (3 fenced, 4 never registered): inactive chunks, one
    being moved, prior partition epochs, leaders fenced, unregistered and none."""
    image = cluster(brokers=(0, 1, 2, 3), racks={0: "r0", 1: "r1"}, fenced=(3,))
    image = with_topic(image, "orders", ((0, 1), (1, 2), (2, 0)))
    image = with_topic(image, "payments", ((3, 0), (4, 1, 2)), topic_id=OTHER_ID)
    priors = (PriorPartitionEpoch(partition_id=0, leader_epoch=4),
              PriorPartitionEpoch(partition_id=1, leader_epoch=7))
    image = apply(
        image,
        TopicRecord(name="logs", topic_id=THIRD_ID),
        partition(0, (1, 2), THIRD_ID, leader_epoch=5, start_offset=100, start_timestamp=7),
        partition(1, (2, 1), THIRD_ID, prior_partition_epochs=priors),
        partition(2, (0, 3), THIRD_ID, leader=-1, prior_partition_epochs=priors),
        chunk(0, 9, 9, (0, 1), partition_id=0),
        chunk(10, 19, 21, (1, 2), partition_id=0, start_timestamp=-1),
        chunk(0, 4, 4, (3, 0), partition_id=0, topic_id=OTHER_ID),
        chunk(0, 99, 99, (1, 2), partition_id=0, topic_id=THIRD_ID, epoch=3),
    )
    # A chunk being moved from (0, 1) to (1, 2): adding 2, removing 0.
    return apply(image, ChunkChangeRecord(
        partition_id=0, topic_id=ORDERS_ID, start_offset=0, replicas=(1, 2, 0), isr=(0, 1),
        adding_replicas=(2,), removing_replicas=(0,), epoch=1))
