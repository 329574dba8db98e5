"""Diff mode: topics, partitions and chunks created, removed or moved between two snapshots.

Both snapshots' rows go into one frame (topics, partitions and chunks, keyed by ``what`` and
their key); windows over each key tell whether the other snapshot has it and with which
replicas, so the whole diff is one exchange, then one window per kind of change for the
counts and samples (one action).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.model import DiffSummary, ExportSummary
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.read import SnapshotFrames

__all__ = ["KINDS", "diff_summary"]

KINDS = ("topics_created", "topics_removed", "partitions_created", "partitions_removed",
         "partitions_moved", "chunks_created", "chunks_removed", "chunks_moved")


def _rows(frames: SnapshotFrames, after: bool) -> DataFrame:
    """One snapshot's keys (and sorted replica lists) as rows of one frame."""
    no_partition, no_start = F.lit(None).cast("int"), F.lit(None).cast("bigint")

    def side(frame: DataFrame, what: str, partition: Any, start: Any, replicas: Any) -> DataFrame:
        return frame.select(F.lit(what).alias("what"), F.lit(after).alias("after"), "topic_id",
                            partition.alias("partition_id"), start.alias("start_offset"),
                            replicas.alias("replicas"))

    return (side(frames.topics, "topics", no_partition, no_start,
                 F.lit(None).cast("array<int>"))
            .unionByName(side(frames.partitions, "partitions", F.col("partition_id"), no_start,
                              F.array_sort("replicas")))
            .unionByName(side(frames.chunks, "chunks", F.col("partition_id"),
                              F.col("start_offset"), F.array_sort("replicas"))))


def diff_summary(ctx: Context, previous: ExportSummary) -> DiffSummary:
    """Counts and samples of every kind of change (one Spark action)."""
    before = ctx.before
    assert before is not None
    rows = _rows(ctx.now, True).unionByName(_rows(before, False))
    same_key = Window.partitionBy("what", "topic_id", "partition_id", "start_offset")
    after, earlier = F.col("after"), ~F.col("after")
    # A null key matches nothing (as a join on it would not).
    keyed = (F.col("topic_id").isNotNull()
             & ((F.col("what") == "topics") | F.col("partition_id").isNotNull())
             & ((F.col("what") != "chunks") | F.col("start_offset").isNotNull()))
    matched = rows.select(
        "*",
        (keyed & F.max(after.cast("int")).over(same_key).cast("boolean")).alias("in_after"),
        (keyed & F.max(earlier.cast("int")).over(same_key).cast("boolean")).alias("in_before"),
        F.first(F.when(earlier, F.col("replicas")), ignorenulls=True).over(same_key)
        .alias("replicas_then"))
    moves = F.col("what") != "topics"
    kind = (F.when(after & ~F.col("in_before"), F.concat(F.col("what"), F.lit("_created")))
            .when(earlier & ~F.col("in_after"), F.concat(F.col("what"), F.lit("_removed")))
            .when(after & moves & (F.col("replicas") != F.col("replicas_then")),
                  F.concat(F.col("what"), F.lit("_moved"))))
    changes = matched.select(
        kind.alias("kind"), "topic_id", "partition_id", "start_offset",
        F.when(moves & earlier, F.col("replicas"))
        .when(moves & F.col("in_before"), F.col("replicas_then")).alias("replicas_before"),
        F.when(moves & after, F.col("replicas")).alias("replicas_after"),
    ).where(F.col("kind").isNotNull())
    names = dict(ctx.names)
    for row in before.topics.select("topic_id", "name").collect():
        if row["topic_id"] is not None and row["name"] is not None:
            known = names.get(row["topic_id"])
            names[row["topic_id"]] = row["name"] if known is None else min(known, row["name"])
    named = ctx.local_frame(sorted(names.items()), "topic_id string, topic string")
    changes = changes.join(F.broadcast(named), "topic_id", "left")
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
