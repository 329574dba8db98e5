"""Readiness: whether a controller node should take traffic, and the first reason it should not.

One function decides for ``GET /readyz`` and for the quorum status (``quorum describe``), so the
two never disagree. The checks, in order: the node has not learnt from the other controllers
that it is not a voter (:mod:`chunkraft.api.voter_standing`); the metadata log is applying; the
Raft thread has ticked within the longest election timeout (a thread stalled that long loses its
followers or its leader while its other state still reads "leader, quorum"); the Raft term fits
the int32 epoch (a node at a larger term, say after one flipped journal byte, can neither lead
nor follow a leader that could write); the node is not stuck at the last epoch (at term 2^31-1
with no leader, it refuses to campaign); a leader is known; this node is in touch with a
majority; it has applied all but :data:`READY_MAX_LAG_ENTRIES` of the entries it knows are
committed.
"""

from __future__ import annotations

from pydantic import BaseModel

from chunkraft.controller.raft.entry import MAX_EPOCH
from chunkraft.controller.raft.log import QuorumStatus

__all__ = ["READY_MAX_LAG_ENTRIES", "Readiness", "assess_readiness"]

READY_MAX_LAG_ENTRIES = 100
"""A node more Raft entries than this behind the commit index it knows of is not ready: it
would answer reads from an old image (a restarted node replaying its journal, a slow follower)."""


class Readiness(BaseModel):
    """``GET /readyz``: whether this node should take traffic, and why not."""

    ready: bool
    reason: str | None
    """Why the node is not ready (the first check that failed); None when it is."""
    leader_id: int | None
    has_quorum: bool
    lag_entries: int
    """Committed Raft entries this node has not applied yet."""
    tick_lag_seconds: float | None
    """Seconds since the Raft thread last ticked (None without a Raft thread)."""
    failure: str | None
    metadata_offset: int
    voter_ids: list[int]
    """The voters as this node knows them (a node left out of them learns it from this, see
    :mod:`chunkraft.api.voter_standing`)."""


def assess_readiness(status: QuorumStatus, not_a_voter: str | None = None) -> Readiness:
    """The node's readiness from its quorum status (and, when it has learnt that it is not a
    voter, why); pure, so tests can give any status."""
    lag = max(status.commit_index - status.last_applied_index, 0)
    reason = None
    if not_a_voter is not None:
        reason = not_a_voter
    elif status.failure is not None:
        reason = f"the metadata log stopped applying: {status.failure}"
    elif status.raft_thread_stalled:
        reason = (f"the Raft thread has not ticked for {status.tick_lag_seconds:.2f} s, more "
                  f"than the election timeout ({status.tick_lag_limit_seconds:.2f} s)")
    elif status.epoch > MAX_EPOCH:
        reason = (f"the Raft term {status.epoch} is above {MAX_EPOCH}, the largest epoch a "
                  "batch can hold: no leader at this term can commit")
    elif status.campaign_refused:
        reason = (f"the Raft term is {status.epoch}, the largest epoch ({MAX_EPOCH}): no leader "
                  "is heard from and this node will not start an election past it")
    elif status.leader_id is None:
        reason = "no leader is known"
    elif not status.has_quorum:
        reason = "not in touch with a majority of the voters"
    elif lag > READY_MAX_LAG_ENTRIES:
        reason = (f"{lag} committed Raft entries not applied yet (more than "
                  f"{READY_MAX_LAG_ENTRIES})")
    return Readiness(ready=reason is None, reason=reason, leader_id=status.leader_id,
                     has_quorum=status.has_quorum, lag_entries=lag,
                     tick_lag_seconds=status.tick_lag_seconds, failure=status.failure,
                     metadata_offset=status.high_watermark - 1,
                     voter_ids=sorted({voter.node_id for voter in status.voters
                                       if voter.node_id >= 0}))
