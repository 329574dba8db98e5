"""DurableJournal: the Raft journal file with a durable term/vote and a sync on demand.

pysyncobj 0.3.17 never fsyncs its journal (its GitHub issue #84), and stores term and vote without
an fsync and without a checksum (``term_vote.py``); chunkraft's own journal file
(``checked_journal.py``) syncs only when asked. Raft needs
the term and vote on stable storage before a message that depends on them is sent, and a log
entry on stable storage before a node acknowledges it (or, on the leader, counts itself toward
its commit).

This wrapper does two things:

- ``setCurrentTerm`` stores term and vote with :func:`~.term_vote.store_term_vote` (CRC'd,
  fsynced, renamed, directory fsynced) *synchronously*, before pysyncobj goes on to send the
  RequestVote, the vote or the answer that depends on them. pysyncobj's own ``journal.meta``
  is still written, so an older chunkraft could read it, but it is never trusted on start.
- every write of the log (add, truncation, clear) marks the journal *unsynced*; :meth:`sync`
  has the journal file fdatasync itself if it is. ``durable_syncobj.py`` decides when: once
  per tick, before held acknowledgements leave and before the leader counts its own entries.

Used only from pysyncobj's tick thread, like the journal it wraps (:attr:`syncs` may be read
from any thread).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from chunkraft.controller.raft.term_vote import (
    TermVote,
    load_term_vote,
    store_term_vote,
    term_vote_path,
)

__all__ = ["DurableJournal"]

logger = logging.getLogger(__name__)


class DurableJournal:
    """Wraps a :class:`~.checked_journal.CheckedFileJournal` opened on ``journal_path``; see
    the module doc.

    ``fdatasync`` is the call that makes the journal file durable (replaceable in tests).
    Raises :class:`~chunkraft.errors.JournalCorruptError` if the stored term/vote is damaged.
    """

    def __init__(self, inner: Any, journal_path: str,
                 fdatasync: Callable[[int], None] = os.fdatasync) -> None:
        self._inner = inner
        self._term_path = term_vote_path(journal_path)
        self._fdatasync = fdatasync
        try:
            self._term_vote, from_meta = load_term_vote(journal_path)
        except BaseException:
            inner._destroy()  # the node will not start: release the journal file
            raise
        if from_meta:
            # From now on the CRC'd file is the only truth; write it before anything else.
            logger.info("storing Raft term %d and vote %r in %s (from pysyncobj's journal.meta)",
                        self._term_vote.term, self._term_vote.voted_for, self._term_path)
            store_term_vote(self._term_path, self._term_vote)
        self._unsynced = False
        self.syncs = 0
        """fdatasync calls made so far (for tests and status)."""

    # ------------------------------------------------------------ term and vote

    def setCurrentTerm(self, term: int, votedForNodeId: Any) -> None:  # pysyncobj's name
        vote = None if votedForNodeId is None else str(votedForNodeId)
        value = TermVote(int(term), vote)
        if value != self._term_vote:
            store_term_vote(self._term_path, value)  # durable before pysyncobj sends anything
            self._term_vote = value
        self._inner.setCurrentTerm(term, votedForNodeId)

    def getCurrentTerm(self) -> int:
        return self._term_vote.term

    def getVotedForNodeId(self) -> str | None:
        return self._term_vote.voted_for

    # ------------------------------------------------------------ the log

    def add(self, command: bytes, index: int, term: int) -> None:
        self._unsynced = True
        self._inner.add(command, index, term)

    def deleteEntriesFrom(self, position: int) -> None:
        self._unsynced = True
        self._inner.deleteEntriesFrom(position)

    def deleteEntriesTo(self, position: int) -> None:
        self._unsynced = True
        self._inner.deleteEntriesTo(position)

    def clear(self) -> None:
        self._unsynced = True
        self._inner.clear()

    def __getitem__(self, item: Any) -> Any:
        return self._inner[item]

    def __len__(self) -> int:
        return len(self._inner)

    @property
    def file(self) -> Any:
        """The journal file this wraps (its ``sync`` may be called from any thread)."""
        return self._inner

    @property
    def unsynced(self) -> bool:
        """True if the log was written since the last :meth:`sync`."""
        return self._unsynced

    def sync(self) -> None:
        """fdatasync the journal file if the log was written since the last call."""
        if not self._unsynced:
            return
        self._unsynced = False  # before the call: a write racing it would be marked again
        try:
            self._inner.sync(self._fdatasync)
        except BaseException:
            self._unsynced = True
            raise
        self.syncs += 1

    def _destroy(self) -> None:
        self._inner._destroy()

    def __getattr__(self, name: str) -> Any:
        # setRaftCommitIndex, getRaftCommitIndex, flush, onOneSecondTimer: the file's own.
        return getattr(self._inner, name)
