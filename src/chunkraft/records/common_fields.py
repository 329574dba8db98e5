"""Field declarations that many records share, written once.

Each is an ``Annotated`` alias: ``partition_id: PartitionIdField = -1`` in a record declares
Kafka's ``PartitionId`` with its version range, description and value check.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from chunkraft.records.schema import INT32, INT64, UUID, Check

__all__ = ["BrokerEpochField", "BrokerIdField", "PartitionIdField", "TopicIdField"]

PartitionIdField = Annotated[int, INT32("0+", "The partition id.", check=Check.PARTITION_ID)]
TopicIdField = Annotated[
    uuid.UUID, UUID("0+", "The unique id of this topic.", check=Check.TOPIC_ID)
]
BrokerIdField = Annotated[int, INT32("0+", "The broker id.", check=Check.BROKER_ID)]
BrokerEpochField = Annotated[
    int, INT64("0+", "The broker epoch this record applies to.", check=Check.EPOCH)
]
