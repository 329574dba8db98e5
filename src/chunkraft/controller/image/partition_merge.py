"""How a PartitionChangeRecord changes a partition (Kafka's ``PartitionRegistration.merge``)."""

from __future__ import annotations

from chunkraft.records import NO_LEADER_CHANGE, PartitionChangeRecord, PartitionRecord

__all__ = ["merge_partition_change"]


def merge_partition_change(
    partition: PartitionRecord, change: PartitionChangeRecord
) -> PartitionRecord:
    """The partition after ``change``: null / -1 fields keep their value.

    A leader other than -2 (even the current one) bumps the leader epoch, as KIP-253 needs for
    expansion; every change bumps the partition epoch.
    """
    updates: dict[str, object] = {"partition_epoch": partition.partition_epoch + 1}
    if change.leader != NO_LEADER_CHANGE:
        updates["leader"] = change.leader
        updates["leader_epoch"] = partition.leader_epoch + 1
    if change.isr is not None:
        updates["isr"] = change.isr
    if change.replicas is not None:
        updates["replicas"] = change.replicas
    if change.removing_replicas is not None:
        updates["removing_replicas"] = change.removing_replicas
    if change.adding_replicas is not None:
        updates["adding_replicas"] = change.adding_replicas
    if change.leader_recovery_state != -1:
        updates["leader_recovery_state"] = change.leader_recovery_state
    if change.directories is not None:
        updates["directories"] = change.directories
    if change.eligible_leader_replicas is not None:
        updates["eligible_leader_replicas"] = change.eligible_leader_replicas
    if change.last_known_elr is not None:
        updates["last_known_elr"] = change.last_known_elr
    if change.start_offset != -1:
        updates["start_offset"] = change.start_offset
    if change.start_timestamp != -1:
        updates["start_timestamp"] = change.start_timestamp
    return partition._replace(**updates)  # type: ignore[arg-type]
