"""drift.* rules: the brokers' state exports against the controller's assignment.

Only brokers that exported their state are checked (a loop over those brokers: few). Local
rows name their topic; it is matched to the snapshot's topics by name.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array, indices_where, partition_key
from chunkraft.audit.arrow.found import Found, found, ids
from chunkraft.audit.arrow.read import BrokerStates, Snapshot, Topics

__all__ = ["drift_rules"]

_RULES = ("drift.missing_replica", "drift.extra_replica", "drift.beyond_end", "drift.gap")


def _local_pkey(topics: Topics, topic: Any, partition_id: Any) -> tuple[pa.Array, pa.Array]:
    """(topic code, partition key) of local rows, by topic name: the name a topic id has in
    the snapshot (the smallest of its topics rows); null when no topic has that name."""
    code = pc.cast(pc.index_in(topic, value_set=topics.names), pa.int64())
    return code, partition_key(code, partition_id)


def _rows(n: int) -> pa.Array:
    return pa.array(range(n), pa.int64())


def drift_rules(snap: Snapshot, topics: Topics, states: BrokerStates | None) -> list[Found]:
    if states is None:
        return [found(rule, 0, str) for rule in _RULES]
    p, c = snap.partitions, snap.chunks
    lr = states.replicas
    lr_code, lr_pkey = _local_pkey(topics, lr["topic"], lr["partition_id"])
    lr = lr.append_column("tcode", lr_code).append_column("pkey", lr_pkey).append_column(
        "lrow", _rows(lr.num_rows))
    held = lr.filter(pc.greater_equal(lr["first_offset_held"], 0))
    logs = states.logs
    logs = logs.append_column("pkey", _local_pkey(topics, logs["topic"], logs["partition_id"])[1])
    segs = states.segments
    segs = segs.append_column("pkey", _local_pkey(topics, segs["topic"], segs["partition_id"])[1])
    chunk_keys = pa.table({"pkey": c["pkey"], "start_offset": c["start_offset"],
                           "crow": _rows(c.num_rows)})
    # the assignment drift checks against: partitions of known topics, chunks of those
    known_p = pc.is_in(p["tcode"], value_set=array(snap.topics["tcode"]))
    known_c = pc.fill_null(known_p.take(snap.chunk_partition), False)

    missing: list[pa.Table] = []
    beyond: list[pa.Table] = []
    gaps: list[pa.Table] = []
    for b in states.ids:
        mine = held.filter(pc.equal(held["broker_id"], b))
        mine_keys = mine.select(["pkey", "chunk_start_offset", "last_offset_held"]).rename_columns(
            ["pkey", "start_offset", "last_offset_held"])
        my_logs = logs.filter(pc.equal(logs["broker_id"], b))

        # missing: ISR replica (not being added) of an inactive chunk, holding none of it
        want = indices_where(pc.and_(pc.and_(known_c, snap.c_isr.contains(b)),
                                     pc.invert(snap.c_adding.contains(b))))
        wanted = chunk_keys.take(want)
        absent = wanted.join(mine_keys, ["pkey", "start_offset"], join_type="left anti",
                             use_threads=False)["crow"]
        missing.append(found("drift.missing_replica", len(absent), str,
                             tcode=c["tcode"].take(absent),
                             partition_id=c["partition_id"].take(absent),
                             start_offset=c["start_offset"].take(absent),
                             broker_id=pa.repeat(b, len(absent)),
                             end=c["end_offset"].take(absent),
                             what=pa.repeat("inactive", len(absent))).rows)
        # ... or replica of an active chunk without a log of the partition
        active = indices_where(pc.and_(
            pc.and_(known_p, snap.p_replicas.contains(b)),
            pc.invert(pc.is_in(p["pkey"], value_set=array(my_logs["pkey"].drop_null())))))
        missing.append(found("drift.missing_replica", len(active), str,
                             tcode=p["tcode"].take(active),
                             partition_id=p["partition_id"].take(active),
                             start_offset=p["start_offset"].take(active),
                             broker_id=pa.repeat(b, len(active)),
                             end=pa.nulls(len(active), pa.int64()),
                             what=pa.repeat("active", len(active))).rows)

        beyond.append(_beyond(snap, b, my_logs, known_c))
        gaps.append(_gaps(snap, b, mine_keys, my_logs,
                          segs.filter(pc.equal(segs["broker_id"], b)), chunk_keys, known_c))

    return [
        Found("drift.missing_replica", pa.concat_tables(missing), _missing_detail),
        _extra(snap, topics, held),
        Found("drift.beyond_end", pa.concat_tables(beyond), _beyond_detail),
        Found("drift.gap", pa.concat_tables(gaps), _gap_detail),
    ]


def _missing_detail(r: dict[str, Any]) -> str:
    if r["what"] == "active":
        return (f"broker {r['broker_id']} is a replica of the active chunk (from "
                f"{r['start_offset']}) but has no log of the partition")
    return (f"broker {r['broker_id']} is an ISR replica of chunk {r['start_offset']}.."
            f"{r['end']} but holds none of it")


def _extra(snap: Snapshot, topics: Topics, held: pa.Table) -> Found:
    p, c = snap.partitions, snap.chunks
    keys = held.select(["lrow", "pkey", "chunk_start_offset"]).rename_columns(
        ["lrow", "pkey", "start_offset"])
    matched = keys.join(pa.table({"pkey": c["pkey"], "start_offset": c["start_offset"],
                                  "crow": _rows(c.num_rows)}),
                        ["pkey", "start_offset"], join_type="left outer", use_threads=False)
    matched = matched.join(pa.table({"pkey": p["pkey"], "start_offset": p["start_offset"],
                                     "prow": _rows(p.num_rows)}),
                           ["pkey", "start_offset"], join_type="left outer", use_threads=False)
    matched = matched.sort_by("lrow")
    lrow = matched["lrow"]
    broker = held["broker_id"].take(pc.index_in(lrow, value_set=array(held["lrow"])))
    crow, prow = array(matched["crow"]), array(matched["prow"])

    def listed(rows: pa.Array, lists: tuple[Any, ...]) -> pa.Array:
        safe = pc.fill_null(rows, 0)
        out = pa.repeat(False, len(rows))
        for slots in lists:
            if slots.rows:
                out = pc.or_(out, slots.take(safe).contains(broker))
        return pc.and_(pc.is_valid(rows), out)

    in_chunk = listed(crow, (snap.c_replicas, snap.c_adding, snap.c_removing))
    in_active = pc.and_(pc.is_null(crow),
                        listed(prow, (snap.p_replicas, snap.p_adding, snap.p_removing)))
    hit = indices_where(pc.invert(pc.or_(in_chunk, in_active)))
    rows = pc.index_in(lrow.take(hit), value_set=array(held["lrow"]))
    c_hit, p_hit = crow.take(hit), prow.take(hit)
    replicas = pc.if_else(pc.is_valid(c_hit), c["replicas"].take(pc.fill_null(c_hit, 0))
                          if c.num_rows else pa.nulls(len(hit), pa.list_(pa.int32())),
                          p["replicas"].take(p_hit))
    # the topic id: the snapshot's (smallest) id of that name, else the state's own
    t = snap.topics
    by_name = t.group_by("name", use_threads=False).aggregate([("topic_id", "min")])
    names = held["topic"].take(rows)
    topic_id = array(by_name["topic_id_min"]).take(
        pc.index_in(names, value_set=array(by_name["name"])))
    own = held["topic_id"].take(rows)
    topic_id = pc.coalesce(topic_id, pc.if_else(pc.equal(own, ""), pa.scalar(None, pa.string()),
                                                own))
    del topics
    return found("drift.extra_replica", len(hit), _extra_detail, topic_id=topic_id,
                 partition_id=held["partition_id"].take(rows),
                 start_offset=held["chunk_start_offset"].take(rows),
                 broker_id=held["broker_id"].take(rows), replicas=replicas,
                 first=held["first_offset_held"].take(rows),
                 last=held["last_offset_held"].take(rows),
                 bytes=held["bytes_held"].take(rows))


def _extra_detail(r: dict[str, Any]) -> str:
    held = (f"broker {r['broker_id']} holds offsets {r['first']}..{r['last']} "
            f"({r['bytes']} bytes) of a chunk")
    if r["replicas"] is None:
        return f"{held} the snapshot does not have"
    return f"{held} assigned to [{ids(r['replicas'])}]"


def _beyond(snap: Snapshot, b: int, my_logs: pa.Table, known_c: pa.Array) -> pa.Table:
    p, c = snap.partitions, snap.chunks
    assigned = indices_where(pc.and_(known_c, snap.c_replicas.contains(b)))
    ends = pa.table({"pkey": c["pkey"].take(assigned), "end": c["end_offset"].take(assigned)})
    ends = ends.group_by("pkey", use_threads=False).aggregate([("end", "max")])
    held = my_logs.filter(pc.is_valid(my_logs["pkey"])).group_by(
        "pkey", use_threads=False).aggregate([("log_end_offset", "max")])
    both = held.join(ends, "pkey", join_type="inner", use_threads=False)
    replica_of = array(p["pkey"]).filter(snap.p_replicas.contains(b))
    last_held = pc.subtract(both["log_end_offset_max"], 1)
    both = both.append_column("last", last_held).filter(pc.and_(
        pc.invert(pc.is_in(both["pkey"], value_set=replica_of)),
        pc.greater(last_held, both["end_max"])))
    # the topic code and partition id back from the key
    pkey = both["pkey"]
    tcode = pc.divide(pkey, 1 << 32)
    pid = pc.subtract(pkey, pc.multiply(tcode, 1 << 32))
    return found("drift.beyond_end", both.num_rows, str, tcode=tcode, partition_id=pid,
                 broker_id=pa.repeat(b, both.num_rows), last=both["last"],
                 end=both["end_max"]).rows


def _beyond_detail(r: dict[str, Any]) -> str:
    return (f"broker {r['broker_id']} holds up to offset {r['last']} but its last chunk here "
            f"ends at {r['end']}")


def _gaps(snap: Snapshot, b: int, mine: pa.Table, my_logs: pa.Table, my_segs: pa.Table,
          chunk_keys: pa.Table, known_c: pa.Array) -> pa.Table:
    c = snap.chunks
    isr = indices_where(pc.and_(pc.and_(known_c, snap.c_isr.contains(b)),
                                pc.invert(snap.c_adding.contains(b))))
    cand = chunk_keys.take(isr).join(mine, ["pkey", "start_offset"], join_type="inner",
                                     use_threads=False)
    crow = cand["crow"]
    end = c["end_offset"].take(crow)
    short = pc.less(cand["last_offset_held"], end)

    # holes between consecutive segments of one partition's logs on this broker
    segs = my_segs.filter(pc.is_valid(my_segs["pkey"])).select(
        ["pkey", "base_offset", "next_offset"])
    segs = segs.take(pc.sort_indices(segs, sort_keys=[("pkey", "ascending"),
                                                      ("base_offset", "ascending")]))
    n = segs.num_rows
    holes = pa.table({"pkey": pa.array([], pa.int64()), "lo": pa.array([], pa.int64()),
                      "hi": pa.array([], pa.int64())})
    if n > 1:
        key, base, nxt = (array(segs[x]) for x in ("pkey", "base_offset", "next_offset"))
        is_hole = pc.and_(pc.equal(key.slice(1), key.slice(0, n - 1)),
                          pc.greater(base.slice(1), nxt.slice(0, n - 1)))
        at = indices_where(is_hole)
        holes = pa.table({"pkey": key.slice(1).take(at), "lo": nxt.slice(0, n - 1).take(at),
                          "hi": pc.subtract(base.slice(1).take(at), 1)})
    log_start = my_logs.filter(pc.is_valid(my_logs["pkey"])).group_by(
        "pkey", use_threads=False).aggregate([("log_start_offset", "min")])
    ls = log_start["log_start_offset_min"].take(
        pc.index_in(cand["pkey"], value_set=array(log_start["pkey"])))
    start = c["start_offset"].take(crow)
    low = pc.max_element_wise(start, ls, skip_nulls=True)
    ranges = pa.table({"pkey": cand["pkey"], "crow": crow, "low": low, "high": end})
    crossed = ranges.join(holes, "pkey", join_type="inner", use_threads=False)
    crossed = crossed.filter(pc.and_(pc.less_equal(crossed["lo"], crossed["high"]),
                                     pc.greater_equal(crossed["hi"], crossed["low"])))
    first_hole = crossed.group_by("crow", use_threads=False).aggregate(
        [("lo", "list"), ("hi", "list")])
    holed_rows = array(first_hole["crow"])
    hit = indices_where(pc.or_(short, pc.is_in(crow, value_set=holed_rows)))
    rows = crow.take(hit)
    at = pc.index_in(rows, value_set=holed_rows)
    return found("drift.gap", len(hit), str, tcode=c["tcode"].take(rows),
                 partition_id=c["partition_id"].take(rows),
                 start_offset=c["start_offset"].take(rows), broker_id=pa.repeat(b, len(hit)),
                 last=cand["last_offset_held"].take(hit), end=end.take(hit),
                 hole_lo=first_hole["lo_list"].take(at),
                 hole_hi=first_hole["hi_list"].take(at)).rows


def _gap_detail(r: dict[str, Any]) -> str:
    """The smallest of the row's lines (the Spark engine keeps min(detail) per row)."""
    b, start, end = r["broker_id"], r["start_offset"], r["end"]
    lines = []
    if r["last"] < end:
        lines.append(f"broker {b} holds chunk {start}..{end} only up to offset {r['last']}")
    for lo, hi in zip(r["hole_lo"] or [], r["hole_hi"] or [], strict=True):
        lines.append(f"broker {b} misses offsets {lo}..{hi} of chunk {start}..{end}")
    return min(lines)
