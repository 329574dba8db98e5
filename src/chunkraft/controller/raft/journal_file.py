"""The journal file made durable before pysyncobj opens it (found by the power-cut harness).

pysyncobj 0.3.17 creates its journal with a plain ``open`` and ``write`` of its 40-byte header
and never syncs it. ``DurableJournal`` then stores term and vote at once, which fsyncs the
``raft/`` directory: from that moment the journal's *name* survives a power cut, but its bytes
only once the first entry is fdatasynced, a few hundred milliseconds later (after the first
election). A cut in between left ``raft/journal`` empty, and the start-up check refused it
("the journal is shorter than its header") on every node cut then: a cluster cut within a
second of its first start could not start again without wiping ``raft/`` by hand.

:func:`prepare_journal_file` runs before the start-up check and before pysyncobj:

- a missing ``raft/`` directory is created and its parent fsynced;
- a missing journal is written as an empty journal of chunkraft's format 2
  (``checked_journal.py``: its header, no record) to a temporary file, fsynced, renamed into
  place, and the directory fsynced, so the journal is whole or absent;
- an *empty* journal is replaced the same way: a journal with no bytes was never synced, so
  this node never acknowledged an entry from it (an acknowledgement waits for an fdatasync,
  which would have made the header durable too).

A journal with any bytes is left as it is, for the start-up check to judge.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from chunkraft.controller.raft.checked_journal import encode_journal
from chunkraft.records.files._fsync import fsync_directory

__all__ = ["EMPTY_JOURNAL", "prepare_journal_file"]

logger = logging.getLogger(__name__)

EMPTY_JOURNAL = encode_journal([])
"""The bytes of a new journal: format 2's header, with no record."""


def prepare_journal_file(journal_path: str | os.PathLike[str]) -> bool:
    """Makes sure the journal at ``journal_path`` and its directory exist durably (module doc);
    True if it wrote a new journal."""
    path = Path(journal_path)
    directory = path.parent
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
        fsync_directory(directory.parent)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = None
    if size:
        return False
    if size == 0:
        logger.warning("%s is empty (a power cut before its first sync: it never held a synced "
                       "entry); writing an empty journal in its place", path)
    temporary = path.with_name(path.name + ".new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, EMPTY_JOURNAL)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    fsync_directory(directory)
    return True
