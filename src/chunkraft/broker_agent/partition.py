"""One partition's replica state on this broker: its log, its role in the active chunk, its tasks.

The state is derived from (image, log on disk) by the ReplicaManager and only changed on the
broker's event loop. Chunks themselves are read from the current image each time; a Partition
keeps only what the image does not say: the leader's follower tracking, whether appends are
paused (a chunk roll) or not yet allowed (the overlap copy of a new active chunk), and the
fetcher / copy tasks working on this log.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from typing import TYPE_CHECKING, Protocol

from chunkraft.broker_agent.isr import IsrTracker
from chunkraft.error_codes import Errors
from chunkraft.records import PartitionRecord

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import UnifiedLog

__all__ = ["Following", "Partition", "Role", "Signal", "leader_epoch_error"]


class Signal:
    """Wakes every waiter on :meth:`notify`: new data, a new high watermark, a role change.

    Each notify completes the current event and starts a fresh one, so a waiter that looked at
    the state and then waits misses nothing that happens after its look.
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    def event(self) -> asyncio.Event:
        """The event the next :meth:`notify` sets (take it before checking the state)."""
        return self._event

    async def wait(self, timeout_s: float) -> bool:
        """Waits for the next notify, at most ``timeout_s``; True if notified."""
        event = self._event
        try:
            await asyncio.wait_for(event.wait(), timeout=max(0.0, timeout_s))
        except TimeoutError:
            return False
        return True


class Following(Protocol):
    """A running follower of the partition (a task, or a place in a per-leader fetcher)."""

    def cancel(self) -> bool: ...

    def done(self) -> bool: ...


class Role(enum.Enum):
    """This broker's role in the partition's active chunk."""

    NONE = "none"          # hosts only inactive chunks (or nothing yet)
    LEADER = "leader"
    FOLLOWER = "follower"


class Partition:
    """A partition replica on this broker (any mix of its active chunk and inactive chunks).

    ``record`` is the active chunk's PartitionRecord as this broker last applied it (None when it
    is no replica of the active chunk); for a leader, an AlterPartition answer updates its ISR and
    partition epoch before the image does. ``tracker`` exists only while leading.
    ``leadership`` counts the times this broker became leader of the active chunk: a leader
    epoch bump while it stays leader (KIP-253's expansion, a replica change) keeps it, so a
    produce waiting for the ISR across the bump is still answered (Kafka's produce carries no
    leader epoch). ``appends_paused`` is set during a chunk roll; ``overlap_pending`` while the
    leader of a new active chunk still copies the overlap with the previous chunk.
    ``chunk_logs`` are inactive chunks kept in their own log (``<topic>@<start>-<partition>``)
    because the partition's log was already past their offsets when they were added (the log
    store appends only at its end). Not thread-safe.
    """

    def __init__(self, topic: str, topic_id: uuid.UUID, index: int, log: UnifiedLog) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.index = index
        self.log = log
        self.role = Role.NONE
        self.record: PartitionRecord | None = None
        self.tracker: IsrTracker | None = None
        self.leader_epoch_start = 0
        self.leadership = 0
        self.appends_paused = False
        self.overlap_pending = False
        self.alter_in_flight = False
        self.alter_retry_at_ms = 0  # after a refused AlterPartition, not before this time
        self.signal = Signal()
        self.fetcher: Following | None = None
        self.fetcher_epoch = -1
        self.fetcher_leader = -1
        self.copies: dict[int, asyncio.Task[None]] = {}  # by chunk start offset
        self.chunk_logs: dict[int, UnifiedLog] = {}  # chunks kept beside the log, by start
        self.closed = False

    def log_for(self, chunk_start: int) -> UnifiedLog:
        """The log holding the inactive chunk starting at ``chunk_start``: its own chunk log
        if it has one, else the partition's log."""
        return self.chunk_logs.get(chunk_start, self.log)

    def all_logs(self) -> list[UnifiedLog]:
        return [self.log, *self.chunk_logs.values()]

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.index}"

    @property
    def leader_epoch(self) -> int:
        return self.record.leader_epoch if self.record is not None else -1

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def accepts_appends(self) -> bool:
        return self.is_leader and not self.appends_paused and not self.overlap_pending

    def stop_fetcher(self) -> None:
        if self.fetcher is not None:
            self.fetcher.cancel()
            self.fetcher = None
        self.fetcher_epoch = -1
        self.fetcher_leader = -1

    def stop_copy(self, start_offset: int) -> None:
        task = self.copies.pop(start_offset, None)
        if task is not None:
            task.cancel()

    def close(self) -> None:
        """Stops every task; the log itself is closed or deleted by the caller."""
        self.closed = True
        self.stop_fetcher()
        for start in list(self.copies):
            self.stop_copy(start)
        self.role = Role.NONE
        self.tracker = None
        self.signal.notify()


def leader_epoch_error(partition: Partition, current_leader_epoch: int) -> Errors | None:
    """Kafka's leader epoch check of a request against this leader's epoch (-1: not checked)."""
    if current_leader_epoch < 0:
        return None
    if current_leader_epoch < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if current_leader_epoch > partition.leader_epoch:
        return Errors.UNKNOWN_LEADER_EPOCH
    return None
