"""DurableSyncObj: pysyncobj's SyncObj that acknowledges and commits only what is on disk.

pysyncobj 0.3.17 sends a follower's acknowledgement (``next_node_idx``) right after it appends
the entries to its mmap'ed journal, and a leader counts itself toward the commit of an entry
as soon as it has appended it; neither is on disk then (upstream issue 84). A power loss of a
majority can therefore lose an entry the leader counted as committed. Raft (and etcd) make the
entries durable first.

This subclass, used with ``durable_journal.DurableJournal``:

- holds every ``next_node_idx`` a follower sends while its journal has unsynced writes (and
  every later one behind it, so the leader sees them in order), and sends them at the start of
  the next tick right after one fdatasync: one sync per tick covers every AppendEntries that
  tick received (group commit);
- syncs the journal at the start of every tick, before pysyncobj's commit loop counts the
  leader's own entries, and right after a new leader appends its no-op (a one-node cluster
  could otherwise commit it in the same tick).

Term and vote need nothing here: ``DurableJournal.setCurrentTerm`` stores them durably before
it returns, and pysyncobj sends its RequestVote, vote and AppendEntries only after that call.

Runs in pysyncobj's tick thread; nothing here is for other threads.
"""

from __future__ import annotations

from typing import Any

from pysyncobj import SyncObj

__all__ = ["DurableSyncObj"]


class DurableSyncObj(SyncObj):  # type: ignore[misc]
    """A SyncObj whose journal writes are durable before they are acknowledged or committed.

    Its journal must offer ``sync()`` and ``unsynced`` (``DurableJournal``, possibly inside
    ``ConflictOnlyJournal``); with pysyncobj's in-memory journal it behaves like a SyncObj.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Before SyncObj.__init__, which may start the tick thread.
        self._held_acks: list[tuple[Any, bool, int, bool]] = []
        self.acks_held = 0
        """Acknowledgements that waited for a sync (for tests and status)."""
        super().__init__(*args, **kwargs)

    def _onTick(self, timeToWait: float = 0.0) -> None:
        self._sync_journal_and_release_acks()
        super()._onTick(timeToWait)

    def _sync_journal_and_release_acks(self) -> None:
        # If the sync raises (a failing disk), the acks stay held and pysyncobj's tick loop logs
        # and retries: this node then stops acknowledging, as it must.
        sync = getattr(self._SyncObj__raftLog, "sync", None)
        if sync is not None:
            sync()
        held, self._held_acks = self._held_acks, []
        for node, reset, next_index, success in held:
            SyncObj._SyncObj__sendNextNodeIdx(self, node, reset=reset, nextNodeIdx=next_index,
                                              success=success)

    def _journal_unsynced(self) -> bool:
        journal = self._SyncObj__raftLog
        # len() settles ConflictOnlyJournal's pending truncation, so it is written (and counted
        # as unsynced) before we decide, and synced before the acknowledgement leaves.
        len(journal)
        return bool(getattr(journal, "unsynced", False))

    # pysyncobj's private method (SyncObj.__sendNextNodeIdx), overridden by its mangled name.
    def _SyncObj__sendNextNodeIdx(self, node: Any, reset: bool = False,
                                  nextNodeIdx: int | None = None, success: bool = False) -> None:
        if nextNodeIdx is None:
            # pysyncobj's default, taken now: the log may grow before the ack is released.
            nextNodeIdx = self._SyncObj__getCurrentLogIndex() + 1
        if self._held_acks or self._journal_unsynced():
            self._held_acks.append((node, reset, nextNodeIdx, success))
            self.acks_held += 1
            return
        SyncObj._SyncObj__sendNextNodeIdx(self, node, reset=reset, nextNodeIdx=nextNodeIdx,
                                          success=success)

    def _SyncObj__onBecomeLeader(self) -> None:
        SyncObj._SyncObj__onBecomeLeader(self)
        sync = getattr(self._SyncObj__raftLog, "sync", None)
        if sync is not None:
            sync()
