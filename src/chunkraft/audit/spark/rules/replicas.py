"""Replica rules that compare with the previous snapshot: fenced brokers and stuck moves (the
row-local replica rules are in :mod:`chunkraft.audit.spark.rules.sequence`)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation
from chunkraft.audit.spark.read import SnapshotFrames

__all__ = ["rules"]


def _ids(column: str) -> Column:
    return F.array_join(F.col(column).cast("array<string>"), ", ")


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    before, gap = ctx.before, ctx.gap_ms
    if before is None or gap is None:
        return {"replicas.fenced_broker": "needs --previous",
                "replicas.stuck_move": "needs --previous"}
    settings = ctx.settings
    # Brokers are a small table: both snapshots' are on the driver; the rule filters them.
    was_fenced = {r["broker_id"]: r["broker_epoch"] for r in before.brokers.where(
        F.col("fenced")).select("broker_id", "broker_epoch").collect()}
    rows = [(b.broker_id, b.fenced, b.broker_epoch, was_fenced.get(b.broker_id),
             ctx.broker_load(b.broker_id)["partition_replicas"]
             + ctx.broker_load(b.broker_id)["chunk_replicas"]) for b in ctx.brokers]
    brokers = ctx.local_frame(rows, "broker_id int, fenced boolean, broker_epoch bigint, "
                                    "epoch_before bigint, replicas bigint")
    fenced = brokers.where(F.col("fenced") & (F.col("broker_epoch") == F.col("epoch_before"))
                           & (F.col("replicas") > 0)
                           & F.lit(gap >= settings.fenced_threshold_ms))
    fenced_rows = violation(
        fenced, "replicas.fenced_broker", broker_id=F.col("broker_id"),
        detail=F.format_string("fenced (epoch %d) for at least %d min, holds %d replicas",
                               "broker_epoch", F.lit(gap // 60_000), "replicas"))

    def moving(frame: DataFrame) -> DataFrame:
        return frame.select(
            "kind", "topic_id", "partition_id",
            F.when(F.col("kind") == "chunk", F.col("start_offset")).otherwise(F.lit(-1))
            .alias("chunk_key"), "start_offset",
            F.array_sort(F.array_distinct("adding_replicas")).alias("adding"),
            F.array_sort(F.array_distinct("removing_replicas")).alias("removing"),
        ).where((F.size("adding") > 0) | (F.size("removing") > 0))

    if gap >= settings.stuck_move_threshold_ms:
        stuck = moving(ctx.assignment).join(
            moving(_replica_rows_of(before)).select(
                "kind", "topic_id", "partition_id", "chunk_key",
                F.col("adding").alias("adding_before"),
                F.col("removing").alias("removing_before")),
            ["kind", "topic_id", "partition_id", "chunk_key"],
        ).where((F.col("adding") == F.col("adding_before"))
                & (F.col("removing") == F.col("removing_before")))
    else:
        stuck = ctx.local_frame([], "kind string, topic_id string, partition_id int, "
                                    "start_offset bigint, adding array<int>, "
                                    "removing array<int>")
    stuck_rows = violation(
        stuck, "replicas.stuck_move", topic_id=F.col("topic_id"),
        partition_id=F.col("partition_id"), start_offset=F.col("start_offset"),
        detail=F.format_string("%s adding [%s] and removing [%s] for at least %d min", "kind",
                               _ids("adding"), _ids("removing"), F.lit(gap // 60_000)))
    return {"replicas.fenced_broker": fenced_rows, "replicas.stuck_move": stuck_rows}


def _replica_rows_of(frames: SnapshotFrames) -> DataFrame:
    def common(frame: DataFrame, kind: str) -> DataFrame:
        return frame.select(F.lit(kind).alias("kind"), "topic_id", "partition_id",
                            "start_offset", "adding_replicas", "removing_replicas")

    return common(frames.partitions, "partition").unionByName(common(frames.chunks, "chunk"))
