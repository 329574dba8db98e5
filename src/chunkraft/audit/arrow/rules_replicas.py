"""replicas.* rules over partitions (active chunks) and inactive chunks."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import Slots, array, indices_where, shifted
from chunkraft.audit.arrow.found import Found, found, ids
from chunkraft.audit.arrow.read import Snapshot
from chunkraft.audit.inputs import AuditSettings

__all__ = ["chunk_match", "replica_rules", "replication_factors", "topic_replication_factor"]


def replication_factors(replicas: Slots, removing: Slots) -> pa.Array:
    return pc.subtract(pc.cast(replicas.lengths, pa.int64()), pc.cast(removing.lengths, pa.int64()))


def topic_replication_factor(snap: Snapshot, rf: pa.Array) -> pa.Array:
    """Per partition row: its topic's RF, the most common partition RF (the larger on a tie)."""
    p = snap.partitions
    counts = pa.table({"tcode": p["tcode"], "rf": rf}).group_by(
        ["tcode", "rf"], use_threads=False).aggregate([("rf", "count")])
    counts = counts.take(pc.sort_indices(counts, sort_keys=[
        ("tcode", "ascending"), ("rf_count", "descending"), ("rf", "descending")]))
    codes = array(counts["tcode"])
    best = counts
    if len(codes):
        earlier, later = shifted(codes)
        best = counts.filter(pa.concat_arrays([pa.array([True]),
                                               array(pc.not_equal(earlier, later))]))
    at = pc.index_in(p["tcode"], value_set=array(best["tcode"]))
    return array(best["rf"]).take(at)


def chunk_match(snap: Snapshot, prev: Snapshot) -> tuple[pa.Array, pa.Array]:
    """(current chunk rows, previous chunk rows) of the chunks in both snapshots (same key)."""
    left = pa.table({"pkey": snap.chunks["pkey"], "start_offset": snap.chunks["start_offset"],
                     "cur": pa.array(range(snap.chunks.num_rows), pa.int64())})
    right = pa.table({"pkey": prev.chunks["pkey"], "start_offset": prev.chunks["start_offset"],
                      "prev": pa.array(range(prev.chunks.num_rows), pa.int64())})
    both = left.join(right, ["pkey", "start_offset"], join_type="inner", use_threads=False)
    return array(both["cur"]), array(both["prev"])


