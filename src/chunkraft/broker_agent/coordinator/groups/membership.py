"""GroupMembership: the classic JoinGroup / SyncGroup / Heartbeat / LeaveGroup protocol of one
group, one generation at a time (Kafka's ``GroupCoordinator``, simplified).

States: EMPTY (no members), PREPARING_REBALANCE (waiting for every member to (re)join, at most
the largest rebalance timeout; members that did not rejoin by then are removed),
COMPLETING_REBALANCE (a new generation exists; waiting for the leader's SyncGroup with the
assignment), STABLE. The leader is the member whose join came first (kept across
generations while it stays). A member not heard from (join, sync or heartbeat) within its
session timeout is removed and the others rebalance. Membership lives in the coordinator's
memory; a rebalance in flight when the coordinator moves is lost (its members learn
UNKNOWN_MEMBER_ID and join again). Every method runs on the broker's event loop; ``now_ms``
is injected so tests drive time. A stable generation is kept in the offsets log
(:meth:`GroupMembership.snapshot`, :meth:`GroupMembership.restore`), so that after the
coordinator moves its members carry on with their generation: each must be heard from within
its session timeout of the restore.

Two kinds of members share a group's generations: chunkraft's own (HTTP: a subscription of
topic names, an assignment of topic partitions) and Kafka's classic protocol, whose members
bring a protocol type and their protocols' opaque metadata (:class:`Protocols`) and whose
leader sends opaque assignments; the coordinator then picks the protocol every member supports
that most members prefer, as Kafka does, and refuses a member that shares none with the group
(INCONSISTENT_GROUP_PROTOCOL).
"""

from __future__ import annotations

import asyncio
import base64
import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    JoinGroupMember,
    JoinGroupResponse,
    SyncGroupAssignment,
    SyncGroupResponse,
    TopicPartitions,
)

__all__ = ["GroupMembership", "GroupState", "Member", "Protocols"]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


@dataclass(frozen=True, slots=True)
class Protocols:
    """What a Kafka member brings to JoinGroup: its protocol type (``consumer``), its
    protocols in order of preference with their opaque metadata, and who it is."""

    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str = ""
    client_host: str = ""
    group_instance_id: str | None = None

    def metadata(self, name: str | None) -> bytes:
        """The metadata this member sent for protocol ``name`` (empty if none)."""
        return next((data for protocol, data in self.protocols if protocol == name), b"")


