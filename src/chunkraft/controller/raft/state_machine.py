"""The replicated state machine: committed Raft entries in, a new immutable image out.

Everything here is deterministic and free of pysyncobj, so every node that applies the same
entries in the same order reaches the same image, idempotency table and log tail, and the whole
thing is unit-testable without Raft.
"""

from __future__ import annotations

import bisect
import enum
import logging
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.controller.raft.entry import (
    ANY_OFFSET,
    IDEMPOTENCY_KEY_SIZE,
    EntryCorruptError,
    ProposedBatch,
    decode_entry,
)
from chunkraft.errors import InvariantError, RecordError
from chunkraft.records import decode_records

__all__ = [
    "NO_KEY",
    "BatchOutcome",
    "BatchStatus",
    "CommittedBatch",
    "MetadataStateMachine",
    "TailRead",
]

logger = logging.getLogger(__name__)

NO_KEY = bytes(IDEMPOTENCY_KEY_SIZE)
"""The idempotency key of a batch that is never retried (the leader's barrier)."""

DEFAULT_MAX_RETAINED_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_IDEMPOTENCY_KEYS = 20_000


class BatchStatus(enum.Enum):
    """What became of one proposed batch when its entry was applied."""

    COMMITTED = "committed"
    """Its records took offsets ``base_offset`` .. ``base_offset + count - 1``."""
    DUPLICATE = "duplicate"
    """Its idempotency key had committed before: nothing written, the first outcome returned."""
    OFFSET_MISMATCH = "offset_mismatch"
    """Another write took its expected offset first: nothing written, validate again."""
    INVALID = "invalid"
    """Its records do not decode or do not replay onto the image: nothing written."""
    CORRUPT = "corrupt"
    """The entry failed its CRC, or an earlier one did: this node stopped applying entries."""


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """The outcome of one batch; ``response`` is the operation's JSON response when committed."""

    status: BatchStatus
    base_offset: int = -1
    count: int = 0
    response: bytes = b""
    message: str = ""

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.count - 1


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """Records committed together, as the metadata stream serves them."""

    base_offset: int
    epoch: int
    append_time_ms: int
    records: tuple[bytes, ...]

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)

    @property
    def size(self) -> int:
        return sum(map(len, self.records))


@dataclass(frozen=True, slots=True)
class TailRead:
    """Committed batches after an offset, or the news that a snapshot is needed first."""

    batches: tuple[CommittedBatch, ...]
    snapshot_needed: bool
    high_watermark: int
    """The offset after the last committed record (what the reader will have when caught up)."""


