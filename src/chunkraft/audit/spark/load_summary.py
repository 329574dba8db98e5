"""LoadSummary: per broker and rack, skew per measure, and the hottest partitions."""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from chunkraft.audit.model import BrokerLoad, LoadSummary, PartitionHeat, RackLoad
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.rules import sequence

__all__ = ["hottest_frame", "hottest_rows", "load_summary"]

_MEASURES = ("chunk_replicas", "partition_replicas", "leaders", "offsets")


def hottest_frame(ctx: Context) -> DataFrame:
    """Partitions by offsets in inactive chunks desc, then chunks desc (then by key), from the
    partition rows of :func:`chunkraft.audit.spark.rules.sequence.frame` (their ``chunks``
    and ``offsets`` windows)."""
    facts = (sequence.frame(ctx).where(F.col("active"))
             .join(F.broadcast(ctx.topic_names.drop("known")), "topic_id", "left")
             .select("topic_id", "topic", "partition_id", "chunks",
                     F.coalesce("offsets", F.lit(0)).alias("offsets")))
    return facts.orderBy(F.desc("offsets"), F.desc("chunks"), F.asc_nulls_first("topic"),
                         "topic_id", "partition_id")


def hottest_rows(ctx: Context) -> list[Row]:
    """The top max(hottest, timelines) partitions of :func:`hottest_frame`, collected once
    for the load summary and the timelines."""
    if "hottest" not in ctx.memo:
        ctx.memo["hottest"] = hottest_frame(ctx).limit(
            max(ctx.settings.hottest, ctx.settings.timelines)).collect()
    rows: list[Row] = ctx.memo["hottest"]
    return rows


def load_summary(ctx: Context) -> LoadSummary:
    """The per-broker counts (one collected aggregate) and the top ``settings.hottest``
    partitions."""
    bytes_by_broker: dict[int, int] = {}
    has_states = bool(ctx.inputs.broker_states)
    if has_states:
        for row in ctx.states["local_logs"].groupBy("broker_id").agg(
                F.sum("size_bytes").alias("bytes")).collect():
            bytes_by_broker[row["broker_id"]] = int(row["bytes"] or 0)
    state_brokers = set(ctx.state_brokers)
    brokers = []
    for info in ctx.brokers:
        load = ctx.broker_load(info.broker_id)
        brokers.append(BrokerLoad(
            broker_id=info.broker_id, rack=info.rack, fenced=info.fenced,
            partition_replicas=load["partition_replicas"],
            chunk_replicas=load["chunk_replicas"], leaders=load["leaders"],
            offsets=load["offsets"],
            bytes=(bytes_by_broker.get(info.broker_id, 0)
                   if info.broker_id in state_brokers else None)))
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
    rows = hottest_rows(ctx)[:ctx.settings.hottest]
    sizes: dict[tuple[str, int], int] = {}
    if has_states and rows:
        wanted = ctx.local_frame(
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