@dataclass
class Member:
    """One member: its subscription, timeouts, last sign of life, and waiters; a Kafka
    member's ``protocols`` and opaque ``assignment_bytes`` too."""

    member_id: str
    topics: tuple[str, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    last_seen_ms: int
    assignment: tuple[TopicPartitions, ...] = ()
    join_waiter: asyncio.Future[JoinGroupResponse] | None = None
    sync_waiter: asyncio.Future[SyncGroupResponse] | None = None
    protocols: Protocols | None = None
    assignment_bytes: bytes = b""


@dataclass
class GroupMembership:
    """The members and generation of one group (module docstring)."""

    group_id: str
    now_ms: Callable[[], int]
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    leader: str = ""
    members: dict[str, Member] = field(default_factory=dict)  # in join order
    rebalance_deadline_ms: int = 0
    protocol_type: str | None = None
    """The Kafka protocol type of the group's members (None: chunkraft's own members)."""
    protocol_name: str | None = None
    """The protocol the current generation runs (Kafka members), chosen as it formed."""
    generation_members: tuple[tuple[str, str | None, bytes], ...] = ()
    """(member id, group instance id, metadata of the chosen protocol) of every member of the
    current generation, in join order: what the leader's JoinGroup answer lists."""

    # ------------------------------------------------------------------ persistence

    def snapshot(self) -> dict[str, Any] | None:
        """The membership record's value for a STABLE generation; None without members
        (a tombstone); callers write it only when the group is STABLE or EMPTY."""
        if not self.members:
            return None
        value: dict[str, Any] = {
            "v": 1, "generation": self.generation_id, "leader": self.leader,
            "members": [_member_value(m) for m in self.members.values()]}
        if self.protocol_type is not None:
            value["protocol_type"] = self.protocol_type
            value["protocol_name"] = self.protocol_name
        return value

    @classmethod
    def restore(cls, group_id: str, now_ms: Callable[[], int], value: dict[str, Any]
                ) -> GroupMembership:
        """A STABLE group from a membership record's value; every member's session starts
        now."""
        now = now_ms()
        group = cls(group_id, now_ms, GroupState.STABLE, int(value["generation"]),
                    str(value["leader"]))
        protocol_type = value.get("protocol_type")
        if protocol_type is not None:
            group.protocol_type = str(protocol_type)
            name = value.get("protocol_name")
            group.protocol_name = None if name is None else str(name)
        for raw in value["members"]:
            member = _member_of(raw, now)
            group.members[member.member_id] = member
        group.generation_members = group._generation_members()
        return group

    # ------------------------------------------------------------------ requests

    def join(self, member_id: str, topics: tuple[str, ...], session_timeout_ms: int,
             rebalance_timeout_ms: int, protocols: Protocols | None = None
             ) -> asyncio.Future[JoinGroupResponse]:
        """A JoinGroup; the future completes when the new generation forms (or at once with
        an error). ``protocols``: a Kafka member's (module docstring)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[JoinGroupResponse] = loop.create_future()
        now = self.now_ms()
        if member_id and member_id not in self.members:
            future.set_result(_join_error(Errors.UNKNOWN_MEMBER_ID, member_id))
            return future
        if not self._compatible(member_id, protocols):
            future.set_result(_join_error(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return future
        if not self.members:
            self.protocol_type = None if protocols is None else protocols.protocol_type
        if not member_id:
            member_id = f"{self.group_id}-{uuid.uuid4()}"
            self.members[member_id] = Member(member_id, topics, session_timeout_ms,
                                             rebalance_timeout_ms, now)
        member = self.members[member_id]
        member.topics = topics
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.last_seen_ms = now
        member.protocols = protocols
        if member.join_waiter is not None and not member.join_waiter.done():
            # A retried join replaces the older one; answer the older as superseded.
            member.join_waiter.set_result(_join_error(Errors.REBALANCE_IN_PROGRESS, member_id))
        member.join_waiter = future
        if self.state is not GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance()
        self._maybe_complete_join()
        return future

    def _compatible(self, member_id: str, protocols: Protocols | None) -> bool:
        """Whether a member joining with ``protocols`` fits the group's other members: the
        same kind, the same protocol type, and a protocol all of them support."""
        others = [m for m in self.members.values() if m.member_id != member_id]
        if protocols is not None and (not protocols.protocol_type or not protocols.protocols):
            return False
        if not others:
            return True
        if protocols is None:
            return self.protocol_type is None
        if self.protocol_type != protocols.protocol_type:
            return False
        shared = {name for name, _ in protocols.protocols}
        for other in others:
            if other.protocols is not None:
                shared &= {name for name, _ in other.protocols.protocols}
        return bool(shared)

    def sync(self, member_id: str, generation_id: int,
             assignments: tuple[SyncGroupAssignment, ...],
             opaque: dict[str, bytes] | None = None) -> asyncio.Future[SyncGroupResponse]:
        """A SyncGroup: the leader's carries the assignment (a Kafka leader's as ``opaque``
        bytes per member, kept in :attr:`Member.assignment_bytes`); each member's future
        completes with its own part once the leader's arrived."""
        future: asyncio.Future[SyncGroupResponse] = asyncio.get_running_loop().create_future()
        member = self.members.get(member_id)
        if member is None:
            future.set_result(_sync_error(Errors.UNKNOWN_MEMBER_ID))
            return future
        if generation_id != self.generation_id:
            future.set_result(_sync_error(Errors.ILLEGAL_GENERATION))
            return future
        member.last_seen_ms = self.now_ms()
        if self.state is GroupState.PREPARING_REBALANCE:
            future.set_result(_sync_error(Errors.REBALANCE_IN_PROGRESS))
            return future
        if self.state is GroupState.STABLE:
            future.set_result(SyncGroupResponse(partitions=member.assignment))
            return future
        # COMPLETING_REBALANCE
        member.sync_waiter = future
        if member_id == self.leader:
            given = {a.member_id: a.partitions for a in assignments}
            for other in self.members.values():
                other.assignment = given.get(other.member_id, ())
                other.assignment_bytes = (opaque or {}).get(other.member_id, b"")
            self.state = GroupState.STABLE
            for other in self.members.values():
                waiter, other.sync_waiter = other.sync_waiter, None
                if waiter is not None and not waiter.done():
                    waiter.set_result(SyncGroupResponse(partitions=other.assignment))
        return future

    def heartbeat(self, member_id: str, generation_id: int) -> Errors:
        member = self.members.get(member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        member.last_seen_ms = self.now_ms()
        if self.state is GroupState.PREPARING_REBALANCE:
            return Errors.REBALANCE_IN_PROGRESS
        if generation_id != self.generation_id:
            return Errors.ILLEGAL_GENERATION
        return Errors.NONE

    def leave(self, member_id: str) -> Errors:
        if member_id not in self.members:
            return Errors.UNKNOWN_MEMBER_ID
        self._remove(member_id)
        return Errors.NONE

    def check_commit(self, member_id: str, generation_id: int) -> Errors:
        """Whether a member may commit offsets now (Kafka's ``validateOffsetCommit``): a
        consumer without membership (generation -1, no member id) only while the group has no
        members."""
        if generation_id < 0 and not member_id:
            return Errors.NONE if not self.members else Errors.UNKNOWN_MEMBER_ID
        member = self.members.get(member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        if generation_id != self.generation_id:
            return Errors.ILLEGAL_GENERATION
        member.last_seen_ms = self.now_ms()
        if self.state is GroupState.COMPLETING_REBALANCE:
            # Kafka: no commits between JoinGroup's answer and the assignment. While the group
            # waits for rejoins, a member of the current generation may still commit what it
            # processed (clients commit as their partitions are revoked).
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    # ------------------------------------------------------------------ time

    def tick(self) -> None:
        """Expires silent members and overdue rebalances; the coordinator calls it often."""
        now = self.now_ms()
        for member in list(self.members.values()):
            # A member waiting for its JoinGroup or SyncGroup answer is alive (Kafka keeps
            # it so): it cannot heartbeat meanwhile, and a leader slow to assign must not
            # cost the others their membership. The rebalance deadline bounds both waits.
            waiting = any(w is not None and not w.done()
                          for w in (member.join_waiter, member.sync_waiter))
            if not waiting and now - member.last_seen_ms > member.session_timeout_ms:
                self._remove(member.member_id)
        if self.state is GroupState.PREPARING_REBALANCE and now >= self.rebalance_deadline_ms:
            for member in list(self.members.values()):
                if member.join_waiter is None or member.join_waiter.done():
                    self._remove(member.member_id, rebalance=False)
            self._maybe_complete_join(force=True)
        elif self.state is GroupState.COMPLETING_REBALANCE and now >= self.rebalance_deadline_ms:
            # The leader never sent the assignment: start over.
            self._prepare_rebalance()

    # ------------------------------------------------------------------ internals

    def _prepare_rebalance(self) -> None:
        self.state = GroupState.PREPARING_REBALANCE
        longest = max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        self.rebalance_deadline_ms = self.now_ms() + longest
        for member in self.members.values():
            waiter, member.sync_waiter = member.sync_waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(_sync_error(Errors.REBALANCE_IN_PROGRESS))

    def _remove(self, member_id: str, *, rebalance: bool = True) -> None:
        member = self.members.pop(member_id)
        if member.join_waiter is not None and not member.join_waiter.done():
            member.join_waiter.set_result(_join_error(Errors.UNKNOWN_MEMBER_ID, member_id))
        if member.sync_waiter is not None and not member.sync_waiter.done():
            member.sync_waiter.set_result(_sync_error(Errors.UNKNOWN_MEMBER_ID))
        if member_id == self.leader:
            self.leader = ""
        if not self.members:
            self.state = GroupState.EMPTY
            self.leader = ""
            self.protocol_type = self.protocol_name = None
            self.generation_members = ()
            return
        if rebalance and self.state is not GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance()
        elif rebalance:
            self._maybe_complete_join()

    def _maybe_complete_join(self, *, force: bool = False) -> None:
        if self.state is not GroupState.PREPARING_REBALANCE:
            return
        joined = [m for m in self.members.values()
                  if m.join_waiter is not None and not m.join_waiter.done()]
        if not joined or (not force and len(joined) < len(self.members)):
            return
        self.generation_id += 1
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self.state = GroupState.COMPLETING_REBALANCE
        longest = max(m.rebalance_timeout_ms for m in self.members.values())
        self.rebalance_deadline_ms = self.now_ms() + longest
        self.protocol_name = self._select_protocol()
        self.generation_members = self._generation_members()
        everyone = tuple(JoinGroupMember(member_id=m.member_id, topics=m.topics)
                         for m in self.members.values())
        for member in self.members.values():
            waiter, member.join_waiter = member.join_waiter, None
            member.assignment = ()
            member.assignment_bytes = b""
            member.last_seen_ms = self.now_ms()  # the session restarts with the generation
            if waiter is not None and not waiter.done():
                waiter.set_result(JoinGroupResponse(
                    generation_id=self.generation_id, leader=self.leader,
                    member_id=member.member_id,
                    members=everyone if member.member_id == self.leader else ()))

    def _select_protocol(self) -> str | None:
        """Kafka's choice: among the protocols every member supports, the one most members
        name first among those (ties: the leader's preference)."""
        kafka = [m.protocols for m in self.members.values() if m.protocols is not None]
        if self.protocol_type is None or not kafka:
            return None
        shared = set.intersection(*({name for name, _ in p.protocols} for p in kafka))
        votes: dict[str, int] = {}
        for protocols in kafka:
            vote = next((name for name, _ in protocols.protocols if name in shared), None)
            if vote is not None:
                votes[vote] = votes.get(vote, 0) + 1
        leader = self.members[self.leader].protocols if self.leader in self.members else None
        order = [name for name, _ in (leader or kafka[0]).protocols if name in shared]
        return max(order, key=lambda name: (votes.get(name, 0), -order.index(name)),
                   default=None)

    def _generation_members(self) -> tuple[tuple[str, str | None, bytes], ...]:
        return tuple(
            (m.member_id, m.protocols.group_instance_id if m.protocols else None,
             m.protocols.metadata(self.protocol_name) if m.protocols else b"")
            for m in self.members.values())


def _member_value(member: Member) -> dict[str, Any]:
    """A member as the membership record keeps it (Kafka's bytes in base64)."""
    value: dict[str, Any] = {
        "member_id": member.member_id, "topics": list(member.topics),
        "session_timeout_ms": member.session_timeout_ms,
        "rebalance_timeout_ms": member.rebalance_timeout_ms,
        "assignment": [{"name": t.name, "partitions": list(t.partitions)}
                       for t in member.assignment]}
    protocols = member.protocols
    if protocols is not None:
        value["kafka"] = {
            "protocol_type": protocols.protocol_type,
            "protocols": [[name, base64.b64encode(data).decode()]
                          for name, data in protocols.protocols],
            "client_id": protocols.client_id, "client_host": protocols.client_host,
            "group_instance_id": protocols.group_instance_id,
            "assignment": base64.b64encode(member.assignment_bytes).decode()}
    return value


def _member_of(raw: dict[str, Any], now: int) -> Member:
    member = Member(
        str(raw["member_id"]), tuple(str(t) for t in raw["topics"]),
        int(raw["session_timeout_ms"]), int(raw["rebalance_timeout_ms"]), now,
        tuple(TopicPartitions(name=str(a["name"]),
                              partitions=tuple(int(p) for p in a["partitions"]))
              for a in raw["assignment"]))
    kafka = raw.get("kafka")
    if isinstance(kafka, dict):
        instance = kafka.get("group_instance_id")
        member.protocols = Protocols(
            str(kafka["protocol_type"]),
            tuple((str(name), base64.b64decode(data)) for name, data in kafka["protocols"]),
            str(kafka.get("client_id", "")), str(kafka.get("client_host", "")),
            None if instance is None else str(instance))
        member.assignment_bytes = base64.b64decode(kafka.get("assignment", ""))
    return member


def _join_error(error: Errors, member_id: str) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=error.code, error_message=error.message,
                             member_id=member_id)


def _sync_error(error: Errors) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=error.code, error_message=error.message)
