"""Two snapshots compared: topics, partitions and chunks created, removed or moved."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import Slots, array, indices_where
from chunkraft.audit.arrow.read import Snapshot, Topics
from chunkraft.audit.arrow.rules_replicas import chunk_match
from chunkraft.audit.model import DiffSummary, ExportSummary

__all__ = ["diff"]


def _names(snap: Snapshot, prev: Snapshot, topics: Topics) -> pa.Array:
    """Per topic code: the smallest name either snapshot's topics give it (null if none)."""
    t = pa.concat_tables([snap.topics.select(["tcode", "name"]),
                          prev.topics.select(["tcode", "name"])])
    if t.num_rows == 0:
        return pa.nulls(len(topics.ids), pa.string())
    grouped = t.group_by("tcode", use_threads=False).aggregate([("name", "min")])
    at = pc.index_in(pa.array(range(len(topics.ids)), pa.int64()),
                     value_set=array(grouped["tcode"]))
    return array(grouped["name_min"]).take(at)


def _moved(cur: Slots, before: Slots) -> pa.Array:
    """Per row: the sorted replica lists differ."""
    same = pc.equal(cur.lengths, before.lengths)
    a, b = cur.sorted_rows(), before.sorted_rows()
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else pa.nulls(cur.rows, pa.int32())
        y = b[i] if i < len(b) else pa.nulls(cur.rows, pa.int32())
        equal = pc.or_(pc.and_(pc.is_null(x), pc.is_null(y)), pc.fill_null(pc.equal(x, y), False))
        same = pc.and_(same, equal)
    return pc.invert(same)


def _sorted(lists: Any) -> pa.Array:
    """Each list's elements in ascending order (as Spark's array_sort): few rows, a sample."""
    return pa.array([None if v is None else sorted(v) for v in lists.to_pylist()],
                    pa.list_(pa.int32()))


def _sample(rows: pa.Table, size: int) -> list[dict[str, Any]]:
    keys = [("topic", "ascending", "at_start"), ("topic_id", "ascending", "at_start"),
            ("partition_id", "ascending", "at_start"), ("start_offset", "ascending", "at_start")]
    order = pc.sort_indices(rows, sort_keys=keys)
    columns = ("topic", "topic_id", "partition_id", "start_offset", "replicas_before",
               "replicas_after")
    return [{c: r.get(c) for c in columns} for r in rows.take(order.slice(0, size)).to_pylist()]


def diff(snap: Snapshot, prev: Snapshot, topics: Topics, previous: ExportSummary,
         sample_size: int) -> DiffSummary:
    counts: dict[str, int] = {}
    samples: dict[str, list[dict[str, Any]]] = {}
    names_now = names_before = _names(snap, prev, topics)
    none_list = pa.list_(pa.int32())

    def record(kind: str, side: Snapshot, names: pa.Array, rows: pa.Array,
               before: Any = None, after: Any = None, chunks: bool = False,
               topic_level: bool = False) -> None:
        t = side.topics if topic_level else (side.chunks if chunks else side.partitions)
        n = len(rows)
        counts[kind] = n
        if n == 0:
            samples[kind] = []
            return
        tcode = t["tcode"].take(rows)
        data = {
            "topic": names.take(tcode),
            "topic_id": topics.ids.take(tcode),
            "partition_id": (pa.nulls(n, pa.int32()) if topic_level
                             else t["partition_id"].take(rows)),
            "start_offset": t["start_offset"].take(rows) if chunks else pa.nulls(n, pa.int64()),
            "replicas_before": _sorted(before) if before is not None else pa.nulls(n, none_list),
            "replicas_after": _sorted(after) if after is not None else pa.nulls(n, none_list),
        }
        samples[kind] = _sample(pa.table(data), sample_size)

    # topics by id
    t_now, t_before = snap.topics, prev.topics
    record("topics_created", snap, names_now, indices_where(pc.invert(
        pc.is_in(t_now["tcode"], value_set=array(t_before["tcode"])))), topic_level=True)
    record("topics_removed", prev, names_before, indices_where(pc.invert(
        pc.is_in(t_before["tcode"], value_set=array(t_now["tcode"])))), topic_level=True)

    # partitions by (topic id, partition id)
    p_now, p_before = snap.partitions, prev.partitions
    created = indices_where(pc.invert(pc.is_in(p_now["pkey"], value_set=array(p_before["pkey"]))))
    record("partitions_created", snap, names_now, created,
           after=p_now["replicas"].take(created))
    removed = indices_where(pc.invert(pc.is_in(p_before["pkey"], value_set=array(p_now["pkey"]))))
    record("partitions_removed", prev, names_before, removed,
           before=p_before["replicas"].take(removed))
    both = indices_where(pc.is_in(p_now["pkey"], value_set=array(p_before["pkey"])))
    was = pc.index_in(p_now["pkey"].take(both), value_set=array(p_before["pkey"]))
    moved = indices_where(_moved(snap.p_replicas.take(both), prev.p_replicas.take(was)))
    record("partitions_moved", snap, names_now, both.take(moved),
           before=p_before["replicas"].take(was.take(moved)),
           after=p_now["replicas"].take(both.take(moved)))

    # chunks by (topic id, partition id, start offset)
    cur, old = chunk_match(snap, prev)
    c_now, c_before = snap.chunks, prev.chunks
    in_both_now = pc.is_in(pa.array(range(c_now.num_rows), pa.int64()), value_set=cur)
    in_both_before = pc.is_in(pa.array(range(c_before.num_rows), pa.int64()), value_set=old)
    created = indices_where(pc.invert(in_both_now))
    record("chunks_created", snap, names_now, created, after=c_now["replicas"].take(created),
           chunks=True)
    removed = indices_where(pc.invert(in_both_before))
    record("chunks_removed", prev, names_before, removed,
           before=c_before["replicas"].take(removed), chunks=True)
    moved = indices_where(_moved(snap.c_replicas.take(cur), prev.c_replicas.take(old)))
    record("chunks_moved", snap, names_now, cur.take(moved),
           before=c_before["replicas"].take(old.take(moved)),
           after=c_now["replicas"].take(cur.take(moved)), chunks=True)
    order = ("topics_created", "topics_removed", "partitions_created", "partitions_removed",
             "partitions_moved", "chunks_created", "chunks_removed", "chunks_moved")
    return DiffSummary(previous=previous, counts={k: counts[k] for k in order},
                       samples={k: samples[k] for k in order})
