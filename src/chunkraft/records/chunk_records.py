"""KIP-1114 records: inactive chunks and the movement of their replicas.

Declared as the KIP declares them. ChunkRecord carries the chunk's epoch twice (``ChunkEpoch`` and
``Epoch``) and ChunkChangeRecord once; all three name the same value and must be equal.
"""

from __future__ import annotations

import uuid
from typing import Annotated, NamedTuple

from chunkraft.records.common_fields import PartitionIdField, TopicIdField
from chunkraft.records.schema import (
    INT32,
    INT32_ARRAY,
    INT64,
    UUID_ARRAY,
    ZERO_UUID,
    Check,
    metadata_record,
)

__all__ = ["ChunkChangeRecord", "ChunkRecord"]


@metadata_record(28, "0", "An inactive chunk of a partition, in full; its offsets never change.")
class ChunkRecord(NamedTuple):
    """Full state of an inactive chunk, keyed by (topic id, partition id, start offset)."""

    partition_id: PartitionIdField = -1
    topic_id: TopicIdField = ZERO_UUID
    start_offset: Annotated[
        int, INT64("0+", "First offset a read can start from (inclusive).", check=Check.OFFSET)
    ] = -1
    start_timestamp: Annotated[
        int, INT64("0+", "Timestamp of the start offset.", check=Check.TIMESTAMP)
    ] = -1
    stop_offset: Annotated[
        int, INT64("0+", "Last offset a read may return (inclusive).", check=Check.OFFSET)
    ] = -1
    end_offset: Annotated[
        int, INT64("0+", "Last offset the chunk holds (inclusive).", check=Check.OFFSET)
    ] = -1
    chunk_epoch: Annotated[
        int, INT32("0+", "The epoch of this chunk.", check=Check.EPOCH)
    ] = -1
    replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas, in preferred order.", check=Check.BROKER_ID),
    ] = ()
    directories: Annotated[
        tuple[uuid.UUID, ...],
        UUID_ARRAY("0+", "The log directory of each replica, in replica order."),
    ] = ()
    isr: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas holding a full copy.", check=Check.BROKER_ID),
    ] = ()
    removing_replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas being removed.", check=Check.BROKER_ID),
    ] = ()
    adding_replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas being added.", check=Check.BROKER_ID),
    ] = ()
    epoch: Annotated[int, INT32("0+", "The epoch of the chunk.", check=Check.EPOCH)] = -1


@metadata_record(29, "0", "The replicas of an inactive chunk changed; no replicas removes it.")
class ChunkChangeRecord(NamedTuple):
    """The complete new replica state of an existing chunk; ``directories`` null = unchanged."""

    partition_id: PartitionIdField = -1
    topic_id: TopicIdField = ZERO_UUID
    start_offset: Annotated[
        int, INT64("0+", "The start offset naming the chunk.", check=Check.OFFSET)
    ] = -1
    replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The new replicas; empty removes the chunk.", tag=0,
                    check=Check.BROKER_ID),
    ] = ()
    directories: Annotated[
        tuple[uuid.UUID, ...] | None,
        UUID_ARRAY("0+", "The new log directories, or null if unchanged.", tag=1,
                   nullable="0+"),
    ] = None
    isr: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The new in-sync replicas.", tag=2, check=Check.BROKER_ID),
    ] = ()
    removing_replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas being removed.", tag=3, check=Check.BROKER_ID),
    ] = ()
    adding_replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas being added.", tag=4, check=Check.BROKER_ID),
    ] = ()
    epoch: Annotated[
        int, INT32("0+", "The chunk's new epoch (one more than before).", check=Check.EPOCH)
    ] = -1