def replica_rules(snap: Snapshot, prev: Snapshot | None, settings: AuditSettings) -> list[Found]:
    p, c = snap.partitions, snap.chunks
    out: list[Found] = []

    def both(rule: str, p_mask: Any, c_mask: Any, detail: Any,
             p_extra: dict[str, Any] | None = None,
             c_extra: dict[str, Any] | None = None) -> Found:
        hit_p = indices_where(p_mask)
        hit_c = indices_where(c_mask) if c_mask is not None else pa.array([], pa.int64())
        tables = [found(rule, len(hit_p), detail, tcode=p["tcode"].take(hit_p),
                        partition_id=p["partition_id"].take(hit_p),
                        start_offset=p["start_offset"].take(hit_p), kind=pa.repeat(
                            "partition", len(hit_p)), row=hit_p,
                        **{k: v.take(hit_p) for k, v in (p_extra or {}).items()}).rows,
                  found(rule, len(hit_c), detail, tcode=c["tcode"].take(hit_c),
                        partition_id=c["partition_id"].take(hit_c),
                        start_offset=c["start_offset"].take(hit_c), kind=pa.repeat(
                            "chunk", len(hit_c)), row=hit_c,
                        **{k: v.take(hit_c) for k, v in (c_extra or {}).items()}).rows]
        return Found(rule, pa.concat_tables(tables, promote_options="default"), detail)

    def lists(r: dict[str, Any], name: str) -> str:
        source = p if r["kind"] == "partition" else c
        return ids(source[name][r["row"]].as_py())

    out.append(both("replicas.distinct", snap.p_replicas.has_duplicates(),
                    snap.c_replicas.has_duplicates(),
                    lambda r: (f"{r['kind']} {r['start_offset']} lists a broker twice: "
                               f"replicas [{lists(r, 'replicas')}]")))

    p_rf = replication_factors(snap.p_replicas, snap.p_removing)
    c_rf = replication_factors(snap.c_replicas, snap.c_removing)
    topic_rf = topic_replication_factor(snap, p_rf)
    c_expected = p_rf.take(snap.chunk_partition)

    def count_detail(r: dict[str, Any]) -> str:
        if r["kind"] == "partition":
            return (f"partition has {r['rf']} replicas (less removing), the topic's "
                    f"replication factor is {r['expected']}")
        return f"chunk has {r['rf']} replicas (less removing), its partition {r['expected']}"

    out.append(both(
        "replicas.count", pc.not_equal(p_rf, topic_rf), pc.not_equal(c_rf, c_expected),
        count_detail, {"rf": p_rf, "expected": pc.cast(topic_rf, pa.int64())},
        {"rf": c_rf, "expected": c_expected}))

    out.append(both(
        "replicas.isr_subset",
        pc.or_(snap.p_isr.empty(), pc.invert(snap.p_isr.all_in(snap.p_replicas))),
        pc.or_(snap.c_isr.empty(), pc.invert(snap.c_isr.all_in(snap.c_replicas))),
        lambda r: (f"{r['kind']} has ISR [{lists(r, 'isr')}] but replicas "
                   f"[{lists(r, 'replicas')}]")))

    def misfit(isr: Slots, adding: Slots, removing: Slots, replicas: Slots) -> pa.Array:
        out = pc.or_(isr.has_duplicates(), pc.or_(adding.has_duplicates(),
                                                   removing.has_duplicates()))
        return pc.or_(out, pc.invert(pc.and_(adding.all_in(replicas),
                                             removing.all_in(replicas))))

    out.append(both(
        "replicas.lists",
        misfit(snap.p_isr, snap.p_adding, snap.p_removing, snap.p_replicas),
        misfit(snap.c_isr, snap.c_adding, snap.c_removing, snap.c_replicas),
        lambda r: (f"{r['kind']} {r['start_offset']} has ISR [{lists(r, 'isr')}], adding "
                   f"[{lists(r, 'adding_replicas')}], removing "
                   f"[{lists(r, 'removing_replicas')}] for replicas "
                   f"[{lists(r, 'replicas')}]")))

    leader = p["leader"]
    out.append(both(
        "replicas.leader_in_isr",
        pc.and_(pc.greater_equal(leader, 0), pc.invert(snap.p_isr.contains(leader))), None,
        lambda r: f"leader {r['broker_id']} is not in the ISR [{lists(r, 'isr')}]",
        {"broker_id": leader}))
    out.append(both("replicas.no_leader", pc.less(leader, 0), None,
                    lambda r: f"no leader ({r['leader']}): the partition is offline",
                    {"leader": leader}))
    out.append(_registered(snap))
    out.append(_fenced(snap, prev, settings))
    out.append(_stuck(snap, prev, settings))
    return out


def _registered(snap: Snapshot) -> Found:
    registered = array(snap.brokers["broker_id"])
    p, c = snap.partitions, snap.chunks
    tables = []
    for kind, table, lists in (("partition", p, (snap.p_replicas, snap.p_isr)),
                               ("chunk", c, (snap.c_replicas, snap.c_isr))):
        rows: list[pa.Array] = []
        brokers: list[pa.Array] = []
        for slots in lists:
            r, b = slots.flatten()
            rows.append(pc.cast(r, pa.int64()))
            brokers.append(b)
        if kind == "partition":
            led = indices_where(pc.greater_equal(p["leader"], 0))
            rows.append(led)
            brokers.append(pc.cast(p["leader"].take(led), pa.int32()))
        pairs = pa.table({"row": pa.concat_arrays([array(x) for x in rows]),
                          "broker_id": pa.concat_arrays([array(x) for x in brokers])})
        pairs = pairs.filter(pc.invert(pc.is_in(pairs["broker_id"], value_set=registered)))
        pairs = pairs.group_by(["row", "broker_id"], use_threads=False).aggregate([])
        row = pairs["row"]
        tables.append(found(
            "replicas.registered", pairs.num_rows, str,
            tcode=table["tcode"].take(row), partition_id=table["partition_id"].take(row),
            start_offset=table["start_offset"].take(row), broker_id=pairs["broker_id"],
            kind=pa.repeat(kind, pairs.num_rows)).rows)
    return Found("replicas.registered", pa.concat_tables(tables), lambda r: (
        f"{r['kind']} lists broker {r['broker_id']}, which is not registered"))


