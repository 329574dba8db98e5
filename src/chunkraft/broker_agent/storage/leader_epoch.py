"""The leader-epoch cache: which leader epoch started at which offset (KIP-101, KIP-279).

Kafka's ``LeaderEpochFileCache``: a list of ``(epoch, start_offset)`` entries, both strictly
increasing, kept in ``leader-epoch-checkpoint`` in Kafka's text format (version line ``0``, entry
count line, then ``epoch start_offset`` lines). Every change is written to disk before the method
returns. Not thread-safe: the broker's event loop owns it.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import NamedTuple

from chunkraft.broker_agent.storage.checkpoint import read_text, write_atomic

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochEntry", "LeaderEpochCache"]

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0


class EpochEntry(NamedTuple):
    """A leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Epoch start offsets of one log, persisted to ``path`` on every change."""

    def __init__(self, path: Path) -> None:
        """Load the checkpoint at ``path`` (an unreadable or missing file means no entries)."""
        self._path = path
        self._entries: list[EpochEntry] = _read(path)

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        """All entries, oldest first."""
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or -1 when there is none."""
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def latest_entry(self) -> EpochEntry | None:
        """The newest entry, if any."""
        return self._entries[-1] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns whether anything changed.

        As Kafka: nothing changes when the latest entry has the same epoch and a start at or
        before ``start_offset``; otherwise every entry with an epoch >= ``epoch`` or a start >=
        ``start_offset`` is removed first, so entries stay monotonic in both fields.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"epoch {epoch} and start offset {start_offset} must be >= 0")
        latest = self.latest_entry()
        if latest is not None and latest.epoch == epoch and start_offset >= latest.start_offset:
            return False
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end_offset)`` for OffsetsForLeaderEpoch, as Kafka's ``endOffsetFor``.

        The end offset of an epoch is the start offset of the next higher epoch (exclusive), or
        the log end offset for the latest epoch. For an epoch between two known epochs the answer
        names the largest known epoch below it; for an epoch older than all known ones it names
        the requested epoch and the first entry's start; for an unknown newer epoch, or -1, the
        answer is ``(-1, -1)``.
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._entries and self._entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        epochs = [e.epoch for e in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher_start = self._entries[higher].start_offset
        if higher == 0:
            return requested_epoch, higher_start
        return self._entries[higher - 1].epoch, higher_start

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds ``offset``, or None when it lies before every entry."""
        starts = [e.start_offset for e in self._entries]
        i = bisect.bisect_right(starts, offset)
        return self._entries[i - 1].epoch if i else None

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop every entry starting at or after ``end_offset`` (the log was truncated there)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
        self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget entries wholly before ``start_offset`` (the log start moved up).

        The last entry starting at or before ``start_offset`` survives with its start moved to
        ``start_offset``, so the epoch of the new first offset is still known.
        """
        removed: EpochEntry | None = None
        while self._entries and self._entries[0].start_offset <= start_offset:
            removed = self._entries.pop(0)
        if removed is None:
            return
        self._entries.insert(0, EpochEntry(removed.epoch, start_offset))
        self._flush()

    def clear(self) -> None:
        """Forget every entry (the log was emptied)."""
        if self._entries:
            self._entries.clear()
            self._flush()

    def _flush(self) -> None:
        lines = [str(_VERSION), str(len(self._entries))]
        lines += [f"{e.epoch} {e.start_offset}" for e in self._entries]
        write_atomic(self._path, "\n".join(lines) + "\n")


def _read(path: Path) -> list[EpochEntry]:
    # The file is only ever replaced atomically, so a malformed one was not written by us; the
    # entries are rebuilt from batch headers during recovery, hence "no entries" is a safe answer.
    text = read_text(path)
    if text is None:
        return []
    lines = text.split("\n")
    try:
        if int(lines[0]) != _VERSION:
            return []
        count = int(lines[1])
        entries = []
        for line in lines[2 : 2 + count]:
            epoch, start = line.split()
            entries.append(EpochEntry(int(epoch), int(start)))
    except (ValueError, IndexError):
        return []
    return entries if len(entries) == count else []
