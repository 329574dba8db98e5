"""LoadSummary: per broker and rack, skew per measure, and the hottest partitions."""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from chunkraft.audit.model import BrokerLoad, LoadSummary, PartitionHeat, RackLoad
from chunkraft.audit.spark.context import Context

__all__ = ["hottest_frame", "load_summary"]

_MEASURES = ("chunk_replicas", "partition_replicas", "leaders", "offsets")


def hottest_frame(ctx: Context) -> DataFrame:
    """Partitions by offsets in inactive chunks desc, then chunks desc (then by key)."""
    facts = ctx.partition_facts.select(
        "topic_id", "partition_id", F.coalesce("chunks", F.lit(0)).alias("chunks"),
        F.coalesce("offsets", F.lit(0)).alias("offsets"))
    return facts.join(F.broadcast(ctx.topic_names), "topic_id", "left").orderBy(
        F.desc("offsets"), F.desc("chunks"), F.asc_nulls_first("topic"), "topic_id",
        "partition_id")


def load_summary(ctx: Context) -> LoadSummary:
    """Collects the per-broker counts (small) and the top ``settings.hottest`` partitions."""
    bytes_by_broker: dict[int, int] = {}
    has_states = bool(ctx.inputs.broker_states)
    if has_states:
        for row in ctx.states["local_logs"].groupBy("broker_id").agg(
                F.sum("size_bytes").alias("bytes")).collect():
            bytes_by_broker[row["broker_id"]] = int(row["bytes"] or 0)
    state_brokers = set(ctx.state_brokers)
    brokers = [
        BrokerLoad(broker_id=row["broker_id"], rack=row["rack"], fenced=bool(row["fenced"]),
                   partition_replicas=int(row["partition_replicas"]),
                   chunk_replicas=int(row["chunk_replicas"]), leaders=int(row["leaders"]),
                   offsets=int(row["offsets"]),
                   bytes=(bytes_by_broker.get(row["broker_id"], 0)
                          if row["broker_id"] in state_brokers else None))
        for row in ctx.broker_counts.orderBy("broker_id").collect()]
    racks: dict[str | None, list[BrokerLoad]] = defaultdict(list)
    for broker in brokers:
        racks[broker.rack].append(broker)
    rack_loads = [
        RackLoad(rack=rack, brokers=len(members),
                 partition_replicas=sum(b.partition_replicas for b in members),
                 chunk_replicas=sum(b.chunk_replicas for b in members),
                 offsets=sum(b.offsets for b in members),
                 bytes=(None if all(b.bytes is None for b in members)
                        else sum(b.bytes or 0 for b in members)))
        for rack, members in sorted(racks.items(), key=lambda kv: (kv[0] is not None,
                                                                     kv[0] or ""))]
    skew: dict[str, float | None] = {m: _skew([getattr(b, m) for b in brokers])
                                     for m in _MEASURES}
    known = [b.bytes for b in brokers if b.bytes is not None]
    if known:
        skew["bytes"] = _skew(known)
    return LoadSummary(brokers=brokers, racks=rack_loads, skew=skew,
                       hottest=_hottest(ctx, has_states))


def _skew(values: list[int]) -> float | None:
    if not values:
        return None
    mean = sum(values) / len(values)
    return None if mean == 0 else max(values) / mean


def _hottest(ctx: Context, has_states: bool) -> list[PartitionHeat]:
    rows = hottest_frame(ctx).limit(ctx.settings.hottest).collect()
    sizes: dict[tuple[str, int], int] = {}
    if has_states and rows:
        wanted = ctx.spark.createDataFrame(
            [(row["topic"], row["partition_id"]) for row in rows if row["topic"] is not None],
            "topic string, partition_id int")
        for size in (ctx.states["local_replicas"].join(wanted, ["topic", "partition_id"])
                     .groupBy("topic", "partition_id").agg(F.sum("bytes_held").alias("b"))
                     .collect()):
            sizes[(size["topic"], size["partition_id"])] = int(size["b"] or 0)
    return [PartitionHeat(topic=row["topic"] or "", topic_id=row["topic_id"],
                          partition_id=row["partition_id"], chunks=int(row["chunks"]),
                          offsets=int(row["offsets"]),
                          bytes=(sizes.get((row["topic"], row["partition_id"]), 0)
                                 if has_states else None))
            for row in rows]
