"""The interface every Raft log of the controller offers, and the quorum's status."""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

from chunkraft.controller.raft.entry import EpochOutOfRangeError, ProposedBatch, encode_entry
from chunkraft.controller.raft.state_machine import BatchOutcome, MetadataStateMachine
from chunkraft.errors import ChunkraftError

__all__ = ["TICK_GAP_BUCKETS", "ProposalError", "QuorumStatus", "RaftLog", "TickCounts",
           "TickWatch", "VoterStatus", "encode_proposal"]

TICK_GAP_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.06, 0.1, 0.25, 0.5, 1.0, 2.5, math.inf)
"""Upper bounds (seconds, inclusive) of the tick-gap histogram's buckets, ``inf`` last. An idle
Raft thread waits in pysyncobj's poll for at most 50 ms, so idle gaps stay within 60 ms: that
bound keeps the idle rhythm apart from a tick that came late (a busy thread ticks more often).
From 0.25 s a gap nears the election timeout (0.2-0.5 s by default)."""


class ProposalError(ChunkraftError):
    """A proposal whose outcome is unknown: not leader, leader changed, discarded, timed out.

    Whatever the reason, the entry may still commit later; only its idempotency key makes a
    retry safe. ``reason`` is the Raft library's word for it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"the proposal's outcome is unknown: {reason}")
        self.reason = reason


def encode_proposal(batches: Sequence[ProposedBatch], future: Future[tuple[BatchOutcome, ...]],
                    *, stopping: bool) -> bytes | None:
    """The entry's bytes for a proposal; None, with ``future`` failed, if the node is stopping
    or a batch's epoch cannot be encoded (a term past int32 cannot be led with: the proposer
    hears "not the controller", never a 500)."""
    if stopping:
        future.set_exception(ProposalError("the node is stopping"))
        return None
    try:
        return encode_entry(batches)
    except EpochOutOfRangeError as error:
        future.set_exception(ProposalError(f"EPOCH_OUT_OF_RANGE: {error}"))
        return None


@dataclass(frozen=True, slots=True)
class VoterStatus:
    """One voter as this node sees it (the leader sees its followers' progress)."""

    node_id: int
    address: str
    log_end_index: int | None
    """The last Raft index known to be on that voter (the leader's match index); None if unknown."""
    lag: int | None
    last_contact_ms_ago: int | None
    connected: bool


@dataclass(frozen=True, slots=True)
class QuorumStatus:
    """What ``kafka-metadata-quorum describe --status / --replication`` shows, for this node."""

    node_id: int
    state: str
    leader_id: int | None
    epoch: int
    has_quorum: bool
    commit_index: int
    last_applied_index: int
    high_watermark: int
    """The metadata offset after the last committed record this node has applied."""
    voters: tuple[VoterStatus, ...]
    failure: str | None
    tick_lag_seconds: float | None = None
    """Seconds since the Raft thread last ticked; None where there is no such thread."""
    tick_lag_limit_seconds: float | None = None
    """The tick lag past which the Raft thread counts as stalled (the longest election
    timeout: a follower that misses that much starts an election)."""
    campaign_refused: bool = False
    """This node is at term MAX_EPOCH (the largest int32 epoch), has heard from no leader for
    an election timeout, and will not start an election past it
    (no epoch field could hold the next term)."""
    leadership_changes: int = 0
    """Times the leader this node knows changed (another node, or a new term), the first
    election included: 1 in a quorum that has been steady since this node started."""
    term_increments: int = 0
    """How far this node's Raft term rose since it first knew a leader."""
    leader_for_seconds: float | None = None
    """How long the leader known now has led, as this node saw it; None without a leader."""
    incarnation: str | None = None
    """Random per process: a restarted node's counts begin again under a new one."""

    @property
    def raft_thread_stalled(self) -> bool:
        """Whether the Raft thread has not ticked within :attr:`tick_lag_limit_seconds`."""
        return (self.tick_lag_seconds is not None and self.tick_lag_limit_seconds is not None
                and self.tick_lag_seconds > self.tick_lag_limit_seconds)


class TickCounts(Protocol):
    """What a Raft thread's tick watch reports: its stalls and its histogram of tick gaps
    (:class:`TickWatch` in the Raft thread's process, a copy sent by the Raft process)."""

    @property
    def stalls(self) -> int: ...

    @property
    def longest_stall(self) -> float: ...

    @property
    def gap_counts(self) -> Sequence[int]:
        """One count per bucket of :data:`TICK_GAP_BUCKETS` (not cumulative across buckets)."""

    @property
    def gap_sum(self) -> float: ...


class TickWatch:
    """When a Raft thread last ticked, how long ago that was, its stalls and its tick gaps.

    :meth:`tick` is called by the Raft thread on every tick: a clock read, a subtraction, a
    bisect on the 13 bounds of :data:`TICK_GAP_BUCKETS`, two attribute updates. :meth:`lag`
    may be called from any thread (a float is read whole under the GIL).

    Every gap between two ticks is counted in :attr:`gap_counts` (one count per bucket, the
    first bucket whose bound is at least the gap; counts only grow, Prometheus' histogram
    turns them cumulative across buckets) and added to :attr:`gap_sum`: the distribution shows
    whether heartbeats keep their period, which the longest stall alone cannot. The time from
    construction to the first tick (the journal's load, the transport's start) is no gap
    between ticks and is left out of the histogram. A reader on another thread should copy
    :attr:`gap_counts` (``tuple(...)``, whole under the GIL); it and :attr:`gap_sum` may then
    disagree by the one tick in between, which a scrape can ignore.

    A gap longer than half of ``limit`` is a stall: counted in :attr:`stalls`, the longest
    kept in :attr:`longest_stall`, and passed to ``on_stall`` (from the Raft thread, so it
    must be quick), since a stall that reaches the election timeout costs an election and the
    operator wants to know when and how long.
    """

    def __init__(self, limit: float, clock: Callable[[], float] = time.monotonic,
                 on_stall: Callable[[float], None] | None = None) -> None:
        self.limit = limit
        self._clock = clock
        self._last = clock()
        self._ticked = False
        self._on_stall = on_stall
        self.stalls = 0
        self.longest_stall = 0.0
        self.gap_counts = [0] * len(TICK_GAP_BUCKETS)
        self.gap_sum = 0.0

    def tick(self) -> None:
        now = self._clock()
        gap = now - self._last
        self._last = now
        if self._ticked:
            # bisect_left: a gap equal to a bound belongs to that bucket (Prometheus' le).
            self.gap_counts[bisect.bisect_left(TICK_GAP_BUCKETS, gap)] += 1
            self.gap_sum += gap
        else:
            self._ticked = True
        if gap > self.limit / 2:
            self.stalls += 1
            self.longest_stall = max(self.longest_stall, gap)
            if self._on_stall is not None:
                self._on_stall(gap)

    def lag(self) -> float:
        """Seconds since the last tick (since construction before the first)."""
        return max(self._clock() - self._last, 0.0)


class RaftLog(Protocol):
    """A Raft-replicated log of entries that feed :attr:`state_machine`.

    ``propose`` returns a future resolved with one outcome per batch once the entry is committed,
    applied on this node and flushed to its disk, or failed with :class:`ProposalError` (also for
    a batch whose epoch cannot be encoded: ``EPOCH_OUT_OF_RANGE``; it never raises for that).
    Listeners are called from the Raft thread: they must be quick and must not raise.
    """

    node_id: int

    @property
    def state_machine(self) -> MetadataStateMachine: ...

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]: ...

    def is_leader(self) -> bool: ...

    def leader_id(self) -> int | None: ...

    def epoch(self) -> int: ...

    def status(self) -> QuorumStatus: ...

    def add_apply_listener(self, listener: Callable[[], None]) -> None:
        """``listener()`` is called (in the Raft thread) right after each applied entry; it
        must return quickly (what it raises is logged and dropped)."""

    def add_leadership_listener(self, listener: Callable[[bool], None]) -> None: ...

    def close(self) -> None: ...
