"""A leader's view of its followers: their log end offsets, the high watermark and ISR changes.

Kafka's rules (``Partition.scala``), kept as a small state object the ReplicaManager drives:

- A follower's fetch at offset ``f`` says its log end offset (LEO) is ``f``: everything below is
  on its disk (a follower appends a fetched batch before it asks for the next offsets).
- It is *caught up* at time ``t`` if ``f`` >= the leader's LEO at ``t``, or ``f`` >= the leader's
  LEO at the time of its previous fetch (then it was caught up at that previous fetch's time).
- HW = min over the *maximal ISR* of LEO, never lower than before. The maximal ISR is the
  committed ISR plus a pending expansion: while an AlterPartition that adds a replica is in flight
  the new member already counts, and while one that removes a replica is in flight the old member
  still counts, so an acks=all answer never depends on an ISR change the controller may refuse.
- Shrink: an ISR member (not the leader) not caught up within ``replica.lag.time.max.ms``.
- Expand: a replica outside the ISR whose LEO reached the HW and the start of the current
  leader epoch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["FollowerState", "IsrTracker"]


@dataclass
class FollowerState:
    """What the leader knows of one follower (LEO -1: not fetched yet in this leader epoch)."""

    leo: int = -1
    broker_epoch: int = -1
    last_caught_up_ms: int = -1
    last_fetch_ms: int = -1
    leader_leo_at_last_fetch: int = -1


class IsrTracker:
    """Follower LEOs, the maximal ISR and the HW of one partition led by ``leader_id``.

    Created when a broker becomes the leader of a leader epoch (follower state starts unknown, as
    in Kafka, with ``last_caught_up_ms`` = the election time so a follower gets a full lag period
    to show up). Not thread-safe: the broker's event loop.
    """

    def __init__(self, leader_id: int, replicas: Iterable[int], isr: Iterable[int],
                 now_ms: int) -> None:
        self.leader_id = leader_id
        self.isr: tuple[int, ...] = tuple(isr)
        self.pending_isr: tuple[int, ...] | None = None
        self.followers: dict[int, FollowerState] = {}
        self.set_replicas(replicas, now_ms)

    def set_replicas(self, replicas: Iterable[int], now_ms: int) -> None:
        """Keeps the state of replicas that stay, starts new ones unknown, forgets the rest."""
        wanted = [r for r in replicas if r != self.leader_id]
        self.followers = {
            r: self.followers.get(r) or FollowerState(last_caught_up_ms=now_ms) for r in wanted
        }

    def set_isr(self, isr: Iterable[int]) -> None:
        """The committed ISR changed (from the image or an AlterPartition answer)."""
        self.isr = tuple(isr)
        self.pending_isr = None

    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending_isr is None:
            return self.isr
        extra = tuple(b for b in self.pending_isr if b not in self.isr)
        return self.isr + extra

    def record_fetch(self, replica_id: int, fetch_offset: int, leader_leo: int,
                     broker_epoch: int, now_ms: int) -> None:
        """A follower fetched at ``fetch_offset`` while the leader's LEO was ``leader_leo``."""
        state = self.followers.get(replica_id)
        if state is None:
            return
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = now_ms
        elif state.last_fetch_ms >= 0 and fetch_offset >= state.leader_leo_at_last_fetch:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.leo = fetch_offset
        state.broker_epoch = broker_epoch
        state.last_fetch_ms = now_ms
        state.leader_leo_at_last_fetch = leader_leo

    def high_watermark(self, leader_leo: int, current_hw: int) -> int:
        """The HW the maximal ISR allows, never below ``current_hw``."""
        low = leader_leo
        for broker in self.maximal_isr():
            if broker == self.leader_id:
                continue
            state = self.followers.get(broker)
            leo = state.leo if state is not None else -1
            if leo < 0:
                return current_hw  # a member that has not fetched yet holds the HW where it is
            low = min(low, leo)
        return max(current_hw, low)

    def shrink_candidates(self, leader_leo: int, lag_max_ms: int, now_ms: int) -> list[int]:
        """ISR members (not the leader) out of sync: not caught up within ``lag_max_ms``."""
        out: list[int] = []
        for broker in self.isr:
            if broker == self.leader_id:
                continue
            state = self.followers.get(broker)
            if state is None:
                continue  # not a replica any more: the controller removes it with the replica
            caught_up = state.leo >= leader_leo and state.leo >= 0
            if not caught_up and now_ms - state.last_caught_up_ms > lag_max_ms:
                out.append(broker)
        return out

    def expand_candidates(self, hw: int, epoch_start: int) -> list[int]:
        """Replicas outside the ISR whose LEO reached the HW and the leader epoch's start."""
        out: list[int] = []
        for broker, state in self.followers.items():
            if broker in self.isr:
                continue
            if state.leo >= 0 and state.leo >= hw and state.leo >= epoch_start:
                out.append(broker)
        return out

    def broker_epoch_of(self, broker: int) -> int:
        state = self.followers.get(broker)
        return state.broker_epoch if state is not None else -1
