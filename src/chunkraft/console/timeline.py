"""The chunk timeline of one partition: offsets along x, brokers as lanes, chunks as bars.

Built from the image's records alone (the partition's ``PartitionRecord``, which is its active
chunk, and its inactive ``ChunkRecord``\\ s), so it is what the metadata log says, not what a
broker reports. Each chunk is a bar on the lane of every broker in its ``replicas`` (a move in
progress lists both the brokers being added and those being removed; the bars say which).

Geometry, with inclusive offsets (DESIGN.md section 3): the axis runs from the first chunk's
start to one past the last known offset (the largest ``end_offset``, or the active chunk's
start), plus an open stretch for the active chunk, whose end is not in the metadata
(:data:`ACTIVE_SHARE` of the axis, at least one offset). An inactive bar covers ``start_offset``
to ``end_offset`` + 1; ``x_stop`` marks ``stop_offset`` + 1, so the part a transactional cut left
beyond the stop offset (``end_offset`` > ``stop_offset``: the next chunk starts at the LSO while
the old one holds up to the HW) can be drawn apart. Bars that overlap on one lane (that same
transactional overlap) go on separate rows of the lane, first fit by start offset.

Pure functions of immutable records; the result is immutable and JSON-ready (:meth:`to_json`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chunkraft.records import ChunkRecord, PartitionRecord, RegisterBrokerRecord

__all__ = ["ACTIVE_SHARE", "BAR_FIELDS", "Bar", "Lane", "Timeline", "partition_timeline"]

ACTIVE_SHARE = 0.15
"""The share of the axis the active chunk's open end takes beyond the last known offset."""


@dataclass(frozen=True, slots=True)
class Bar:
    """One chunk on one broker's lane. ``x0`` / ``x_stop`` / ``x1`` are fractions of the axis
    (0 to 1); ``row`` is the bar's row within its lane. Offsets are the chunk's (``stop_offset``
    and ``end_offset`` are -1 for the active chunk)."""

    broker_id: int
    row: int
    start_offset: int
    stop_offset: int
    end_offset: int
    start_timestamp: int
    epoch: int
    x0: float
    x_stop: float
    x1: float
    active: bool
    leader: bool
    in_sync: bool
    adding: bool
    removing: bool

    def row_json(self) -> list[Any]:
        """The bar as a row of :data:`BAR_FIELDS`."""
        return [self.broker_id, self.row, self.start_offset, self.stop_offset, self.end_offset,
                self.start_timestamp, self.epoch, round(self.x0, 6), round(self.x_stop, 6),
                round(self.x1, 6), self.active, self.leader, self.in_sync, self.adding,
                self.removing]


BAR_FIELDS = Bar.__slots__
"""The fields of a bar, in the order of :meth:`Bar.row_json`."""


@dataclass(frozen=True, slots=True)
class Lane:
    """One broker's lane: how many rows its bars need, and the broker's registered state
    (``registered`` False: a replica names a broker the cluster does not know)."""

    broker_id: int
    rows: int
    registered: bool
    fenced: bool

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Timeline:
    """A partition's timeline: the axis (``axis_start`` to ``axis_end``, offsets, exclusive
    end), its lanes by broker id, its bars, and counts a page shows beside it."""

    topic: str
    partition_id: int
    axis_start: int
    known_end: int
    axis_end: int
    lanes: tuple[Lane, ...]
    bars: tuple[Bar, ...]
    chunks: int
    moves_in_progress: int
    leader: int

    def to_json(self) -> dict[str, Any]:
        """JSON-ready: bars as rows of :data:`BAR_FIELDS` (a long partition has thousands of
        them; naming every field of every bar made its answer twice as large), fractions
        rounded to 6 digits (a millionth of the axis is far below a pixel)."""
        return {"topic": self.topic, "partition_id": self.partition_id,
                "axis_start": self.axis_start, "known_end": self.known_end,
                "axis_end": self.axis_end, "chunks": self.chunks,
                "moves_in_progress": self.moves_in_progress, "leader": self.leader,
                "lanes": [lane.to_json() for lane in self.lanes],
                "bar_fields": list(BAR_FIELDS),
                "bars": [bar.row_json() for bar in self.bars]}