def _fenced(snap: Snapshot, prev: Snapshot | None, settings: AuditSettings) -> Found:
    rule = "replicas.fenced_broker"
    if prev is None:
        return found(rule, 0, str)
    gap = snap.time_ms - prev.time_ms
    ids_: list[int] = []
    epochs: list[int] = []
    held: list[int] = []
    if gap >= settings.fenced_threshold_ms:
        cur = snap.brokers.filter(snap.brokers["fenced"]).to_pylist()
        before = {b["broker_id"]: b["broker_epoch"]
                  for b in prev.brokers.filter(prev.brokers["fenced"]).to_pylist()}
        for broker in sorted(cur, key=lambda b: b["broker_id"]):  # a loop over brokers
            b = broker["broker_id"]
            if before.get(b) != broker["broker_epoch"]:
                continue
            count = (_occurrences(snap.p_replicas, b) + _occurrences(snap.c_replicas, b))
            if count:
                ids_.append(b)
                epochs.append(broker["broker_epoch"])
                held.append(count)
    minutes = gap // 60_000
    return found(rule, len(ids_), lambda r: (
        f"fenced (epoch {r['epoch']}) for at least {minutes} min, holds {r['held']} replicas"),
        broker_id=pa.array(ids_, pa.int32()), epoch=pa.array(epochs, pa.int64()),
        held=pa.array(held, pa.int64()))


def _occurrences(slots: Slots, broker: int) -> int:
    """Entries equal to ``broker`` over every list (a list naming it twice counts twice)."""
    return sum(int(pc.sum(pc.fill_null(pc.equal(col, broker), False)).as_py() or 0)
               for col in slots.cols)


def _stuck(snap: Snapshot, prev: Snapshot | None, settings: AuditSettings) -> Found:
    """A move unchanged: adding or removing non-empty, and both the same sets as before."""
    rule = "replicas.stuck_move"
    if prev is None:
        return found(rule, 0, str)
    gap = snap.time_ms - prev.time_ms
    minutes = gap // 60_000
    tables = []
    p_cur = indices_where(pc.is_valid(pc.index_in(snap.partitions["pkey"],
                                                  value_set=array(prev.partitions["pkey"]))))
    p_prev = pc.index_in(snap.partitions["pkey"].take(p_cur),
                         value_set=array(prev.partitions["pkey"]))
    c_cur, c_prev = chunk_match(snap, prev)
    for kind, table, cur, before, lists in (
            ("partition", snap.partitions, p_cur, p_prev,
             (snap.p_adding, snap.p_removing, prev.p_adding, prev.p_removing)),
            ("chunk", snap.chunks, c_cur, c_prev,
             (snap.c_adding, snap.c_removing, prev.c_adding, prev.c_removing))):
        if gap < settings.stuck_move_threshold_ms:
            cur = cur.slice(0, 0)
            before = before.slice(0, 0)
        adding, removing = lists[0].take(cur), lists[1].take(cur)
        was_adding, was_removing = lists[2].take(before), lists[3].take(before)
        moving = pc.invert(pc.and_(adding.empty(), removing.empty()))
        stuck = pc.and_(moving, pc.and_(adding.same_sets(was_adding),
                                        removing.same_sets(was_removing)))
        hit = indices_where(stuck)
        row = cur.take(hit)
        tables.append(found(
            rule, len(hit), str, tcode=table["tcode"].take(row),
            partition_id=table["partition_id"].take(row),
            start_offset=table["start_offset"].take(row),
            adding=table["adding_replicas"].take(row),
            removing=table["removing_replicas"].take(row),
            kind=pa.repeat(kind, len(hit))).rows)
    return Found(rule, pa.concat_tables(tables), lambda r: (
        f"{r['kind']} adding [{ids(sorted(set(r['adding'])))}] and removing "
        f"[{ids(sorted(set(r['removing'])))}] for at least {minutes} min"))
