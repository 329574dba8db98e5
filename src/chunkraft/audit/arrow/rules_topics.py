"""topics.* rules and producer_ids.* rules (small tables, or per-partition aggregates)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array, indices_where
from chunkraft.audit.arrow.found import Found, found, ids
from chunkraft.audit.arrow.read import BrokerStates, Snapshot

__all__ = ["producer_id_rules", "topic_rules"]


def topic_rules(snap: Snapshot) -> list[Found]:
    t, p, c = snap.topics, snap.partitions, snap.chunks
    out: list[Found] = []

    names = t.group_by("name", use_threads=False).aggregate([("name", "count")])
    same_name = array(names["name_count"]).take(
        pc.index_in(t["name"], value_set=array(names["name"])))
    id_counts = t.group_by("topic_id", use_threads=False).aggregate([("topic_id", "count")])
    same_id = array(id_counts["topic_id_count"]).take(
        pc.index_in(t["topic_id"], value_set=array(id_counts["topic_id"])))
    hit = indices_where(pc.or_(pc.greater(same_name, 1), pc.greater(same_id, 1)))
    out.append(found("topics.unique", len(hit),
                     lambda r: (f"topic {r['name']} ({r['topic_id']}) shares its name with "
                                f"{r['same_name'] - 1} and its id with {r['same_id'] - 1} "
                                "other topic(s)"),
                     tcode=t["tcode"].take(hit), name=t["name"].take(hit),
                     same_name=same_name.take(hit), same_id=same_id.take(hit)))

    # per topic of the topics table (an orphan partition is topics.orphans' alone)
    known = p.filter(pc.is_in(p["tcode"], value_set=array(t["tcode"])))
    per_topic = known.group_by("tcode", use_threads=False).aggregate([
        ("partition_id", "count"), ("partition_id", "count_distinct"),
        ("partition_id", "min"), ("partition_id", "max")])
    n = per_topic["partition_id_count"]
    wrong = pc.or_(pc.or_(pc.not_equal(per_topic["partition_id_count_distinct"], n),
                          pc.not_equal(per_topic["partition_id_min"], 0)),
                   pc.not_equal(pc.cast(per_topic["partition_id_max"], pa.int64()),
                                pc.subtract(n, 1)))
    bad = per_topic.filter(wrong)
    out.append(found("topics.partition_ids", bad.num_rows,
                     lambda r: (f"{r['n']} partitions ({r['distinct']} distinct ids) numbered "
                                f"{r['low']}..{r['high']}, not 0..{r['n'] - 1}"),
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
              what=pa.repeat("partition", len(orphan_p))).rows,
        found("topics.orphans", len(orphan_c), str, tcode=c["tcode"].take(orphan_c),
              partition_id=c["partition_id"].take(orphan_c),
              start_offset=c["start_offset"].take(orphan_c),
              what=pa.repeat("chunk", len(orphan_c))).rows]), _orphan_detail))
    return out


def _prior_epochs(snap: Snapshot) -> Found:
    p = snap.partitions
    lists = array(p["prior_partition_epochs"])
    k = pc.fill_null(pc.list_value_length(lists), 0)
    parent = array(pc.list_parent_indices(lists))
    items = array(pc.list_flatten(lists))
    prior_ids = items.field("partition_id")
    epochs = items.field("leader_epoch")
    k_of = k.take(parent)
    bad_item = pc.or_(pc.or_(pc.less(prior_ids, 0), pc.greater_equal(prior_ids, k_of)),
                      pc.less(epochs, 0))
    pairs = pa.table({"parent": parent, "id": prior_ids}).group_by(
        ["parent", "id"], use_threads=False).aggregate([("id", "count")])
    dup_parents = pairs.filter(pc.greater(pairs["id_count"], 1))["parent"]
    bad_parents = pa.concat_arrays([array(parent.filter(bad_item)), array(dup_parents)])
    wrong = pc.and_(pc.greater(k, 0), pc.or_(
        pc.greater(k, p["partition_id"]),
        pc.is_in(pa.array(range(p.num_rows), pa.int64()), value_set=pc.cast(bad_parents,
                                                                             pa.int64()))))
    hit = indices_where(wrong)

    def detail(r: dict[str, Any]) -> str:
        prior = lists[r["row"]].as_py()
        return (f"partition {r['partition_id']} lists prior partitions "
                f"[{ids(e['partition_id'] for e in prior)}] with leader epochs "
                f"[{ids(e['leader_epoch'] for e in prior)}]; expected 0..{len(prior) - 1}, "
                "each once, epochs >= 0")

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


def _orphan_detail(r: dict[str, Any]) -> str:
    if r["what"] == "partition":
        return (f"partition {r['partition_id']} of topic id {r['topic_id']}, which is not a "
                "topic")
    return (f"chunk {r['start_offset']} of partition {r['partition_id']} of topic id "
            f"{r['topic_id']}, which is not a partition")


def _block_detail(r: dict[str, Any]) -> str:
    text = f"block {r['block_start']}..{r['block_end'] - 1}"
    if r["before"] is not None and r["block_start"] < r["before"]:
        text += f" starts before an earlier block's end {r['before']}"
    if r["next_id"] is not None and r["block_end"] > r["next_id"]:
        text += f" reaches past the next producer id {r['next_id']}"
    return text
