"""Load per broker and rack, skew, the hottest partitions, and the load.skew rule."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array
from chunkraft.audit.arrow.found import Found, fixed, found
from chunkraft.audit.arrow.read import BrokerStates, Snapshot, Topics
from chunkraft.audit.inputs import AuditSettings
from chunkraft.audit.model import BrokerLoad, LoadSummary, PartitionHeat, RackLoad

__all__ = ["chunk_offsets", "hottest_order", "load_summary", "skew_rule"]


def chunk_offsets(snap: Snapshot) -> pa.Array:
    """Per (sorted) chunk: the offsets it covers, EndOffset - StartOffset + 1."""
    c = snap.chunks
    return pc.add(pc.subtract(c["end_offset"], c["start_offset"]), 1)


def _per_broker(rows: pa.Array, brokers: pa.Array, weights: pa.Array | None) -> dict[int, tuple[
        int, int]]:
    """broker -> (occurrences, sum of the row's weight) over flattened (row, broker) pairs."""
    if not len(brokers):
        return {}
    data: dict[str, Any] = {"b": brokers, "n": pa.repeat(1, len(brokers))}
    data["w"] = weights.take(rows) if weights is not None else data["n"]
    grouped = pa.table(data).group_by("b", use_threads=False).aggregate(
        [("n", "sum"), ("w", "sum")])
    return {b: (n, w) for b, n, w in zip(grouped["b"].to_pylist(), grouped["n_sum"].to_pylist(),
                                         grouped["w_sum"].to_pylist(), strict=True)}


def broker_loads(snap: Snapshot, states: BrokerStates | None) -> list[BrokerLoad]:
    """One BrokerLoad per registered broker, by broker id."""
    chunks = _per_broker(*snap.c_replicas.flatten(), chunk_offsets(snap))
    parts = _per_broker(*snap.p_replicas.flatten(), None)
    leaders = _per_broker(pa.array([], pa.int64()), array(snap.partitions["leader"]), None) \
        if snap.partitions.num_rows else {}
    sizes: dict[int, int] = {}
    if states is not None:
        for b in states.ids:
            logs = states.logs.filter(pc.equal(states.logs["broker_id"], b))
            sizes[b] = int(pc.sum(logs["size_bytes"]).as_py() or 0)
    out = []
    for broker in sorted(snap.brokers.to_pylist(), key=lambda r: r["broker_id"]):
        b = broker["broker_id"]
        out.append(BrokerLoad(
            broker_id=b, rack=broker["rack"], fenced=broker["fenced"],
            partition_replicas=parts.get(b, (0, 0))[0], chunk_replicas=chunks.get(b, (0, 0))[0],
            leaders=leaders.get(b, (0, 0))[0], offsets=chunks.get(b, (0, 0))[1],
            bytes=sizes.get(b)))
    return out


def _skew(values: list[int | None]) -> float | None:
    known = [v for v in values if v is not None]
    if not known:
        return None
    mean = sum(known) / len(known)
    return None if mean == 0 else max(known) / mean


def hottest_order(snap: Snapshot, topics: Topics, limit: int,
                  states: BrokerStates | None) -> list[PartitionHeat]:
    """The ``limit`` hottest partitions: by offsets of their inactive chunks, then chunk count
    (then topic name and partition id, so the order is total)."""
    p, c = snap.partitions, snap.chunks
    if p.num_rows == 0 or limit <= 0:
        return []
    if "heat" not in snap.cache:
        per = pa.table({"pkey": c["pkey"], "offsets": chunk_offsets(snap)}).group_by(
            "pkey", use_threads=False).aggregate([("offsets", "sum"), ("offsets", "count")])
        at = pc.index_in(p["pkey"], value_set=array(per["pkey"]))
        snap.cache["heat"] = (pc.fill_null(array(per["offsets_sum"]).take(at), 0),
                              pc.fill_null(array(per["offsets_count"]).take(at), 0))
    offsets, counts = snap.cache["heat"]
    names = topics.names.take(p["tcode"])
    table = pa.table({"offsets": offsets, "chunks": counts, "topic": names,
                      "topic_id": topics.ids.take(p["tcode"]), "partition_id": p["partition_id"],
                      "row": pa.array(range(p.num_rows), pa.int64())})
    if table.num_rows > limit:
        # only rows with at least the limit-th largest offsets can be among the hottest
        top_k = pc.select_k_unstable(offsets, limit, sort_keys=[("dummy", "descending")])
        floor = pc.min(offsets.take(top_k)).as_py()
        table = table.filter(pc.greater_equal(table["offsets"], floor))
    order = pc.sort_indices(table, sort_keys=[
        ("offsets", "descending"), ("chunks", "descending"), ("topic", "ascending", "at_start"),
        ("topic_id", "ascending"), ("partition_id", "ascending")])
    top = table.take(order.slice(0, limit))
    rows = top["row"]
    sizes: list[int | None] = [None] * top.num_rows
    if states is not None:
        # every local replica row of the partition, matched by topic name, as the engines do
        lr = states.replicas
        code = pc.cast(pc.index_in(lr["topic"], value_set=topics.names), pa.int64())
        lkey = pc.add(pc.multiply(code, 1 << 32), pc.cast(lr["partition_id"], pa.int64()))
        keys = array(p["pkey"].take(rows))
        names = top["topic"].to_pylist()
        for i, key in enumerate(keys.to_pylist()):  # a loop over the few hottest
            sizes[i] = 0 if names[i] is None else int(pc.sum(lr["bytes_held"].filter(
                pc.fill_null(pc.equal(lkey, key), False))).as_py() or 0)
    return [PartitionHeat(topic=r["topic"] or "", topic_id=r["topic_id"],
                          partition_id=r["partition_id"], chunks=r["chunks"],
                          offsets=r["offsets"], bytes=sizes[i])
            for i, r in enumerate(top.to_pylist())]


def load_summary(snap: Snapshot, topics: Topics, states: BrokerStates | None,
                 settings: AuditSettings) -> LoadSummary:
    brokers = broker_loads(snap, states)
    racks: dict[str | None, list[BrokerLoad]] = {}
    for b in brokers:
        racks.setdefault(b.rack, []).append(b)
    rack_loads = []
    for rack in sorted(racks, key=lambda r: (r is not None, r or "")):
        members = racks[rack]
        known = [m.bytes for m in members if m.bytes is not None]
        rack_loads.append(RackLoad(
            rack=rack, brokers=len(members),
            partition_replicas=sum(m.partition_replicas for m in members),
            chunk_replicas=sum(m.chunk_replicas for m in members),
            offsets=sum(m.offsets for m in members), bytes=sum(known) if known else None))
    skew: dict[str, float | None] = {
        "chunk_replicas": _skew([b.chunk_replicas for b in brokers]),
        "partition_replicas": _skew([b.partition_replicas for b in brokers]),
        "leaders": _skew([b.leaders for b in brokers]),
        "offsets": _skew([b.offsets for b in brokers]),
    }
    if any(b.bytes is not None for b in brokers):
        skew["bytes"] = _skew([b.bytes for b in brokers])
    hottest = hottest_order(snap, topics, settings.hottest, states)
    return LoadSummary(brokers=brokers, racks=rack_loads, skew=skew, hottest=hottest)


def skew_rule(load: LoadSummary, settings: AuditSettings) -> Found:
    counts = {b.broker_id: b.chunk_replicas + b.partition_replicas for b in load.brokers}
    mean = sum(counts.values()) / len(counts) if counts else 0.0
    hot: list[int] = []
    if counts and mean >= settings.min_mean_for_skew:
        hot = [b for b, n in sorted(counts.items()) if n > settings.max_skew * mean]
    return found("load.skew", len(hot), lambda r: (
        f"holds {r['replicas']} chunk replicas, {fixed(r['replicas'] / mean, 2)}x the mean of "
        f"{fixed(mean, 1)} (limit {fixed(settings.max_skew, 2)}x)"),
        broker_id=pa.array(hot, pa.int32()),
        replicas=pa.array([counts[b] for b in hot], pa.int64()))
