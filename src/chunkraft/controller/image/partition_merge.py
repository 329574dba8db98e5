"""How a PartitionChangeRecord changes a partition (Kafka's ``PartitionRegistration.merge``)."""

from __future__ import annotations

from chunkraft.records import NO_LEADER_CHANGE, PartitionChangeRecord, PartitionRecord

__all__ = ["merge_partition_change"]

# Fields a change leaves alone when they are null ...
_NULL_MEANS_UNCHANGED = (
    "isr",
    "replicas",
    "removing_replicas",
    "adding_replicas",
    "directories",
    "eligible_leader_replicas",
    "last_known_elr",
)
# ... and when they are -1.
_MINUS_ONE_MEANS_UNCHANGED = ("leader_recovery_state", "start_offset", "start_timestamp")


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
    for name in _NULL_MEANS_UNCHANGED:
        value = getattr(change, name)
        if value is not None:
            updates[name] = value
    for name in _MINUS_ONE_MEANS_UNCHANGED:
        value = getattr(change, name)
        if value != -1:
            updates[name] = value
    return partition._replace(**updates)  # type: ignore[arg-type]
