"""OffsetsState: the committed offsets of one ``__consumer_offsets`` partition, folded from
its log.

The coordinator's cache is exactly the fold of the partition's batches, in log order, up to
``next_offset``: plain commits apply at once; a transactional batch's commits wait under its
producer id until that producer's control batch (COMMIT: applied in their order, ABORT:
dropped). A new leader builds it by replaying the log from its start; the leader keeps it up
to date by applying whatever the log gained since (its own commits and the transaction
markers the transaction coordinator writes), so nothing but the log decides the state.
Not thread-safe: used on the broker's event loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from chunkraft.broker_agent.coordinator.groups.offset_records import (
    CommittedOffset,
    OffsetKey,
    decode_group_key,
    decode_key,
    decode_value,
    merge_commit,
)
from chunkraft.dataplane.record_batch import (
    BatchHeader,
    ControlType,
    Record,
    control_type,
    decode_records,
    iter_batches,
)

__all__ = ["OffsetsState", "TopicPartition"]

TopicPartition = tuple[str, int]


class OffsetsState:
    """Committed and pending (transactional) offsets of the groups of one partition."""

    def __init__(self) -> None:
        self.next_offset = 0
        self.committed: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # group -> its last membership record's value (JSON; see offset_records)
        self.memberships: dict[str, dict[str, Any]] = {}
        # producer id -> commits of its open transaction, in log order (None: a deletion)
        self.pending: dict[int, list[tuple[OffsetKey, CommittedOffset | None]]] = {}

    # ------------------------------------------------------------------ folding

    def apply_bytes(self, data: bytes | memoryview) -> None:
        """Folds every whole batch of ``data`` (record batches as a fetch returns them);
        batches before ``next_offset`` are skipped (a re-read is harmless)."""
        for header, view in iter_batches(data):
            if header.last_offset < self.next_offset:
                continue
            self.apply_batch(header, bytes(view))

    def apply_batch(self, header: BatchHeader, batch: bytes) -> None:
        """Folds one batch (its header and its whole bytes)."""
        if header.is_control:
            kind = control_type(batch)
            commits = self.pending.pop(header.producer_id, [])
            if kind is ControlType.COMMIT:
                for key, value in commits:
                    self._apply(key, value)
        else:
            records = decode_records(batch)
            if header.is_transactional and header.producer_id >= 0:
                self.pending.setdefault(header.producer_id, []).extend(_entries(records))
            else:
                for key, value in _entries(records):
                    self._apply(key, value)
                for record in records:
                    self._apply_membership(record)
        self.next_offset = header.next_offset

    def _apply(self, key: OffsetKey, value: CommittedOffset | None) -> None:
        group = self.committed.setdefault(key.group, {})
        tp = (key.topic, key.partition)
        if value is None:
            group.pop(tp, None)
            if not group:
                del self.committed[key.group]
            return
        group[tp] = merge_commit(group.get(tp), value)

    def _apply_membership(self, record: Record) -> None:
        group = decode_group_key(record.key)
        if group is None:
            return
        try:
            value: Any = None if record.value is None else json.loads(record.value)
        except ValueError:
            value = None
        if isinstance(value, dict) and value.get("members"):
            self.memberships[group] = value
        else:
            self.memberships.pop(group, None)

    # ------------------------------------------------------------------ reading

    def offsets_of(self, group: str) -> dict[TopicPartition, CommittedOffset]:
        """The committed offsets of ``group`` (a copy)."""
        return dict(self.committed.get(group, {}))

    def has_pending(self, group: str, tps: Iterable[TopicPartition] | None = None) -> bool:
        """Whether an open transaction holds commits of ``group`` (on ``tps`` if given)."""
        wanted = None if tps is None else set(tps)
        return any(key.group == group and (wanted is None or (key.topic, key.partition) in wanted)
                   for commits in self.pending.values() for key, _ in commits)

    def groups(self) -> set[str]:
        return set(self.committed)


def _entries(records: list[Record]) -> list[tuple[OffsetKey, CommittedOffset | None]]:
    out: list[tuple[OffsetKey, CommittedOffset | None]] = []
    for record in records:
        key = decode_key(record.key)
        if key is not None:
            out.append((key, decode_value(record.value)))
    return out
