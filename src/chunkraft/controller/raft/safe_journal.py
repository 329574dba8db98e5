"""ConflictOnlyJournal: pysyncobj's journal, truncated only where Raft says to.

pysyncobj 0.3.17's follower deletes every entry after ``prevLogIdx`` on each AppendEntries and
then appends the message's entries. Raft (section 5.3) deletes only from the first entry that
*conflicts* (same index, another term). The difference matters: a repeated or reordered
AppendEntries with an older ``prevLogIdx`` and fewer entries makes pysyncobj's follower drop
entries it has already acknowledged, so an entry the leader counted as committed can vanish
from the majority that held it, and be lost if the leader dies then. (Seen in our failover
tests as "truncating already-applied log entries".)

This wrapper makes the truncation lazy: ``deleteEntriesFrom`` only notes where the message's
entries start; each ``add`` that finds the same index with the same term keeps the existing
entry, and the first one with another term truncates from there, as Raft does. Entries after
the message's last one are kept only if they carry the current term, since those can only come
from the current leader (Log Matching); older ones might conflict with the leader's log and
pysyncobj would count them as committed (it commits up to its last index), so they are dropped,
unless this node has applied them: an applied entry is committed, so every later leader holds
it at the same index and term (Leader Completeness), and it is kept.

An applied entry is never truncated. A leader whose entry conflicts with one this node applied
means a Raft safety property is already broken (once, a follower elected on a corrupt
term overwrote an applied entry of a healthy node): going on would apply a second, different
history on top of the first. The journal then calls its ``on_applied_truncation`` *instead of*
truncating; ``node.py`` makes that a fail-stop (CRITICAL log, exit status
:data:`EXIT_APPLIED_TRUNCATION`), and the node is re-synced by removing its ``raft/`` directory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from chunkraft.errors import ChunkraftError

__all__ = ["EXIT_APPLIED_TRUNCATION", "AppliedEntryTruncationError", "ConflictOnlyJournal"]

logger = logging.getLogger(__name__)

EXIT_APPLIED_TRUNCATION = 70
"""The controller's exit status when its leader would truncate an applied entry (EX_SOFTWARE:
an internal invariant is broken, not a configuration or I/O problem)."""


class AppliedEntryTruncationError(ChunkraftError):
    """A leader's entry conflicts with one this node has applied; the journal was left as is.

    Raised by the default :attr:`ConflictOnlyJournal.on_applied_truncation`; ``first_index`` is
    the applied entry the leader's would replace.
    """

    def __init__(self, first_index: int, why: str) -> None:
        super().__init__(f"refusing to truncate the Raft log from applied index {first_index}: "
                         f"{why}")
        self.first_index = first_index
        self.why = why


def _refuse(first_index: int, why: str) -> None:
    raise AppliedEntryTruncationError(first_index, why)


class ConflictOnlyJournal:
    """Wraps a pysyncobj journal (``DurableJournal`` over ``CheckedFileJournal``, or pysyncobj's
    ``MemoryJournal``); see the module doc.

    Used only from pysyncobj's tick thread, like the journal it wraps.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._cursor: int | None = None  # position of the next entry a follower message gives
        self.last_applied: Callable[[], int] = lambda: 0
        self.on_applied_truncation: Callable[[int, str], None] = _refuse
        """Called, instead of truncating, with the first applied index a truncation would
        remove and why; must not return (``node.py`` exits the process)."""

    # ------------------------------------------------------------ the follower's write path

    def deleteEntriesFrom(self, position: int) -> None:  # pysyncobj's method name
        self._settle()
        self._cursor = position

    def add(self, command: bytes, index: int, term: int) -> None:
        cursor = self._cursor
        if cursor is not None:
            inner = self._inner
            if cursor < len(inner):
                _, existing_index, existing_term = inner[cursor]
                if existing_index == index and existing_term == term:
                    self._cursor = cursor + 1  # the same entry: keep it
                    return
                self._truncate(cursor, f"entry {index} of term {term} conflicts with term "
                                       f"{existing_term}")
            self._cursor = None
        self._inner.add(command, index, term)

    def _settle(self) -> None:
        """After a follower message: drop kept entries not of the current term."""
        cursor = self._cursor
        if cursor is None:
            return
        self._cursor = None
        inner = self._inner
        term = inner.getCurrentTerm()
        applied = self.last_applied()
        for position in range(cursor, len(inner)):
            # An applied entry is committed: the leader has it too, so it is never dropped here.
            if inner[position][2] != term and inner[position][1] > applied:
                self._truncate(position, f"entries after the leader's are of term "
                                         f"{inner[position][2]}, not {term}")
                return

    def _truncate(self, position: int, why: str) -> None:
        inner = self._inner
        first = inner[position][1]
        applied = self.last_applied()
        if first <= applied:
            logger.critical("the leader's log conflicts with applied Raft index %d (applied up "
                            "to %d): %s; stopping instead of truncating it", first, applied, why)
            self._cursor = None
            self.on_applied_truncation(first, why)
            raise AppliedEntryTruncationError(first, why)  # the callback must not return
        logger.info("truncating the Raft log from index %d: %s", first, why)
        inner.deleteEntriesFrom(position)

    # ------------------------------------------------------------ everything else, settled

    def __getitem__(self, item: Any) -> Any:
        self._settle()
        return self._inner[item]

    def __len__(self) -> int:
        self._settle()
        return len(self._inner)

    def clear(self) -> None:
        self._cursor = None
        self._inner.clear()

    def deleteEntriesTo(self, position: int) -> None:
        self._settle()
        self._inner.deleteEntriesTo(position)

    def __getattr__(self, name: str) -> Any:
        # setRaftCommitIndex, setCurrentTerm, flush, sync, _destroy, onOneSecondTimer, ...
        if name.startswith("set") or name in ("flush", "sync", "_destroy", "onOneSecondTimer"):
            self._settle()
        return getattr(self._inner, name)
