"""topics.unique over the (small) topics table and topics.partition_ids over the per-topic
counts (a row per topic, :attr:`Context.topic_stats`); the other topic rules read one row of
the sequence frame each (:mod:`chunkraft.audit.spark.rules.sequence`)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation

__all__ = ["rules"]


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    topics = ctx.now.topics
    by_name, by_id = Window.partitionBy("name"), Window.partitionBy("topic_id")
    shared = topics.select(
        "name", "topic_id", F.count(F.lit(1)).over(by_name).alias("same_name"),
        F.count(F.lit(1)).over(by_id).alias("same_id"),
    ).where((F.col("same_name") > 1) | (F.col("same_id") > 1))
    numbered = ctx.local_frame(
        [(tid, *stats[:4]) for tid, stats in sorted(ctx.topic_stats.items(),
                                                     key=lambda kv: kv[0] or "")
         if tid in ctx.names],
        "topic_id string, n bigint, distinct bigint, lowest int, highest int",
    ).where((F.col("distinct") != F.col("n")) | (F.col("lowest") != 0)
            | (F.col("highest") != F.col("n") - 1))
    partition_ids = violation(
        numbered, "topics.partition_ids", topic_id=F.col("topic_id"),
        detail=F.format_string("%d partitions (%d distinct ids) numbered %d..%d, not 0..%d",
                               "n", "distinct", "lowest", "highest", F.col("n") - 1))
    return {"topics.partition_ids": partition_ids, "topics.unique": violation(
        shared, "topics.unique", topic_id=F.col("topic_id"),
        detail=F.format_string("topic %s (%s) shares its name with %d and its id with %d "
                               "other topic(s)", "name", "topic_id", F.col("same_name") - 1,
                               F.col("same_id") - 1))}