def partition_timeline(topic: str, partition: PartitionRecord,
                       inactive: Iterable[ChunkRecord],
                       brokers: Mapping[int, RegisterBrokerRecord]) -> Timeline:
    """The timeline of ``partition`` (its active chunk) and its ``inactive`` chunks (sorted by
    start offset, as the image keeps them); ``brokers`` are the registered brokers by id."""
    chunks = list(inactive)
    axis_start = min([c.start_offset for c in chunks] + [partition.start_offset])
    known_end = max([c.end_offset + 1 for c in chunks]
                    + [c.stop_offset + 1 for c in chunks]
                    + [partition.start_offset])
    span_known = known_end - axis_start
    open_part = max(1, round(span_known * ACTIVE_SHARE / (1 - ACTIVE_SHARE)))
    axis_end = max(known_end, partition.start_offset) + open_part
    width = axis_end - axis_start

    def x(offset: int) -> float:
        return min(max((offset - axis_start) / width, 0.0), 1.0)

    # (broker, start, end for row fitting, order, chunk or None for the active one): rows are
    # fitted on these tuples first, so each Bar is built once, with its row.
    pending: list[tuple[int, int, int, int, ChunkRecord | None]] = []
    moves = 0
    for order, chunk in enumerate(chunks):
        if chunk.adding_replicas or chunk.removing_replicas:
            moves += 1
        end = max(chunk.end_offset, chunk.stop_offset) + 1
        for broker_id in chunk.replicas:
            pending.append((broker_id, chunk.start_offset, end, order, chunk))
    if partition.adding_replicas or partition.removing_replicas:
        moves += 1
    for broker_id in partition.replicas:
        pending.append((broker_id, partition.start_offset, axis_end, len(chunks), None))
    pending.sort(key=lambda p: (p[0], p[1], p[3]))
    row_ends: dict[int, list[int]] = {}
    bars: list[Bar] = []
    for broker_id, start, end, _, held in pending:
        ends = row_ends.setdefault(broker_id, [])
        for row, row_end in enumerate(ends):
            if row_end <= start:
                ends[row] = end
                break
        else:
            row = len(ends)
            ends.append(end)
        if held is None:
            bars.append(Bar(
                broker_id=broker_id, row=row, start_offset=start, stop_offset=-1,
                end_offset=-1, start_timestamp=partition.start_timestamp,
                epoch=partition.leader_epoch, x0=x(start), x_stop=1.0, x1=1.0, active=True,
                leader=broker_id == partition.leader, in_sync=broker_id in partition.isr,
                adding=broker_id in partition.adding_replicas,
                removing=broker_id in partition.removing_replicas))
        else:
            bars.append(Bar(
                broker_id=broker_id, row=row, start_offset=start,
                stop_offset=held.stop_offset, end_offset=held.end_offset,
                start_timestamp=held.start_timestamp, epoch=held.epoch, x0=x(start),
                x_stop=x(held.stop_offset + 1), x1=x(end), active=False, leader=False,
                in_sync=broker_id in held.isr, adding=broker_id in held.adding_replicas,
                removing=broker_id in held.removing_replicas))
    lanes = tuple(
        Lane(broker_id=b, rows=len(ends), registered=b in brokers,
             fenced=bool(brokers[b].fenced) if b in brokers else False)
        for b, ends in sorted(row_ends.items()))
    return Timeline(topic=topic, partition_id=partition.partition_id, axis_start=axis_start,
                    known_end=known_end, axis_end=axis_end, lanes=lanes, bars=tuple(bars),
                    chunks=len(chunks) + 1, moves_in_progress=moves, leader=partition.leader)
