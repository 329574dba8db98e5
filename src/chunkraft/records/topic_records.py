"""Records about topics and partitions (the partition record also describes the active chunk)."""

from __future__ import annotations

import uuid
from typing import Annotated, NamedTuple

from chunkraft.records.common_fields import PartitionIdField, TopicIdField
from chunkraft.records.schema import (
    INT8,
    INT32,
    INT32_ARRAY,
    INT64,
    STRING,
    STRUCT_ARRAY,
    UUID,
    UUID_ARRAY,
    ZERO_UUID,
    Check,
    metadata_record,
    record_struct,
)

__all__ = [
    "PartitionChangeRecord",
    "PartitionRecord",
    "PriorPartitionEpoch",
    "RemoveTopicRecord",
    "TopicRecord",
]

NO_LEADER = -1
NO_LEADER_CHANGE = -2


@metadata_record(2, "0", "A topic was created.")
class TopicRecord(NamedTuple):
    """Full state of a topic's identity: its name and id."""

    name: Annotated[str, STRING("0+", "The topic name.")] = ""
    topic_id: TopicIdField = ZERO_UUID


@record_struct
class PriorPartitionEpoch(NamedTuple):
    """KIP-253: a partition that existed before an expansion, and its leader epoch then."""

    partition_id: Annotated[
        int, INT32("0+", "The prior partition.", check=Check.PARTITION_ID)
    ] = -1
    leader_epoch: Annotated[
        int, INT32("0+", "Its leader epoch before the expansion.", check=Check.EPOCH)
    ] = -1


@metadata_record(3, "0-3", "A partition and its active chunk, in full.")
class PartitionRecord(NamedTuple):
    """Full state of a partition: replicas, ISR, leader and epochs of its active chunk."""

    partition_id: PartitionIdField = -1
    topic_id: TopicIdField = ZERO_UUID
    replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas, in preferred order.", check=Check.BROKER_ID),
    ] = ()
    isr: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The in-sync replicas.", check=Check.BROKER_ID),
    ] = ()
    removing_replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas being removed.", check=Check.BROKER_ID),
    ] = ()
    adding_replicas: Annotated[
        tuple[int, ...],
        INT32_ARRAY("0+", "The replicas being added.", check=Check.BROKER_ID),
    ] = ()
    leader: Annotated[
        int, INT32("0+", "The leader, or -1 if there is none.", check=Check.LEADER)
    ] = NO_LEADER
    leader_recovery_state: Annotated[
        int, INT8("0+", "1 if recovering from an unclean election; 0 otherwise.", tag=0)
    ] = 0
    leader_epoch: Annotated[
        int, INT32("0+", "The epoch of the partition leader.", check=Check.EPOCH)
    ] = -1
    partition_epoch: Annotated[
        int, INT32("0+", "Incremented on every change of the partition.", check=Check.EPOCH)
    ] = -1
    directories: Annotated[
        tuple[uuid.UUID, ...],
        UUID_ARRAY("1+", "The log directory of each replica, in replica order."),
    ] = ()
    eligible_leader_replicas: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY(
            "2+", "The eligible leader replicas.", tag=1, nullable="2+", check=Check.BROKER_ID
        ),
    ] = None
    last_known_elr: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY(
            "2+", "The last known eligible leader replicas.", tag=2, nullable="2+",
            check=Check.BROKER_ID,
        ),
    ] = None
    start_offset: Annotated[
        int, INT64("3+", "First offset of the active chunk (KIP-1114).", tag=3, check=Check.OFFSET)
    ] = -1
    start_timestamp: Annotated[
        int,
        INT64("3+", "Timestamp of the active chunk's start offset.", tag=4, check=Check.TIMESTAMP),
    ] = -1
    prior_partition_epochs: Annotated[
        tuple[PriorPartitionEpoch, ...],
        STRUCT_ARRAY(
            PriorPartitionEpoch, "3+", "KIP-253: each prior partition's leader epoch.", tag=5
        ),
    ] = ()


@metadata_record(5, "0-3", "A change to a partition or its active chunk.")
class PartitionChangeRecord(NamedTuple):
    """Only what changed: null (or -2 for the leader, -1 elsewhere) means unchanged.

    Any leader other than -2, even the current one, bumps the leader epoch; every change bumps
    the partition epoch.
    """

    partition_id: PartitionIdField = -1
    topic_id: TopicIdField = ZERO_UUID
    isr: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY("0+", "The new ISR, or null.", tag=0, nullable="0+", check=Check.BROKER_ID),
    ] = None
    leader: Annotated[
        int,
        INT32("0+", "-2: unchanged; -1: no leader; else the leader.", tag=1,
              check=Check.CHANGED_LEADER),
    ] = NO_LEADER_CHANGE
    replicas: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY("0+", "The new replicas, or null.", tag=2, nullable="0+",
                    check=Check.BROKER_ID),
    ] = None
    removing_replicas: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY("0+", "The new removing replicas, or null.", tag=3, nullable="0+",
                    check=Check.BROKER_ID),
    ] = None
    adding_replicas: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY("0+", "The new adding replicas, or null.", tag=4, nullable="0+",
                    check=Check.BROKER_ID),
    ] = None
    leader_recovery_state: Annotated[
        int, INT8("0+", "-1: unchanged; else the new leader recovery state.", tag=5)
    ] = -1
    directories: Annotated[
        tuple[uuid.UUID, ...] | None,
        UUID_ARRAY("1+", "The new log directories, or null.", tag=8, nullable="1+"),
    ] = None
    eligible_leader_replicas: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY("2+", "The new ELR, or null.", tag=6, nullable="2+", check=Check.BROKER_ID),
    ] = None
    last_known_elr: Annotated[
        tuple[int, ...] | None,
        INT32_ARRAY("2+", "The new last known ELR, or null.", tag=7, nullable="2+",
                    check=Check.BROKER_ID),
    ] = None
    start_offset: Annotated[
        int, INT64("3+", "-1: unchanged; else the new active chunk's first offset.", tag=9,
                   check=Check.OFFSET)
    ] = -1
    start_timestamp: Annotated[
        int, INT64("3+", "-1: unchanged; else the new active chunk's start timestamp.", tag=10,
                   check=Check.TIMESTAMP)
    ] = -1


@metadata_record(9, "0", "A topic was deleted, with all its partitions and chunks.")
class RemoveTopicRecord(NamedTuple):
    """Removes a topic."""

    topic_id: Annotated[
        uuid.UUID, UUID("0+", "The topic to remove.", check=Check.TOPIC_ID)
    ] = ZERO_UUID
