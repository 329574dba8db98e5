"""topics.* rules and producer_ids.* rules (small tables, or per-partition aggregates)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array, indices_where
from chunkraft.audit.arrow.found import Found, found
from chunkraft.audit.arrow.read import BrokerStates, Snapshot

__all__ = ["producer_id_rules", "topic_rules"]


def topic_rules(snap: Snapshot) -> list[Found]:
    t, p, c = snap.topics, snap.partitions, snap.chunks
    out: list[Found] = []

    names = t.group_by("name", use_threads=False).aggregate([("name", "count")])
    ids = t.group_by("topic_id", use_threads=False).aggregate([("topic_id", "count")])
    shared = pc.or_(
        pc.is_in(t["name"], value_set=array(names.filter(pc.greater(names["name_count"], 1))[
            "name"])),
        pc.is_in(t["topic_id"], value_set=array(ids.filter(pc.greater(ids["topic_id_count"], 1))[
            "topic_id"])))
    hit = indices_where(shared)
    out.append(found("topics.unique", len(hit),
                     lambda r: f"topic {r['topic']} ({r['topic_id']}) shares its name or id "
                               "with another topic",
                     tcode=t["tcode"].take(hit), topic=t["name"].take(hit)))

    per_topic = p.group_by("tcode", use_threads=False).aggregate([
        ("partition_id", "count"), ("partition_id", "count_distinct"),
        ("partition_id", "min"), ("partition_id", "max")])
    n = per_topic["partition_id_count"]
    wrong = pc.or_(pc.or_(pc.not_equal(per_topic["partition_id_count_distinct"], n),
                          pc.not_equal(per_topic["partition_id_min"], 0)),
                   pc.not_equal(pc.cast(per_topic["partition_id_max"], pa.int64()),
                                pc.subtract(n, 1)))
    bad = per_topic.filter(wrong)
    out.append(found("topics.partition_ids", bad.num_rows,
                     lambda r: (f"{r['n']} partitions with ids {r['low']}..{r['high']}, "
                                f"{r['distinct']} distinct: not 0..{r['n'] - 1}"),
                     tcode=bad["tcode"], n=bad["partition_id_count"],
                     distinct=bad["partition_id_count_distinct"], low=bad["partition_id_min"],
                     high=bad["partition_id_max"]))

    out.append(_prior_epochs(snap))

    topic_codes = array(t["tcode"])
    orphan_p = indices_where(pc.invert(pc.is_in(p["tcode"], value_set=topic_codes)))
    orphan_c = indices_where(pc.is_null(snap.chunk_partition))
    out.append(Found("topics.orphans", pa.concat_tables([
        found("topics.orphans", len(orphan_p), str, tcode=p["tcode"].take(orphan_p),
              partition_id=p["partition_id"].take(orphan_p),
              start_offset=p["start_offset"].take(orphan_p),
              what=pa.repeat("partition of a topic id that is not in topics",
                             len(orphan_p))).rows,
        found("topics.orphans", len(orphan_c), str, tcode=c["tcode"].take(orphan_c),
              partition_id=c["partition_id"].take(orphan_c),
              start_offset=c["start_offset"].take(orphan_c),
              what=pa.repeat("chunk of a partition that is not in partitions",
                             len(orphan_c))).rows]), lambda r: str(r["what"])))
    return out


def _prior_epochs(snap: Snapshot) -> Found:
    p = snap.partitions
    lists = array(p["prior_partition_epochs"])
    k = pc.fill_null(pc.list_value_length(lists), 0)
    parent = array(pc.list_parent_indices(lists))
    items = array(pc.list_flatten(lists))
    ids = items.field("partition_id")
    epochs = items.field("leader_epoch")
    k_of = k.take(parent)
    bad_item = pc.or_(pc.or_(pc.less(ids, 0), pc.greater_equal(ids, k_of)), pc.less(epochs, 0))
    pairs = pa.table({"parent": parent, "id": ids}).group_by(
        ["parent", "id"], use_threads=False).aggregate([("id", "count")])
    dup_parents = pairs.filter(pc.greater(pairs["id_count"], 1))["parent"]
    bad_parents = pa.concat_arrays([array(parent.filter(bad_item)), array(dup_parents)])
    wrong = pc.and_(pc.greater(k, 0), pc.or_(
        pc.greater(k, p["partition_id"]),
        pc.is_in(pa.array(range(p.num_rows), pa.int64()), value_set=pc.cast(bad_parents,
                                                                             pa.int64()))))
    hit = indices_where(wrong)

    def detail(r: dict[str, Any]) -> str:
        prior = [(e["partition_id"], e["leader_epoch"])
                 for e in lists[r["row"]].as_py()]
        return (f"prior partition epochs (partition, leader epoch) {prior}: not partitions "
                f"0..k-1 with k <= {r['partition_id']} and epochs >= 0")

    return found("topics.prior_partition_epochs", len(hit), detail,
                 tcode=p["tcode"].take(hit), partition_id=p["partition_id"].take(hit),
                 start_offset=p["start_offset"].take(hit), row=hit)


def producer_id_rules(snap: Snapshot, prev: Snapshot | None,
                      states: BrokerStates | None) -> list[Found]:
    out: list[Found] = []
    next_id = pc.max(snap.producer_ids["next_producer_id"]).as_py()
    if states is None:
        out.append(found("producer_ids.blocks_overlap", 0, str))
    else:
        blocks = states.blocks.select(["broker_id", "block_start", "block_end"])
        blocks = blocks.take(pc.sort_indices(blocks, sort_keys=[
            ("block_start", "ascending"), ("block_end", "ascending"),
            ("broker_id", "ascending")]))
        ends = array(blocks["block_end"])
        if len(ends):
            before = pa.concat_arrays([pa.array([None], pa.int64()), array(
                pc.cumulative_max(ends.slice(0, len(ends) - 1)))])
        else:
            before = pa.array([], pa.int64())
        overlaps = pc.fill_null(pc.less(blocks["block_start"], before), False)
        past = (pc.greater(blocks["block_end"], next_id) if next_id is not None
                else pa.repeat(False, len(ends)))
        hit = indices_where(pc.or_(overlaps, past))
        out.append(found(
            "producer_ids.blocks_overlap", len(hit), _block_detail,
            broker_id=blocks["broker_id"].take(hit), block_start=blocks["block_start"].take(hit),
            block_end=blocks["block_end"].take(hit), before=before.take(hit),
            next_id=pa.repeat(pa.scalar(next_id, pa.int64()), len(hit))))
    if prev is None:
        out.append(found("producer_ids.grow", 0, str))
    else:
        earlier = pc.max(prev.producer_ids["next_producer_id"]).as_py()
        shrank = next_id is not None and earlier is not None and next_id < earlier
        out.append(found("producer_ids.grow", int(shrank),
                         lambda r: (f"next producer id {next_id}, but {earlier} in the "
                                    "previous snapshot")))
    return out


def _block_detail(r: dict[str, Any]) -> str:
    block = f"block [{r['block_start']}, {r['block_end']})"
    if r["before"] is not None and r["block_start"] < r["before"]:
        return f"{block} overlaps an earlier block ending at {r['before']}"
    return f"{block} reaches past the controller's next producer id {r['next_id']}"
