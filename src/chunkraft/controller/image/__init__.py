"""The metadata image: immutable state built from records by deltas.

``MetadataImage.EMPTY`` + ``MetadataDelta.replay(record)`` ... ``apply()`` -> a new image;
``image.to_records()`` writes it back out; ``compute_local_changes(delta.topics_delta,
broker_id)`` is what a broker's ReplicaManager needs.
"""

from chunkraft.controller.image.acls import AclsDelta, AclsImage
from chunkraft.controller.image.brokers import BrokersDelta, BrokersImage
from chunkraft.controller.image.delta import MetadataDelta
from chunkraft.controller.image.image import MetadataImage
from chunkraft.controller.image.local_changes import (
    ChunkCreate,
    ChunkDelete,
    ChunkKey,
    LocalPartition,
    LocalReplicaChanges,
    TopicIdPartition,
    compute_local_changes,
)
from chunkraft.controller.image.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdsImage
from chunkraft.controller.image.provenance import MetadataProvenance
from chunkraft.controller.image.topics import TopicImage, TopicsImage
from chunkraft.controller.image.topics_delta import TopicDelta, TopicsDelta

__all__ = [
    "PRODUCER_ID_BLOCK_SIZE",
    "AclsDelta",
    "AclsImage",
    "BrokersDelta",
    "BrokersImage",
    "ChunkCreate",
    "ChunkDelete",
    "ChunkKey",
    "LocalPartition",
    "LocalReplicaChanges",
    "MetadataDelta",
    "MetadataImage",
    "MetadataProvenance",
    "ProducerIdsImage",
    "TopicDelta",
    "TopicIdPartition",
    "TopicImage",
    "TopicsDelta",
    "TopicsImage",
    "compute_local_changes",
]
