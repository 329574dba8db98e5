"""Diff mode: topics, partitions and chunks created, removed or moved between two snapshots."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.model import DiffSummary, ExportSummary
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.read import SnapshotFrames

__all__ = ["KINDS", "diff_summary"]

KINDS = ("topics_created", "topics_removed", "partitions_created", "partitions_removed",
         "partitions_moved", "chunks_created", "chunks_removed", "chunks_moved")


def _changes(now: DataFrame, before: DataFrame, key: list[str], what: str,
             moves: bool) -> list[DataFrame]:
    def side(frame: DataFrame, suffix: str) -> DataFrame:
        columns: list[Column | str] = [*key, F.lit(True).alias(f"in_{suffix}")]
        if moves:
            columns.append(F.array_sort("replicas").alias(f"replicas_{suffix}"))
        return frame.select(*columns)

    joined = side(now, "after").join(side(before, "before"), key, "full_outer")
    start: Column = (F.col("start_offset") if "start_offset" in key
                     else F.lit(None).cast("bigint"))
    partition: Column = (F.col("partition_id") if "partition_id" in key
                         else F.lit(None).cast("int"))

    def rows(condition: Column, kind: str) -> DataFrame:
        return joined.where(condition).select(
            F.lit(kind).alias("kind"), "topic_id", partition.alias("partition_id"),
            start.alias("start_offset"),
            (F.col("replicas_before") if moves else F.lit(None).cast("array<int>"))
            .alias("replicas_before"),
            (F.col("replicas_after") if moves else F.lit(None).cast("array<int>"))
            .alias("replicas_after"))

    found = [rows(F.col("in_before").isNull(), f"{what}_created"),
             rows(F.col("in_after").isNull(), f"{what}_removed")]
    if moves:
        found.append(rows(F.col("in_before").isNotNull() & F.col("in_after").isNotNull()
                          & (F.col("replicas_before") != F.col("replicas_after")),
                          f"{what}_moved"))
    return found


def diff_summary(ctx: Context, previous: ExportSummary) -> DiffSummary:
    """Counts and samples of every kind of change (one Spark action)."""
    before: SnapshotFrames | None = ctx.before
    assert before is not None
    now = ctx.now
    parts = [
        *_changes(now.topics, before.topics, ["topic_id"], "topics", moves=False),
        *_changes(now.partitions, before.partitions, ["topic_id", "partition_id"],
                  "partitions", moves=True),
        *_changes(now.chunks, before.chunks, ["topic_id", "partition_id", "start_offset"],
                  "chunks", moves=True),
    ]
    changes = parts[0]
    for part in parts[1:]:
        changes = changes.unionByName(part)
    names = (now.topics.select("topic_id", "name").unionByName(before.topics.select(
        "topic_id", "name")).groupBy("topic_id").agg(F.min("name").alias("topic")))
    changes = changes.join(F.broadcast(names), "topic_id", "left")
    order = Window.partitionBy("kind").orderBy(
        F.asc_nulls_first("topic"), F.asc_nulls_first("topic_id"),
        F.asc_nulls_first("partition_id"), F.asc_nulls_first("start_offset"))
    sampled = (changes.select("*", F.row_number().over(order).alias("rank"),
                              F.count(F.lit(1)).over(Window.partitionBy("kind")).alias("n"))
               .where(F.col("rank") <= ctx.settings.diff_sample_size).collect())
    counts = dict.fromkeys(KINDS, 0)
    samples: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for row in sorted(sampled, key=lambda r: (r["kind"], r["rank"])):
        counts[row["kind"]] = int(row["n"])
        samples[row["kind"]].append({
            "topic": row["topic"], "topic_id": row["topic_id"],
            "partition_id": row["partition_id"], "start_offset": row["start_offset"],
            "replicas_before": row["replicas_before"], "replicas_after": row["replicas_after"]})
    return DiffSummary(previous=previous, counts=counts, samples=samples)
