"""Minimal PartitionChangeRecords for ISR and leader changes, and Kafka's clean leader election.

This is the one place operations compute a partition's new ISR and leader (Kafka's
``PartitionChangeBuilder`` without reassignment, ELR or unclean election). The record it builds
replays through ``merge_partition_change`` (controller/image/partition_merge.py) to exactly the
intended state:

- only fields that change are set: ``isr`` None and ``leader_recovery_state`` -1 mean unchanged;
- ``leader`` is -2 (unchanged) unless the leader changes, because any other value, even the
  current leader, bumps the leader epoch on replay; ``bump_leader_epoch`` asks for that bump;
- every record bumps the partition epoch, so nothing is built (None) when nothing changes.

An ISR is never emptied: as in Kafka without ELR, when the target ISR is empty the ISR keeps its
last member, but the election sees the empty target, so the partition gets no leader (-1). When
an acceptable replica of that ISR comes back, :func:`build_partition_change` with an election
makes it leader again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from chunkraft.controller.image import BrokersImage
from chunkraft.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord, PartitionRecord

__all__ = [
    "ElectLeader",
    "LeaderAcceptor",
    "active_broker_acceptor",
    "build_partition_change",
    "elect_leader",
    "isr_without",
    "remove_from_isr_and_leadership",
]

LeaderAcceptor = Callable[[int], bool]
"""Whether a broker may lead (typically: registered, unfenced, not in controlled shutdown)."""


@dataclass(frozen=True, slots=True)
class ElectLeader:
    """Asks :func:`build_partition_change` to elect the leader from the target ISR.

    ``is_acceptable`` says which brokers may lead; see :func:`elect_leader` for the rule.
    """

    is_acceptable: LeaderAcceptor


def active_broker_acceptor(
    brokers: BrokersImage, *, excluding: int | None = None, including: int | None = None
) -> LeaderAcceptor:
    """Kafka's acceptable leader: a registered, unfenced broker not in controlled shutdown.

    ``excluding`` is never acceptable (the broker being fenced or shut down); ``including`` is
    acceptable even though the image still shows it fenced (the broker being unfenced in the
    same batch). The image is immutable, so the acceptor is thread-safe.
    """

    def is_acceptable(broker_id: int) -> bool:
        if broker_id == excluding:
            return False
        if broker_id == including:
            return True
        registration = brokers.get(broker_id)
        return (
            registration is not None
            and not registration.fenced
            and not registration.in_controlled_shutdown
        )

    return is_acceptable


def elect_leader(
    partition: PartitionRecord, target_isr: Sequence[int], is_acceptable: LeaderAcceptor
) -> int:
    """Kafka's clean election: the current leader if it is in ``target_isr`` and acceptable,
    else the first replica, in the preferred (replica) order, that is; else NO_LEADER (-1).

    Keeping an acceptable leader avoids needless leader epoch bumps. Pure.
    """
    in_isr = set(target_isr)
    current = partition.leader
    if current in in_isr and is_acceptable(current):
        return current
    for replica in partition.replicas:
        if replica in in_isr and is_acceptable(replica):
            return replica
    return NO_LEADER


def isr_without(isr: Iterable[int], broker_id: int) -> tuple[int, ...]:
    """``isr`` in its order, without ``broker_id``."""
    return tuple(member for member in isr if member != broker_id)


def build_partition_change(
    partition: PartitionRecord,
    *,
    isr: Sequence[int] | None = None,
    leader: int | ElectLeader | None = None,
    leader_recovery_state: int | None = None,
    bump_leader_epoch: bool = False,
) -> PartitionChangeRecord | None:
    """The minimal PartitionChangeRecord taking ``partition`` to the target state, or None.

    ``isr``: the target ISR (None: unchanged). An empty target is not written; the ISR keeps its
    members and the election sees no candidate. ``leader``: None keeps the leader, an int sets it
    (NO_LEADER for none), :class:`ElectLeader` elects from the target ISR. The leader field is
    written only when the leader changes, unless ``bump_leader_epoch`` asks for the epoch bump
    that writing it (even unchanged) causes. ``leader_recovery_state``: None or the current value
    leaves it. Pure; the caller validates that ids are replicas.
    """
    target_isr = partition.isr if isr is None else tuple(isr)
    new_leader = partition.leader
    if isinstance(leader, ElectLeader):
        new_leader = elect_leader(partition, target_isr, leader.is_acceptable)
    elif leader is not None:
        new_leader = leader

    isr_field = target_isr if target_isr and target_isr != partition.isr else None
    leader_field = (
        new_leader if new_leader != partition.leader or bump_leader_epoch else NO_LEADER_CHANGE
    )
    recovery_field = (
        leader_recovery_state
        if leader_recovery_state is not None
        and leader_recovery_state != partition.leader_recovery_state
        else -1
    )
    if isr_field is None and leader_field == NO_LEADER_CHANGE and recovery_field == -1:
        return None
    return PartitionChangeRecord(
        partition_id=partition.partition_id,
        topic_id=partition.topic_id,
        isr=isr_field,
        leader=leader_field,
        leader_recovery_state=recovery_field,
    )


def remove_from_isr_and_leadership(
    partition: PartitionRecord, broker_id: int, is_acceptable: LeaderAcceptor
) -> PartitionChangeRecord | None:
    """Takes ``broker_id`` out of the ISR and the leadership of ``partition`` (Kafka's handling
    of a fenced, shutting down or unregistered broker).

    The new leader is elected from the remaining ISR among brokers ``is_acceptable`` allows
    (``broker_id`` never is); -1 when none is. If ``broker_id`` is the last ISR member it stays
    in the ISR and the partition gets no leader. None when ``broker_id`` is neither in the ISR
    nor the leader.
    """

    def acceptable(candidate: int) -> bool:
        return candidate != broker_id and is_acceptable(candidate)

    return build_partition_change(
        partition, isr=isr_without(partition.isr, broker_id), leader=ElectLeader(acceptable)
    )
