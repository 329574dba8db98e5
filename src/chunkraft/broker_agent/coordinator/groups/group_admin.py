"""ListGroups, DescribeGroups and DeleteGroups over a broker's group coordinator.

What a Kafka operator's tools ask of a coordinator: the groups it coordinates now (those of
the offsets partitions it leads and has loaded), one group's state and members, and the
deletion of groups that have no members. A group with committed offsets but no members is
EMPTY with protocol type "" (Kafka's answer for consumers that only commit); a group the
coordinator knows nothing of is DEAD. Deleting writes tombstones for the group's offsets and
its membership record in one replicated batch, so a later coordinator does not bring it back.
"""

from __future__ import annotations

from dataclasses import dataclass

from chunkraft.broker_agent.coordinator.groups.coordinator import GroupCoordinator
from chunkraft.broker_agent.coordinator.groups.membership import GroupMembership, GroupState
from chunkraft.broker_agent.coordinator.groups.offset_records import (
    OffsetKey,
    encode_group_key,
    encode_key,
)
from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.error_codes import Errors

__all__ = ["DEAD", "DescribedGroup", "DescribedMember", "ListedGroup", "delete_group",
           "describe_group", "list_groups"]

DEAD = "Dead"
CHUNKRAFT_PROTOCOL_TYPE = "consumer"
"""The protocol type shown for groups of chunkraft's own consumers (they are consumers)."""


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    """One group as DescribeGroups answers it; ``error`` other than NONE: nothing else."""

    group_id: str
    error: Errors
    state: str = DEAD
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[DescribedMember, ...] = ()


def _protocol_type(group: GroupMembership) -> str:
    return group.protocol_type if group.protocol_type is not None else CHUNKRAFT_PROTOCOL_TYPE


def list_groups(coordinator: GroupCoordinator) -> list[ListedGroup]:
    """Every group of the offsets partitions this coordinator has loaded, by group id."""
    count = coordinator.partition_count()
    if not count:
        return []
    loaded = coordinator.loaded
    found: dict[str, ListedGroup] = {}
    for partition in loaded.values():
        for group_id in partition.state.groups():
            found[group_id] = ListedGroup(group_id, "", GroupState.EMPTY.value)
    for group_id, group in coordinator.groups.items():
        if positive_hash(group_id.encode()) % count not in loaded:
            continue
        if not group.members and group_id in found:
            continue
        found[group_id] = ListedGroup(group_id, _protocol_type(group) if group.members
                                      else "", group.state.value)
    return [found[g] for g in sorted(found)]


async def describe_group(coordinator: GroupCoordinator, group_id: str) -> DescribedGroup:
    """DescribeGroups for one group (NOT_COORDINATOR and the like as ``error``)."""
    error, _, loaded = await coordinator.ready(group_id)
    if loaded is None:
        return DescribedGroup(group_id, error)
    group = coordinator.groups.get(group_id)
    if group is None or not group.members:
        if loaded.state.offsets_of(group_id):
            return DescribedGroup(group_id, Errors.NONE, GroupState.EMPTY.value)
        return DescribedGroup(group_id, Errors.NONE)
    stable = group.state is GroupState.STABLE
    members = []
    for member in group.members.values():
        protocols = member.protocols
        members.append(DescribedMember(
            member.member_id, protocols.group_instance_id if protocols else None,
            protocols.client_id if protocols else "",
            protocols.client_host if protocols else "",
            protocols.metadata(group.protocol_name) if protocols and stable else b"",
            member.assignment_bytes if stable else b""))
    return DescribedGroup(group_id, Errors.NONE, group.state.value, _protocol_type(group),
                          (group.protocol_name or "") if stable else "", tuple(members))


async def delete_group(coordinator: GroupCoordinator, group_id: str) -> Errors:
    """Deletes a group without members: NON_EMPTY_GROUP while it has some,
    GROUP_ID_NOT_FOUND when it has neither members nor offsets."""
    error, index, loaded = await coordinator.ready(group_id)
    if loaded is None:
        return error
    group = coordinator.groups.get(group_id)
    if group is not None and group.members:
        return Errors.NON_EMPTY_GROUP
    offsets = loaded.state.offsets_of(group_id)
    if group is None and not offsets:
        return Errors.GROUP_ID_NOT_FOUND
    now = coordinator.now_ms()
    records: list[tuple[bytes, bytes | None, int]] = [
        (encode_key(OffsetKey(group_id, topic, partition)), None, now)
        for topic, partition in sorted(offsets)]
    records.append((encode_group_key(group_id), None, now))
    outcome = await coordinator.append(index, loaded, build_batch(records), None)
    if outcome is Errors.NONE:
        coordinator.groups.pop(group_id, None)
    return outcome
