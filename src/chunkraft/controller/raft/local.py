"""LocalRaft: a one-node, in-memory Raft log with the RaftLog interface, for tests and demos.

Proposals commit at once, in the caller's thread, through the same state machine the real node
uses; a test can take leadership away (:meth:`LocalRaft.set_leader`) or make the next proposals
fail with an unknown outcome (:meth:`LocalRaft.fail_next`) to exercise the layers above.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from chunkraft.controller.raft.entry import EpochOutOfRangeError, ProposedBatch, encode_entry
from chunkraft.controller.raft.leadership_watch import LeadershipWatch
from chunkraft.controller.raft.log import ProposalError, QuorumStatus, VoterStatus
from chunkraft.controller.raft.state_machine import BatchOutcome, MetadataStateMachine

__all__ = ["LocalRaft"]


class LocalRaft:
    """A single-voter RaftLog that commits synchronously. Thread-safe (one lock)."""

    def __init__(self, node_id: int = 1, *, max_retained_bytes: int = 64 * 1024 * 1024) -> None:
        self.node_id = node_id
        self.state_machine = MetadataStateMachine(max_retained_bytes=max_retained_bytes)
        self._lock = threading.Lock()
        self._leader = True
        self._epoch = 1
        self._index = 0
        self._fail_next = 0
        self._commit_failed = False
        self._apply_listeners: list[Callable[[], None]] = []
        self._leadership_listeners: list[Callable[[bool], None]] = []
        self.leadership = LeadershipWatch()
        self.leadership.observe(self._epoch, node_id)

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        future: Future[tuple[BatchOutcome, ...]] = Future()
        with self._lock:
            if not self._leader:
                future.set_exception(ProposalError("NOT_LEADER"))
                return future
            try:
                payload = encode_entry(batches)
            except EpochOutOfRangeError as error:  # as RaftNode: a value, never a raise
                future.set_exception(ProposalError(f"EPOCH_OUT_OF_RANGE: {error}"))
                return future
            outcome = self.state_machine.apply_entry(payload)
            self._index += 1
            if self._fail_next:
                # The entry committed, but the proposer never hears so: an unknown outcome.
                self._fail_next -= 1
                future.set_exception(ProposalError("LEADER_CHANGED"))
            else:
                future.set_result(outcome)
        for listener in self._apply_listeners:
            listener()
        return future

    def fail_next(self, count: int = 1) -> None:
        """The next ``count`` proposals commit but their proposers get an unknown outcome."""
        self._fail_next = count

    def set_leader(self, leader: bool) -> None:
        """Gains or loses leadership (a new epoch each time it is gained)."""
        with self._lock:
            changed = leader != self._leader
            self._leader = leader
            if leader and changed:
                self._epoch += 1
            self.leadership.observe(self._epoch, self.node_id if leader else None)
        if changed:
            for listener in self._leadership_listeners:
                listener(leader)

    def is_leader(self) -> bool:
        return self._leader

    def leader_id(self) -> int | None:
        return self.node_id if self._leader else None

    def epoch(self) -> int:
        return self._epoch

    def status(self) -> QuorumStatus:
        return QuorumStatus(
            node_id=self.node_id,
            state="leader" if self._leader else "follower",
            leader_id=self.leader_id(),
            epoch=self._epoch,
            has_quorum=self._leader,
            commit_index=self._index,
            last_applied_index=self._index,
            high_watermark=self.state_machine.image.offset + 1,
            voters=(VoterStatus(self.node_id, "local", self._index, 0, 0, True),),
            failure=self.state_machine.failure,
            leadership_changes=self.leadership.leadership_changes,
            term_increments=self.leadership.term_increments,
            incarnation=self.leadership.incarnation,
            leader_for_seconds=self.leadership.leader_for(),
        )

    def add_apply_listener(self, listener: Callable[[], None]) -> None:
        self._apply_listeners.append(listener)

    def add_leadership_listener(self, listener: Callable[[bool], None]) -> None:
        self._leadership_listeners.append(listener)

    def close(self) -> None:
        self.set_leader(False)
