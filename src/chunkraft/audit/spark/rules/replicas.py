"""Replica lists of partitions and inactive chunks: distinct, counted, ISR, leader, registered
brokers, fenced brokers and stuck moves (the last two compare with the previous snapshot)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation
from chunkraft.audit.spark.read import SnapshotFrames

__all__ = ["rules"]



def _key() -> dict[str, Column]:
    return {"topic_id": F.col("topic_id"), "partition_id": F.col("partition_id"),
            "start_offset": F.col("start_offset")}


def _ids(column: str) -> Column:
    return F.array_join(F.col(column).cast("array<string>"), ", ")


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    rows = ctx.replica_rows
    found: dict[str, DataFrame | str] = {}
    found["replicas.distinct"] = violation(
        rows.where(F.size(F.array_distinct("replicas")) != F.size("replicas")),
        "replicas.distinct", **_key(),
        detail=F.format_string("%s %s lists a broker twice: replicas [%s]", "kind",
                               F.col("start_offset").cast("string"), _ids("replicas")))
    found["replicas.count"] = _count(ctx)
    found["replicas.isr_subset"] = violation(
        rows.where((F.size("isr") == 0) | (F.size(F.array_except("isr", "replicas")) > 0)),
        "replicas.isr_subset", **_key(),
        detail=F.format_string("%s has ISR [%s] but replicas [%s]", "kind", _ids("isr"),
                               _ids("replicas")))
    partitions = rows.where(F.col("kind") == "partition")
    found["replicas.leader_in_isr"] = violation(
        partitions.where((F.col("leader") >= 0) & ~F.array_contains("isr", F.col("leader"))),
        "replicas.leader_in_isr", **_key(), broker_id=F.col("leader"),
        detail=F.format_string("leader %d is not in the ISR [%s]", "leader", _ids("isr")))
    found["replicas.no_leader"] = violation(
        partitions.where(F.col("leader") < 0), "replicas.no_leader", **_key(),
        detail=F.format_string("no leader (%d): the partition is offline", "leader"))
    named = rows.select(
        "*", F.explode(F.array_distinct(F.concat(
            "replicas", "isr",
            F.when(F.col("leader") >= 0, F.array("leader")).otherwise(F.array().cast("array<int>"))
        ))).alias("broker_id"))
    unknown = named.join(F.broadcast(ctx.now.brokers.select("broker_id")), "broker_id",
                         "left_anti")
    found["replicas.registered"] = violation(
        unknown, "replicas.registered", **_key(), broker_id=F.col("broker_id"),
        detail=F.format_string("%s lists broker %d, which is not registered", "kind",
                               "broker_id"))
    found.update(_against_previous(ctx))
    return found


def _count(ctx: Context) -> DataFrame:
    rows = ctx.replica_rows
    partitions = rows.where(F.col("kind") == "partition")
    # The topic's RF: the most common partition RF, the larger on a tie.
    per_rf = partitions.groupBy("topic_id", "rf").agg(F.count(F.lit(1)).alias("n"))
    best = Window.partitionBy("topic_id").orderBy(F.desc("n"), F.desc("rf"))
    topic_rf = (per_rf.withColumn("rank", F.row_number().over(best))
                .where(F.col("rank") == 1).select("topic_id", F.col("rf").alias("topic_rf")))
    bad_partitions = violation(
        partitions.join(topic_rf, "topic_id").where(F.col("rf") != F.col("topic_rf")),
        "replicas.count", **_key(),
        detail=F.format_string("partition has %d replicas (less removing), the topic's "
                               "replication factor is %d", "rf", "topic_rf"))
    partition_rf = partitions.select("topic_id", "partition_id",
                                     F.col("rf").alias("partition_rf"))
    bad_chunks = violation(
        rows.where(F.col("kind") == "chunk")
        .join(partition_rf, ["topic_id", "partition_id"])
        .where(F.col("rf") != F.col("partition_rf")),
        "replicas.count", **_key(),
        detail=F.format_string("chunk has %d replicas (less removing), its partition %d",
                               "rf", "partition_rf"))
    return bad_partitions.unionByName(bad_chunks)


def _against_previous(ctx: Context) -> dict[str, DataFrame | str]:
    before, gap = ctx.before, ctx.gap_ms
    if before is None or gap is None:
        return {"replicas.fenced_broker": "needs --previous",
                "replicas.stuck_move": "needs --previous"}
    settings = ctx.settings
    counts = ctx.broker_counts
    was_fenced = before.brokers.where(F.col("fenced")).select(
        "broker_id", F.col("broker_epoch").alias("epoch_before"))
    fenced = (counts.where(F.col("fenced"))
              .join(was_fenced, "broker_id")
              .where(F.col("broker_epoch") == F.col("epoch_before"))
              .where((F.col("partition_replicas") + F.col("chunk_replicas")) > 0))
    fenced_rows = violation(
        fenced if gap >= settings.fenced_threshold_ms else fenced.limit(0),
        "replicas.fenced_broker", broker_id=F.col("broker_id"),
        detail=F.format_string("fenced (epoch %d) for at least %d min, holds %d replicas",
                               "broker_epoch", F.lit(gap // 60_000),
                               F.col("partition_replicas") + F.col("chunk_replicas")))

    def moving(frame: DataFrame) -> DataFrame:
        return frame.select(
            "kind", "topic_id", "partition_id",
            F.when(F.col("kind") == "chunk", F.col("start_offset")).otherwise(F.lit(-1))
            .alias("chunk_key"), "start_offset",
            F.array_sort(F.array_distinct("adding_replicas")).alias("adding"),
            F.array_sort(F.array_distinct("removing_replicas")).alias("removing"),
        ).where((F.size("adding") > 0) | (F.size("removing") > 0))

    previous_rows = _replica_rows_of(before)
    stuck = moving(ctx.replica_rows).join(
        moving(previous_rows).select("kind", "topic_id", "partition_id", "chunk_key",
                                     F.col("adding").alias("adding_before"),
                                     F.col("removing").alias("removing_before")),
        ["kind", "topic_id", "partition_id", "chunk_key"],
    ).where((F.col("adding") == F.col("adding_before"))
            & (F.col("removing") == F.col("removing_before")))
    stuck_rows = violation(
        stuck if gap >= settings.stuck_move_threshold_ms else stuck.limit(0),
        "replicas.stuck_move", **_key(),
        detail=F.format_string("%s adding [%s] and removing [%s] for at least %d min", "kind",
                               _ids("adding"), _ids("removing"), F.lit(gap // 60_000)))
    return {"replicas.fenced_broker": fenced_rows, "replicas.stuck_move": stuck_rows}


def _replica_rows_of(frames: SnapshotFrames) -> DataFrame:
    def common(frame: DataFrame, kind: str) -> DataFrame:
        return frame.select(F.lit(kind).alias("kind"), "topic_id", "partition_id",
                            "start_offset", "adding_replicas", "removing_replicas")

    return common(frames.partitions, "partition").unionByName(common(frames.chunks, "chunk"))
