"""The partitions drawn as timelines: those with violations first, then the hottest."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array
from chunkraft.audit.arrow.found import Found
from chunkraft.audit.arrow.load_summary import hottest_order
from chunkraft.audit.arrow.read import BrokerStates, Snapshot, Topics
from chunkraft.audit.inputs import AuditSettings
from chunkraft.audit.model import Timeline, TimelineChunk

__all__ = ["timelines"]


def _violating(snap: Snapshot, topics: Topics, found: list[Found], limit: int) -> list[int]:
    """Partition rows (of partitions that exist) named by any violation, by (topic, id)."""
    keys: list[pa.Array] = []
    for item in found:
        rows = item.rows.filter(pc.and_(pc.is_valid(item.rows["tcode"]),
                                        pc.is_valid(item.rows["partition_id"])))
        keys.append(array(pc.add(pc.multiply(rows["tcode"], 1 << 32),
                                 pc.cast(rows["partition_id"], pa.int64()))))
    if not keys:
        return []
    unique = pc.unique(pa.concat_arrays(keys))
    at = pc.index_in(unique, value_set=array(snap.partitions["pkey"])).drop_null()
    p = snap.partitions
    table = pa.table({"topic": topics.names.take(p["tcode"].take(at)),
                      "partition_id": p["partition_id"].take(at), "row": at})
    order = pc.sort_indices(table, sort_keys=[("topic", "ascending", "at_start"),
                                              ("partition_id", "ascending")])
    return [int(r) for r in table["row"].take(order.slice(0, limit)).to_pylist()]


def timelines(snap: Snapshot, topics: Topics, found: list[Found], states: BrokerStates | None,
              settings: AuditSettings) -> list[Timeline]:
    limit = settings.timelines
    if limit <= 0:
        return []
    chosen: list[tuple[int, str]] = [(r, "violation")
                                     for r in _violating(snap, topics, found, limit)]
    if len(chosen) < limit:
        taken = {r for r, _ in chosen}
        p = snap.partitions
        keys = array(p["pkey"])
        for heat in hottest_order(snap, topics, limit, None):
            code = topics.code_of(pa.array([heat.topic_id]))[0].as_py()
            row = pc.index_in(pa.array([(code << 32) + heat.partition_id], pa.int64()),
                              value_set=keys)[0].as_py()
            if row not in taken and len(chosen) < limit:
                chosen.append((row, "hottest"))
                taken.add(row)
    del states
    return [_timeline(snap, topics, row, why, settings.timeline_chunks) for row, why in chosen]


def _timeline(snap: Snapshot, topics: Topics, row: int, why: str, newest: int) -> Timeline:
    p = snap.partitions.slice(row, 1).to_pylist()[0]
    c = snap.chunks
    mine = c.filter(pc.equal(c["pkey"], p["pkey"]))  # sorted by start offset already
    mine = mine.slice(max(0, mine.num_rows - newest)) if newest > 0 else mine.slice(0, 0)
    chunks = [TimelineChunk(start_offset=r["start_offset"], stop_offset=r["stop_offset"],
                            end_offset=r["end_offset"], start_timestamp=r["start_timestamp"],
                            replicas=list(r["replicas"]), active=False)
              for r in mine.select(["start_offset", "stop_offset", "end_offset",
                                    "start_timestamp", "replicas"]).to_pylist()]
    chunks.append(TimelineChunk(start_offset=p["start_offset"], stop_offset=-1, end_offset=-1,
                                start_timestamp=p["start_timestamp"],
                                replicas=list(p["replicas"]), active=True))
    return Timeline(topic=topics.names[p["tcode"]].as_py() or "", topic_id=p["topic_id"],
                    partition_id=p["partition_id"], chunks=chunks, why=why)
