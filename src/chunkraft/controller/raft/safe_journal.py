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
pysyncobj would count them as committed (it commits up to its last index), so they are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

__all__ = ["ConflictOnlyJournal"]

logger = logging.getLogger(__name__)


class ConflictOnlyJournal:
    """Wraps a pysyncobj journal (``FileJournal`` or ``MemoryJournal``); see the module doc.

    Used only from pysyncobj's tick thread, like the journal it wraps.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._cursor: int | None = None  # position of the next entry a follower message gives
        self.last_applied: Callable[[], int] = lambda: 0

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
        for position in range(cursor, len(inner)):
            if inner[position][2] != term:
                self._truncate(position, f"entries after the leader's are of term "
                                         f"{inner[position][2]}, not {term}")
                return

    def _truncate(self, position: int, why: str) -> None:
        inner = self._inner
        first = inner[position][1]
        level = logging.CRITICAL if first <= self.last_applied() else logging.INFO
        logger.log(level, "truncating the Raft log from index %d: %s", first, why)
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
