"""The partitions drawn as timelines: those in the rules' samples first, then the hottest.

Partitions are taken from the samples in catalog order (each sample in its own order), then
from the hottest partitions, up to ``settings.timelines``; each timeline holds the
``settings.timeline_chunks`` newest inactive chunks and the active chunk, in offset order.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import partition_key
from chunkraft.audit.arrow.load_summary import hottest_order
from chunkraft.audit.arrow.read import Snapshot, Topics
from chunkraft.audit.inputs import AuditSettings
from chunkraft.audit.model import RuleResult, Timeline, TimelineChunk

__all__ = ["timelines"]


def timelines(snap: Snapshot, topics: Topics, results: list[RuleResult],
              settings: AuditSettings) -> list[Timeline]:
    limit = settings.timelines
    chosen: dict[tuple[str, int], str] = {}
    for result in results:
        for row in result.sample:
            if len(chosen) >= limit:
                break
            if row.get("topic_id") is not None and row.get("partition_id") is not None:
                chosen.setdefault((row["topic_id"], row["partition_id"]), "violation")
    if len(chosen) < limit:
        for heat in hottest_order(snap, topics, limit, None):
            if len(chosen) >= limit:
                break
            chosen.setdefault((heat.topic_id, heat.partition_id), "hottest")
    drawn = []
    for (topic_id, partition_id), why in chosen.items():  # a loop over a few partitions
        timeline = _timeline(snap, topics, topic_id, partition_id, why,
                             settings.timeline_chunks)
        if timeline is not None:
            drawn.append(timeline)
    return drawn


def _timeline(snap: Snapshot, topics: Topics, topic_id: str, partition_id: int, why: str,
              newest: int) -> Timeline | None:
    code = topics.code_of(pa.array([topic_id], pa.string()))
    if not code[0].is_valid:
        return None
    key = partition_key(code, pa.array([partition_id], pa.int32()))[0]
    c, p = snap.chunks, snap.partitions
    mine = c.filter(pc.fill_null(pc.equal(c["pkey"], key), False))  # sorted by start
    mine = mine.slice(max(0, mine.num_rows - max(newest, 0)))
    chunks = [TimelineChunk(start_offset=r["start_offset"], stop_offset=r["stop_offset"],
                            end_offset=r["end_offset"], start_timestamp=r["start_timestamp"],
                            replicas=list(r["replicas"] or []), active=False)
              for r in mine.select(["start_offset", "stop_offset", "end_offset",
                                    "start_timestamp", "replicas"]).to_pylist()]
    if newest <= 0:
        chunks = []
    for r in p.filter(pc.fill_null(pc.equal(p["pkey"], key), False)).select(
            ["start_offset", "start_timestamp", "replicas"]).to_pylist():
        chunks.append(TimelineChunk(start_offset=r["start_offset"], stop_offset=-1,
                                    end_offset=-1, start_timestamp=r["start_timestamp"],
                                    replicas=list(r["replicas"] or []), active=True))
    if not chunks:
        return None
    chunks.sort(key=lambda ch: (ch.active, ch.start_offset))
    return Timeline(topic=topics.names[code[0].as_py()].as_py() or "", topic_id=topic_id,
                    partition_id=partition_id, chunks=chunks, why=why)
