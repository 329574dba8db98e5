"""The records the group coordinator keeps in ``__consumer_offsets``, and range-offset merging.

Encoding (chunkraft's own, documented here; never pickle). Every record is one Kafka v2 record
whose key and value are UTF-8 JSON objects:

- an offset commit: key ``{"v": 1, "type": "offset", "group": g, "topic": t, "partition": p}``,
  value ``{"v": 1, "offset": o, "leader_epoch": e, "metadata": m, "range_offsets":
  [[lo, hi, offset], ...], "commit_timestamp": ms}``; a null value deletes the entry.

A plain OffsetCommit is written as a non-transactional batch (producer id -1); a TxnOffsetCommit
as a transactional batch of the producer's id and epoch, made visible by that producer's next
COMMIT marker on the same partition and dropped by an ABORT marker (Kafka's rule).

Range offsets (the key-range proposal's CommittedRangeOffsets): a commit carrying ranges
updates only those key-hash ranges of the partition; stored ranges it overlaps are cut, the
others are kept, so consumers of complementary ranges commit independently. The partition's
``committed_offset`` is then the smallest offset of the stored ranges (everything below it has
been consumed in every committed range). A commit without ranges replaces the partition's
offsets as a whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RECORD_VERSION",
    "CommittedOffset",
    "OffsetKey",
    "decode_group_key",
    "decode_key",
    "decode_value",
    "encode_group_key",
    "encode_key",
    "encode_value",
    "merge_commit",
    "merge_ranges",
]

RECORD_VERSION = 1

Range = tuple[int, int, int]
"""(lo, hi, offset): the next offset to read for key hashes in [lo, hi]."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    """Which committed offset a record is about: (group, topic, partition)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """A partition's committed position; ``range_offsets`` sorted by ``lo``, disjoint."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    range_offsets: tuple[Range, ...] = ()
    commit_timestamp: int = -1


def encode_key(key: OffsetKey) -> bytes:
    return json.dumps({"v": RECORD_VERSION, "type": "offset", "group": key.group,
                       "topic": key.topic, "partition": key.partition},
                      separators=(",", ":")).encode()


def encode_value(value: CommittedOffset | None) -> bytes | None:
    """The JSON value; None (a tombstone) for None."""
    if value is None:
        return None
    return json.dumps({"v": RECORD_VERSION, "offset": value.offset,
                       "leader_epoch": value.leader_epoch, "metadata": value.metadata,
                       "range_offsets": [list(r) for r in value.range_offsets],
                       "commit_timestamp": value.commit_timestamp},
                      separators=(",", ":")).encode()


def encode_group_key(group: str) -> bytes:
    return json.dumps({"v": RECORD_VERSION, "type": "group", "group": group},
                      separators=(",", ":")).encode()


def decode_group_key(data: bytes | None) -> str | None:
    """The group of a membership record's key; None for any other record."""
    if data is None:
        return None
    try:
        raw: Any = json.loads(data)
        if not isinstance(raw, dict) or raw.get("type") != "group":
            return None
        return str(raw["group"])
    except (ValueError, KeyError, TypeError):
        return None


def decode_key(data: bytes | None) -> OffsetKey | None:
    """The key of an offset record; None for anything else (a record type we do not know
    is skipped, so a newer broker's records do not stop an older one from loading)."""
    if data is None:
        return None
    try:
        raw: Any = json.loads(data)
        if not isinstance(raw, dict) or raw.get("type") != "offset":
            return None
        return OffsetKey(str(raw["group"]), str(raw["topic"]), int(raw["partition"]))
    except (ValueError, KeyError, TypeError):
        return None


def decode_value(data: bytes | None) -> CommittedOffset | None:
    """The committed offset of a value; None for a tombstone or an unreadable value."""
    if data is None:
        return None
    try:
        raw: Any = json.loads(data)
        ranges = tuple((int(lo), int(hi), int(off)) for lo, hi, off in raw.get("range_offsets",
                                                                               ()))
        metadata = raw.get("metadata")
        return CommittedOffset(int(raw["offset"]), int(raw.get("leader_epoch", -1)),
                               None if metadata is None else str(metadata), ranges,
                               int(raw.get("commit_timestamp", -1)))
    except (ValueError, KeyError, TypeError):
        return None


def merge_ranges(stored: tuple[Range, ...], new: tuple[Range, ...]) -> tuple[Range, ...]:
    """``stored`` with each range of ``new`` written over it: the parts of stored ranges that
    ``new`` overlaps are cut away, the rest kept; sorted by ``lo``."""
    kept: list[Range] = list(stored)
    for lo, hi, offset in new:
        cut: list[Range] = []
        for s_lo, s_hi, s_off in kept:
            if s_hi < lo or s_lo > hi:
                cut.append((s_lo, s_hi, s_off))
                continue
            if s_lo < lo:
                cut.append((s_lo, lo - 1, s_off))
            if s_hi > hi:
                cut.append((hi + 1, s_hi, s_off))
        cut.append((lo, hi, offset))
        kept = cut
    return tuple(sorted(kept))


def merge_commit(stored: CommittedOffset | None, new: CommittedOffset) -> CommittedOffset:
    """What a partition's committed position becomes after ``new`` (module docstring)."""
    if not new.range_offsets:
        return new
    previous = stored.range_offsets if stored is not None else ()
    ranges = merge_ranges(previous, new.range_offsets)
    return CommittedOffset(min(r[2] for r in ranges), new.leader_epoch, new.metadata, ranges,
                           new.commit_timestamp)
