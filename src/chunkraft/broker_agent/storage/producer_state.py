"""Producer state of one log: idempotent sequences, producer epochs and open transactions.

Kafka's ``ProducerStateManager`` and ``ProducerAppendInfo``, reduced to what the data plane uses.
For every producer id the log keeps the current producer epoch, the metadata of its last five
batches (sequence range, offsets, timestamp: to answer a retried batch with its first offsets), the
coordinator epoch of its last marker and the first offset of its open transaction. An append is
checked in a :class:`ProducerAppend` staging area and applied with :meth:`ProducerAppend.commit`
only once the bytes are written, so a refused request leaves no trace.

State is rebuilt on open from the newest ``<offset:020d>.snapshot`` file at or below the log end
plus a replay of the batch headers after it; snapshots are taken when a segment rolls and when the
log closes. Not thread-safe: the broker's event loop owns it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from crc32c import crc32c

from chunkraft.broker_agent.storage.checkpoint import write_atomic
from chunkraft.broker_agent.storage.errors import DuplicateSequenceError
from chunkraft.dataplane.record_batch import BatchHeader
from chunkraft.error_codes import ApiException, Errors

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "BatchMetadata",
    "CompletedTxn",
    "ProducerAppend",
    "ProducerEntry",
    "ProducerStateManager",
]

NUM_BATCHES_TO_RETAIN = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_NO_EPOCH = -1
_INT32_MAX = 2**31 - 1
_SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOTS_KEPT = 3
_SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Where a producer's batch went: its sequence range, offsets and max timestamp."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    """What the log knows about one producer id (mutable; copies are staged per append)."""

    producer_id: int
    producer_epoch: int = _NO_EPOCH
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None
    last_timestamp: int = -1
    batches: list[BatchMetadata] = field(default_factory=list)  # oldest first

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record written, -1 when none is known."""
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        """Offset of the producer's last data record, -1 when none is known."""
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerEntry:
        """An independent copy (the batch list is copied, its items are immutable)."""
        return replace(self, batches=list(self.batches))

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The retained batch with exactly this epoch and sequence range, if any."""
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def _update_epoch(self, epoch: int) -> None:
        # A new epoch starts a new sequence space: the retained batches no longer identify retries.
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def _add_batch(self, meta: BatchMetadata) -> None:
        self.batches.append(meta)
        if len(self.batches) > NUM_BATCHES_TO_RETAIN:
            del self.batches[0]
        self.last_timestamp = meta.timestamp


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker at ``last_offset``; ``first_offset`` is its first batch."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerAppend:
    """The producer-state effects of one append, staged until :meth:`commit`.

    ``verify=True`` is a leader append (Kafka's CLIENT / COORDINATOR origin): epochs, sequences,
    coordinator epochs and transaction state are checked and refusals raise ``ApiException``.
    ``verify=False`` is replication, a chunk copy or recovery: the batches are history and are
    applied as they are.
    """

    def __init__(self, manager: ProducerStateManager, *, verify: bool) -> None:
        self._manager = manager
        self._verify = verify
        self._updated: dict[int, ProducerEntry] = {}
        self.completed: list[CompletedTxn] = []

    def _entry(self, producer_id: int) -> ProducerEntry:
        entry = self._updated.get(producer_id)
        if entry is None:
            current = self._manager.entries.get(producer_id)
            entry = current.copy() if current is not None else ProducerEntry(producer_id)
            self._updated[producer_id] = entry
        return entry

    def check_duplicate(self, header: BatchHeader) -> None:
        """Raise DuplicateSequenceError when ``header`` repeats a retained batch of its producer."""
        if header.producer_id < 0 or header.base_sequence < 0:
            return
        current = self._manager.entries.get(header.producer_id)
        if current is None:
            return
        dup = current.find_duplicate(
            header.producer_epoch, header.base_sequence, header.last_sequence
        )
        if dup is not None:
            raise DuplicateSequenceError(
                header.producer_id, dup.first_offset, dup.last_offset, dup.timestamp
            )

    def append_data(self, header: BatchHeader, first_offset: int, last_offset: int) -> None:
        """Stage a data batch of ``header``'s producer written at ``first_offset..last_offset``."""
        pid = header.producer_id
        if pid < 0:
            return
        entry = self._entry(pid)
        epoch = header.producer_epoch
        if self._verify:
            self._check_epoch(entry, epoch)
            if header.base_sequence >= 0:
                self._check_sequence(pid, entry, epoch, header.base_sequence)
            if entry.current_txn_first_offset is not None and not header.is_transactional:
                raise ApiException(
                    Errors.INVALID_TXN_STATE,
                    f"expected a transactional write from producer {pid} at offset {first_offset}",
                )
        entry._update_epoch(epoch)
        entry._add_batch(
            BatchMetadata(
                header.base_sequence,
                header.last_sequence,
                first_offset,
                last_offset,
                header.max_timestamp,
            )
        )
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        offset: int,
        timestamp: int,
    ) -> CompletedTxn:
        """Stage an end-transaction marker at ``offset``; returns the transaction it ends."""
        entry = self._entry(producer_id)
        if self._verify:
            self._check_epoch(entry, producer_epoch)
            if entry.coordinator_epoch > coordinator_epoch:
                raise ApiException(
                    Errors.TRANSACTION_COORDINATOR_FENCED,
                    f"marker for producer {producer_id} has coordinator epoch {coordinator_epoch},"
                    f" older than {entry.coordinator_epoch}",
                )
        entry._update_epoch(producer_epoch)
        first = entry.current_txn_first_offset
        txn = CompletedTxn(producer_id, first if first is not None else offset, offset, not commit)
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        self.completed.append(txn)
        return txn

    def _check_epoch(self, entry: ProducerEntry, epoch: int) -> None:
        if epoch < entry.producer_epoch:
            raise ApiException(
                Errors.INVALID_PRODUCER_EPOCH,
                f"producer {entry.producer_id} epoch {epoch} is older than {entry.producer_epoch}",
            )

    def _check_sequence(self, pid: int, entry: ProducerEntry, epoch: int, first_seq: int) -> None:
        # Kafka's ProducerAppendInfo.checkSequence: a new epoch must start at sequence 0 (unless
        # the producer was unknown); within an epoch the next batch must follow the last one;
        # an unknown producer (state lost to retention) may start anywhere.
        current = self._manager.entries.get(pid)
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != _NO_EPOCH:
                raise ApiException(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {pid} new epoch {epoch} starts at sequence {first_seq}, not 0",
                )
            return
        last_seq = entry.last_sequence
        unknown = current is None or current.producer_epoch == _NO_EPOCH
        if not (unknown or _in_sequence(last_seq, first_seq)):
            raise ApiException(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {pid} epoch {epoch}: sequence {first_seq} does not follow {last_seq}",
            )

    def commit(self) -> list[CompletedTxn]:
        """Apply the staged changes to the manager; returns the transactions completed."""
        manager = self._manager
        for pid, entry in self._updated.items():
            manager.entries[pid] = entry
            if entry.current_txn_first_offset is None:
                manager.ongoing.pop(pid, None)
            else:
                manager.ongoing[pid] = entry.current_txn_first_offset
        manager.unreplicated.extend(self.completed)
        return self.completed


