"""What a campaign run concludes from its history: lost and phantom writes, and availability.

The linearizability checker (:mod:`chunkraft.chaos.linearizability`) is the main verdict. This
module adds the plain counts an operator asks for first, from the *final reads* a campaign
makes after the heal (every topic, from every controller, at the leader's offset, recorded as
processes ``final-<i>``):

- **lost**: an acknowledged (*ok*) write the final state does not show: a created topic that
  is missing or has another id, a cut whose chunk is missing, a partition count below an
  acknowledged createPartitions;
- **phantoms**: what the final state shows that no client may have asked for (no *ok* or
  *info* operation): a topic nobody created, a chunk nobody cut, a partition count nobody
  requested. A write applied twice (a retried request without deduplication) shows here, or
  as a linearizability violation;
- **diverged**: topics whose final reads differ between controllers;
- **recovery**: for each leader cut, how long after the cut the first write invoked after it
  was acknowledged (None when none was before the heal).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkraft.chaos.history import (
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    Operation,
    TopicView,
)

__all__ = ["FINAL_PREFIX", "Tally", "final_views", "recovery_seconds", "tally"]

FINAL_PREFIX = "final-"
INITIAL_PARTITIONS_KEY = "created"


@dataclass
class Tally:
    """Lost, phantom and diverged findings, each as one line for the report."""

    lost: list[str] = field(default_factory=list)
    phantoms: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.phantoms or self.diverged)


def final_views(ops: Iterable[Operation]) -> dict[str, dict[str, TopicView | None]]:
    """topic -> final process -> what that controller's final read saw."""
    views: dict[str, dict[str, TopicView | None]] = {}
    for o in ops:
        if str(o.process).startswith(FINAL_PREFIX) and isinstance(o.op, Describe) \
                and o.outcome == "ok":
            value = o.value if isinstance(o.value, TopicView) else None
            views.setdefault(o.op.topic, {})[str(o.process)] = value
    return views


def tally(ops: Sequence[Operation]) -> Tally:
    """Lost, phantom and diverged findings of a history with final reads (module doc)."""
    result = Tally()
    finals = final_views(ops)
    writes = [o for o in ops if not isinstance(o.op, Describe)]
    for topic, seen in sorted(finals.items()):
        distinct = {repr(v) for v in seen.values()}
        if len(distinct) > 1:
            result.diverged.append(f"{topic}: {sorted(seen.items())}")
    for o in writes:
        if o.outcome != "ok":
            continue
        for process, view in sorted(finals.get(o.op.topic, {}).items()):
            why = _lost(o, view)
            if why:
                result.lost.append(f"{o.describe()}: {why} (read by {process})")
    may: dict[str, list[Operation]] = {}
    for o in writes:
        if o.outcome in ("ok", "info"):
            may.setdefault(o.op.topic, []).append(o)
    for topic, seen in sorted(finals.items()):
        for process, view in sorted(seen.items()):
            for why in _phantoms(topic, view, may.get(topic, [])):
                result.phantoms.append(f"{topic} ({process}): {why}")
    return result


def _lost(o: Operation, view: TopicView | None) -> str | None:
    op = o.op
    if view is None:
        return "topic missing"
    if isinstance(op, CreateTopic):
        if isinstance(o.value, str) and view.topic_id not in (None, o.value):
            return f"topic id {view.topic_id}, the create answered {o.value}"
        return None
    if isinstance(op, CreatePartitions):
        if view.partitions < op.count:
            return f"{view.partitions} partition(s)"
        return None
    if isinstance(op, CutChunk):
        if view.chunks is None or op.partition >= len(view.chunks):
            return f"no partition {op.partition}"
        starts = [s for s, _ in view.chunks[op.partition]]
        if op.start_offset not in starts:
            return f"no chunk at {op.start_offset} (chunks {starts})"
    return None


def _phantoms(topic: str, view: TopicView | None, may: list[Operation]) -> list[str]:
    if view is None:
        return []
    found = []
    creates = [o for o in may if isinstance(o.op, CreateTopic)]
    if not creates:
        return [f"exists (id {view.topic_id}) but no create of it may have happened"]
    counts = {o.op.partitions for o in creates if isinstance(o.op, CreateTopic)}
    counts |= {o.op.count for o in may if isinstance(o.op, CreatePartitions)}
    if view.partitions not in counts:
        found.append(f"{view.partitions} partition(s), never requested ({sorted(counts)})")
    cuts = {(o.op.partition, o.op.start_offset) for o in may if isinstance(o.op, CutChunk)}
    for partition, chunks in enumerate(view.chunks or ()):
        for start, _replicas in chunks:
            if start != 0 and (partition, start) not in cuts:
                found.append(f"partition {partition} has a chunk at {start} nobody cut")
    return found


def recovery_seconds(ops: Sequence[Operation], starts: Iterable[int],
                     heals: Iterable[int | None]) -> list[float | None]:
    """For each fault (start, heal) in ``monotonic_ns``: seconds from its start to the first
    acknowledgement of a write invoked after it, or None if none came before its heal."""
    acked = sorted((o.invoke, o.complete) for o in ops
                   if o.outcome == "ok" and o.complete is not None
                   and not isinstance(o.op, Describe)
                   and not str(o.process).startswith(FINAL_PREFIX))
    found: list[float | None] = []
    for start, heal in zip(starts, heals, strict=True):
        completions = [c for i, c in acked if i >= start and (heal is None or c <= heal)]
        found.append((min(completions) - start) / 1e9 if completions else None)
    return found


def median_or_none(values: Iterable[float | None]) -> float | None:
    """The median of the values that are not None (None if there are none)."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def summarize(tallied: Tally) -> dict[str, Any]:
    """Counts and the first few findings of each kind, for a JSON line."""
    return {"lost": len(tallied.lost), "phantoms": len(tallied.phantoms),
            "diverged": len(tallied.diverged),
            "findings": (tallied.lost + tallied.phantoms + tallied.diverged)[:5]}