class MetadataStateMachine:
    """Applies committed entries: each batch is checked and replayed all or nothing.

    Contract: :meth:`apply_entry` never raises (an exception inside pysyncobj's apply would wedge
    the node); it returns one :class:`BatchOutcome` per batch. A batch commits only if its
    idempotency key is new, its ``expected_offset`` is where the log ends, and its records decode
    and replay; otherwise nothing of it is written. A CRC failure stops this node from applying
    anything more (:attr:`failure` says why): replaying past a corrupt entry would diverge silently.

    Thread-safety: one writer (the Raft tick thread) calls :meth:`apply_entry` and
    :meth:`restore`; readers in other threads read :attr:`image` and call :meth:`read_after`
    without a lock, because both only ever see whole objects swapped by one reference assignment.
    """

    def __init__(
        self,
        *,
        max_retained_bytes: int = DEFAULT_MAX_RETAINED_BYTES,
        max_idempotency_keys: int = DEFAULT_MAX_IDEMPOTENCY_KEYS,
    ) -> None:
        self.image: MetadataImage = MetadataImage.EMPTY
        self.failure: str | None = None
        self._max_retained_bytes = max_retained_bytes
        self._max_keys = max_idempotency_keys
        self._keys: OrderedDict[bytes, BatchOutcome] = OrderedDict()
        # key -> (base image, image after the batch) that the leader already built while
        # validating; applying its own batch onto that same base object can take the result
        # instead of decoding and replaying the records again.
        self._staged: dict[bytes, tuple[MetadataImage, MetadataImage, tuple[bytes, ...]]] = {}
        # (batches, their base offsets): one reference, so a reader never pairs two generations.
        self._tail: tuple[list[CommittedBatch], list[int]] = ([], [])
        self._tail_bytes = 0
        self._tail_start = 0
        self.entries_applied = 0

    # ------------------------------------------------------------------ writer (tick thread)

    def apply_entry(self, payload: bytes) -> tuple[BatchOutcome, ...]:
        """Applies one committed entry; see the class contract."""
        self.entries_applied += 1
        if self.failure is not None:
            return (BatchOutcome(BatchStatus.CORRUPT, message=self.failure),)
        try:
            batches = decode_entry(payload)
        except EntryCorruptError as error:
            self.failure = (
                f"metadata log entry {self.entries_applied} after offset {self.image.offset} "
                f"is corrupt ({error}); this node stopped applying entries"
            )
            logger.critical("%s", self.failure)
            return (BatchOutcome(BatchStatus.CORRUPT, message=self.failure),)
        outcomes = []
        for batch in batches:
            try:
                outcomes.append(self._apply_batch(batch))
            except Exception as error:  # a bug, not an input: still never raise into pysyncobj
                logger.exception("unexpected error applying a batch; nothing of it was written")
                outcomes.append(BatchOutcome(BatchStatus.INVALID, message=repr(error)))
        return tuple(outcomes)

    def _apply_batch(self, batch: ProposedBatch) -> BatchOutcome:
        key = batch.idempotency_key
        if key != NO_KEY:
            previous = self._keys.get(key)
            if previous is not None:
                return BatchOutcome(
                    BatchStatus.DUPLICATE,
                    previous.base_offset,
                    previous.count,
                    previous.response,
                    "already committed",
                )
        base = self.image.offset + 1
        if batch.expected_offset not in (ANY_OFFSET, base):
            return BatchOutcome(
                BatchStatus.OFFSET_MISMATCH,
                message=f"expected offset {batch.expected_offset}, the log is at {base}",
            )
        if not batch.records:
            return BatchOutcome(BatchStatus.INVALID, message="a batch needs at least one record")
        staged = self._staged.pop(key, None) if self._staged else None
        last = base + len(batch.records) - 1
        if (staged is not None and staged[0] is self.image
                and staged[1].provenance == MetadataProvenance(last, batch.epoch)
                and staged[2] == batch.records):
            image = staged[1]  # the leader replayed exactly these records onto this very image
        else:
            try:
                records = decode_records(batch.records)
                delta = MetadataDelta(self.image)
                delta.replay_all(records)
                image = delta.apply(MetadataProvenance(last, batch.epoch))
            except (RecordError, InvariantError) as error:
                return BatchOutcome(BatchStatus.INVALID, message=str(error))
        # The tail before the image: a reader that sees the new high watermark finds its records.
        self._retain(CommittedBatch(base, batch.epoch, batch.append_time_ms, batch.records))
        self.image = image
        outcome = BatchOutcome(BatchStatus.COMMITTED, base, len(batch.records), batch.response)
        if key != NO_KEY:
            self._remember(key, outcome)
        return outcome

    def _remember(self, key: bytes, outcome: BatchOutcome) -> None:
        self._keys[key] = outcome
        while len(self._keys) > self._max_keys:
            self._keys.popitem(last=False)

    def _retain(self, batch: CommittedBatch) -> None:
        tail, offsets = self._tail
        offsets.append(batch.base_offset)  # offsets first: a reader bisects them, then indexes tail
        tail.append(batch)
        self._tail_bytes += batch.size
        if self._tail_bytes > self._max_retained_bytes and len(tail) > 1:
            drop = 0
            while self._tail_bytes > self._max_retained_bytes // 2 and drop < len(tail) - 1:
                self._tail_bytes -= tail[drop].size
                drop += 1
            # New lists, not slicing in place: readers holding the old ones stay consistent.
            self._tail = (tail[drop:], offsets[drop:])
            self._tail_start = tail[drop].base_offset

    def offer_staged(self, key: bytes, base: MetadataImage, image: MetadataImage,
                     records: tuple[bytes, ...]) -> None:
        """The leader built ``image`` from ``base`` by replaying the record objects it encoded
        as ``records`` for batch ``key``.

        Used only if a batch with that key and exactly those record bytes (a retry of the same
        key may carry other records) applies onto ``base`` itself (the same object) at the same
        provenance; the codec round-trips records exactly (a property test), so the image
        equals what replaying the bytes gives.
        Called from the leader's loop thread; the Raft thread pops (dict operations are atomic).
        """
        if len(self._staged) > 10_000:  # batches that never applied (a lost leadership)
            self._staged.clear()
        self._staged[key] = (base, image, records)

    def restore(
        self, image: MetadataImage, keys: Iterable[tuple[bytes, BatchOutcome]] = ()
    ) -> None:
        """Replaces the whole state with a snapshot's (the tail restarts after the image)."""
        self.image = image
        self.failure = None
        self._keys = OrderedDict(keys)
        self._tail = ([], [])
        self._tail_bytes = 0
        self._tail_start = image.offset + 1

    # ------------------------------------------------------------------ readers (any thread)

    def idempotency_keys(self) -> list[tuple[bytes, BatchOutcome]]:
        """The remembered keys, oldest first (what a snapshot stores)."""
        return list(self._keys.items())

    def outcome_of(self, key: bytes) -> BatchOutcome | None:
        """The committed outcome of ``key``, if it is remembered."""
        return self._keys.get(key)

    @property
    def tail_start_offset(self) -> int:
        """The first offset the in-memory tail still holds; older ones need a snapshot."""
        return self._tail_start

    def read_after(self, offset: int, *, max_records: int, max_bytes: int) -> TailRead:
        """Committed batches holding records after ``offset`` (exclusive).

        At least one whole batch is returned when one exists, then whole batches while both
        bounds hold. A reader that is behind the retained tail is told to load a snapshot.
        """
        image = self.image
        tail, offsets = self._tail
        high_watermark = image.offset + 1
        wanted = offset + 1
        if wanted >= high_watermark:
            return TailRead((), False, high_watermark)
        start = self._tail_start
        if wanted < start or not tail or tail[0].base_offset > wanted:
            return TailRead((), True, high_watermark)
        index = bisect.bisect_right(offsets, wanted) - 1
        batches: list[CommittedBatch] = []
        records = size = 0
        count = min(len(tail), len(offsets))
        while index < count and tail[index].base_offset < high_watermark:
            batch = tail[index]
            if batch.base_offset < wanted:  # the reader has the first part of this batch
                skip = wanted - batch.base_offset
                batch = CommittedBatch(
                    wanted, batch.epoch, batch.append_time_ms, batch.records[skip:]
                )
            if batches and (records + len(batch.records) > max_records
                            or size + batch.size > max_bytes):
                break
            batches.append(batch)
            records += len(batch.records)
            size += batch.size
            index += 1
        return TailRead(tuple(batches), False, high_watermark)