class ProducerStateManager:
    """Producer entries, open transactions and snapshots of one log directory."""

    def __init__(self, directory: Path) -> None:
        """Start empty; :meth:`load_snapshot` fills it from disk."""
        self.directory = directory
        self.entries: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        # Completed transactions whose marker is not yet below the high watermark: they keep the
        # last stable offset at their first offset until the marker is replicated (as Kafka).
        self.unreplicated: list[CompletedTxn] = []

    def begin(self, *, verify: bool) -> ProducerAppend:
        """A staging area for one append."""
        return ProducerAppend(self, verify=verify)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open or not yet replicated transaction."""
        firsts = list(self.ongoing.values())
        firsts += [t.first_offset for t in self.unreplicated]
        return min(firsts) if firsts else None

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is now below the high watermark."""
        if self.unreplicated:
            self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle longer than ``expiration_ms`` without an open transaction."""
        expired = [
            pid
            for pid, e in self.entries.items()
            if pid not in self.ongoing and e.last_timestamp + expiration_ms < now_ms
        ]
        for pid in expired:
            del self.entries[pid]
        return len(expired)

    def clear(self) -> None:
        """Forget everything in memory."""
        self.entries.clear()
        self.ongoing.clear()
        self.unreplicated.clear()

    # ------------------------------------------------------------------ snapshots

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files on disk, ascending."""
        offsets = []
        for p in self.directory.glob("*" + _SNAPSHOT_SUFFIX):
            try:
                offsets.append(int(p.name[: -len(_SNAPSHOT_SUFFIX)]))
            except ValueError:
                continue
        return sorted(offsets)

    def _path(self, offset: int) -> Path:
        return self.directory / f"{offset:020d}{_SNAPSHOT_SUFFIX}"

    def take_snapshot(self, offset: int) -> None:
        """Write the state as of ``offset`` (everything below it applied); keep the newest few."""
        entries = [
            [
                e.producer_id,
                e.producer_epoch,
                e.coordinator_epoch,
                e.current_txn_first_offset,
                e.last_timestamp,
                [
                    [b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp]
                    for b in e.batches
                ],
            ]
            for e in self.entries.values()
        ]
        body = json.dumps({"version": _SNAPSHOT_VERSION, "entries": entries}, separators=(",", ":"))
        write_atomic(self._path(offset), f"{crc32c(body.encode()):08x}\n{body}")
        for old in self.snapshot_offsets()[:-_SNAPSHOTS_KEPT]:
            self._path(old).unlink(missing_ok=True)

    def load_snapshot(self, max_offset: int) -> int | None:
        """Load the newest readable snapshot at or below ``max_offset``; return its offset.

        Snapshots above ``max_offset`` (the log no longer reaches them) and unreadable ones are
        deleted. Returns None, with the state cleared, when no snapshot qualifies.
        """
        self.clear()
        for offset in reversed(self.snapshot_offsets()):
            path = self._path(offset)
            if offset > max_offset:
                path.unlink(missing_ok=True)
                continue
            if self._read(path):
                return offset
            path.unlink(missing_ok=True)
        return None

    def _read(self, path: Path) -> bool:
        try:
            text = path.read_text()
            crc, body = text.split("\n", 1)
            if int(crc, 16) != crc32c(body.encode()):
                return False
            data = json.loads(body)
            if data["version"] != _SNAPSHOT_VERSION:
                return False
            for pid, epoch, coord, txn_first, last_ts, batches in data["entries"]:
                entry = ProducerEntry(
                    pid,
                    epoch,
                    coord,
                    txn_first,
                    last_ts,
                    [BatchMetadata(*b) for b in batches],
                )
                self.entries[pid] = entry
                if txn_first is not None:
                    self.ongoing[pid] = txn_first
        except (OSError, ValueError, KeyError, TypeError):
            self.clear()
            return False
        return True

    def delete_snapshots_above(self, offset: int) -> None:
        """Delete snapshots of offsets above ``offset`` (the log was truncated)."""
        for o in self.snapshot_offsets():
            if o > offset:
                self._path(o).unlink(missing_ok=True)

    def delete_snapshots_below(self, offset: int) -> None:
        """Delete snapshots below ``offset`` except the newest one (the log start moved up)."""
        offsets = self.snapshot_offsets()
        for o in offsets[:-1]:
            if o < offset:
                self._path(o).unlink(missing_ok=True)

    def delete_all_snapshots(self) -> None:
        """Delete every snapshot (the log was emptied)."""
        for o in self.snapshot_offsets():
            self._path(o).unlink(missing_ok=True)
