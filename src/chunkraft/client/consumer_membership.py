"""The consumer as a group member, and the KIP-253 gate on partitions an expansion created.

Membership: JoinGroup / SyncGroup / Heartbeat with the group coordinator (the leading member
assigns the partitions round-robin), and LeaveGroup. The gate: a partition created by an
expansion is read only once the offsets consumed on its prior partitions reached the KIP-253
thresholds (:mod:`client.kip253`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence

from chunkraft.client.consumer_core import MEMBERSHIP_ERRORS
from chunkraft.client.consumer_fetcher import (
    FetchStream,
)
from chunkraft.client.consumer_group import GroupError
from chunkraft.client.consumer_offsets import ConsumerOffsets
from chunkraft.client.kip253 import ExpansionGate, gate_for
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupAssignment,
    SyncGroupRequest,
    TopicPartitions,
)
from chunkraft.protocol.data_plane import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

__all__ = ["ConsumerMembership"]


class ConsumerMembership(ConsumerOffsets):
    """:class:`ConsumerOffsets` plus group membership and the KIP-253 gate. Not thread-safe."""

    # ------------------------------------------------------------------ group membership

    def _ensure_membership(self) -> None:
        if not self._subscription or self._group is None:
            return
        now = time.monotonic()
        if self._joined and now - self._last_heartbeat >= self.session_timeout_ms / 3000:
            self._last_heartbeat = now
            answer = self._group.heartbeat(HeartbeatRequest(
                group_id=self._group.group_id, generation_id=self._generation,
                member_id=self._member_id))
            error = Errors.for_code(answer.error_code)
            if error in MEMBERSHIP_ERRORS:
                self._joined = False
            if error is Errors.UNKNOWN_MEMBER_ID:
                self._member_id = ""
            if self._joined and self._partition_counts() != self._counts_at_join:
                # The subscribed topics grew (or shrank): join again, so that the leader's
                # next assignment covers the new partitions.
                self._joined = False
        if not self._joined:
            self._join()

    def _partition_counts(self) -> dict[str, int]:
        """The subscribed topics' partition counts, from fresh metadata."""
        self._refresh(force=True)
        return {t: self.metadata.partition_count(t) or 0 for t in self._subscription}

    def _join(self) -> None:
        assert self._group is not None
        if self.enable_auto_commit and self._generation >= 0 and self._streams \
                and self._member_id:
            # The old generation may be gone: its offsets cannot be committed any more.
            with contextlib.suppress(GroupError):
                self.commit()
        for _ in range(50):
            joined = self._group.join_group(JoinGroupRequest(
                group_id=self._group.group_id, session_timeout_ms=self.session_timeout_ms,
                member_id=self._member_id, topics=self._subscription))
            error = Errors.for_code(joined.error_code)
            if joined.member_id:
                self._member_id = joined.member_id
            if error is Errors.UNKNOWN_MEMBER_ID:
                self._member_id = ""
                continue
            if error is not Errors.NONE:
                if error in MEMBERSHIP_ERRORS or error.retriable or \
                        error.name == "MEMBER_ID_REQUIRED":
                    time.sleep(0.1)
                    continue
                raise GroupError(error, joined.error_message)
            self._generation = joined.generation_id
            assignments: tuple[SyncGroupAssignment, ...] = ()
            if joined.leader == self._member_id:
                assignments = self._assign_members(
                    {m.member_id: m.topics for m in joined.members})
            synced = self._group.sync_group(SyncGroupRequest(
                group_id=self._group.group_id, generation_id=self._generation,
                member_id=self._member_id, assignments=assignments))
            error = Errors.for_code(synced.error_code)
            if error is not Errors.NONE:
                if error in MEMBERSHIP_ERRORS or error.retriable:
                    time.sleep(0.1)
                    continue
                raise GroupError(error, synced.error_message)
            self._set_assignment([(t.name, p) for t in synced.partitions for p in t.partitions])
            self._counts_at_join = self._partition_counts()
            self._joined = True
            self._last_heartbeat = time.monotonic()
            return
        raise GroupError(Errors.REBALANCE_IN_PROGRESS, "could not join the group in 50 tries")

    def _assign_members(self, members: Mapping[str, Sequence[str]]
                        ) -> tuple[SyncGroupAssignment, ...]:
        """The leader's assignment: each topic's partitions round-robin over the members
        subscribed to it, in member id order."""
        topics = sorted({t for ts in members.values() for t in ts})
        self._refresh(force=True)
        self.metadata.refresh(topics)
        plan: dict[str, dict[str, list[int]]] = {m: {} for m in members}
        for topic in topics:
            subscribers = sorted(m for m, ts in members.items() if topic in ts)
            for i, info in enumerate(self.metadata.partitions_for(topic)):
                member = subscribers[i % len(subscribers)]
                plan[member].setdefault(topic, []).append(info.partition)
        return tuple(SyncGroupAssignment(member_id=m, partitions=tuple(
            TopicPartitions(name=t, partitions=tuple(ps)) for t, ps in sorted(plan[m].items())))
            for m in sorted(plan))

    def _leave(self) -> None:
        if self._group is not None and self._joined:
            # Leaving is best effort: the session timeout evicts us anyway.
            with contextlib.suppress(GroupError):
                self._group.leave_group(LeaveGroupRequest(group_id=self._group.group_id,
                                                          member_id=self._member_id))
        self._joined = False

    # ------------------------------------------------------------------ KIP-253

    def _gate(self, stream: FetchStream) -> bool:
        """True when ``stream`` may be fetched now (see :mod:`client.kip253`)."""
        tp = (stream.topic, stream.partition)
        if tp not in self._gates:
            info = self.metadata.partition(*tp)
            if info is None:
                return False
            # Only a reader starting the new partition at its beginning can overtake records
            # of the same keys still unread on the prior partitions.
            self._gates[tp] = gate_for(stream.topic, stream.partition,
                                       info.prior_partition_epochs) \
                if stream.fetch_offset == 0 else None
        gate = self._gates[tp]
        if gate is None or gate.is_open:
            return True
        self._resolve_thresholds(gate)
        if gate.needs():
            return False
        pending = gate.pending(lambda p: self._consumed(stream.topic, p))
        owned = [p for p in pending if p >= 0 and (stream.topic, p) in self.assignment()]
        # We read the prior partitions ourselves: once our positions passed the thresholds,
        # commit them so that the group's offsets say so too.
        if pending and self._group is not None and owned and len(owned) == len(pending) \
                and all(min(s.position for s in self._streams_of((stream.topic, p)))
                        >= pending[p] for p in owned):
            self.commit({(stream.topic, p): min(s.position for s in self._streams_of(
                    (stream.topic, p))) for p in owned})
        return gate.open(lambda p: self._consumed(stream.topic, p))

    def _consumed(self, topic: str, prior: int) -> int | None:
        """How far prior partition ``prior`` was consumed: the group's committed offset when
        there is a group, else this consumer's own position if it reads the partition (a
        consumer without a group that does not read it cannot know: not waited for)."""
        if self._group is not None:
            now = time.monotonic()
            if now - self._group_offsets_at > 0.2:
                self._group_offsets_at = now
                tps = [(topic, p) for p in range(self.metadata.partition_count(topic) or 0)]
                self._group_offsets = {tp: int(o.committed_offset) for tp, o in
                                       self._committed_raw(tps).items()}
            return self._group_offsets.get((topic, prior))
        streams = [s for s in self._streams.values() if (s.topic, s.partition) == (topic, prior)]
        if not streams:
            return 2**63 - 1
        return min(s.position for s in streams)

    def _resolve_thresholds(self, gate: ExpansionGate) -> None:
        for prior, epoch in gate.needs().items():
            leader = self.metadata.leader(gate.topic, prior)
            client = self._client_for(leader) if leader >= 0 else None
            if client is None:
                self._refresh()
                continue
            try:
                answer = client.offsets_for_leader_epoch(OffsetForLeaderEpochRequest(
                    topics=(OffsetForLeaderTopic(topic=gate.topic, partitions=(
                        OffsetForLeaderPartition(partition=prior, leader_epoch=epoch),)),)))
            except Exception:  # any failure: ask again next round
                self._refresh()
                continue
            result = answer.topics[0].partitions[0]
            if result.error_code:
                self._refresh()
                continue
            gate.set_threshold(prior, result.end_offset)
