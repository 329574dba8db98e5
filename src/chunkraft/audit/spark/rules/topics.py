"""topics.unique over the (small) topics table and topics.partition_ids over the per-topic
counts (a row per topic, aggregated from the partition rows of
:func:`chunkraft.audit.spark.rules.sequence.frame`); the other topic rules read a row of the
assignment each (:mod:`chunkraft.audit.spark.rules.sequence`)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation
from chunkraft.audit.spark.rules import sequence

__all__ = ["rules"]


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    topics = ctx.now.topics
    by_name, by_id = Window.partitionBy("name"), Window.partitionBy("topic_id")
    shared = topics.select(
        "name", "topic_id", F.count(F.lit(1)).over(by_name).alias("same_name"),
        F.count(F.lit(1)).over(by_id).alias("same_id"),
    ).where((F.col("same_name") > 1) | (F.col("same_id") > 1))
    # Per topic: partitions, distinct ids, lowest and highest id, from the partition rows of
    # the sequence frame (persisted, a row per partition) in one small aggregate.
    numbered = (sequence.frame(ctx).where(F.col("active"))
        .join(F.broadcast(ctx.topic_names.select("topic_id")), "topic_id", "left_semi")
        .groupBy("topic_id").agg(
            F.count(F.lit(1)).alias("n"),
            F.count(F.when(F.col("first_active"), 1)).alias("distinct"),
            F.min("partition_id").alias("lowest"), F.max("partition_id").alias("highest"))
        .where((F.col("distinct") != F.col("n")) | (F.col("lowest") != 0)
               | (F.col("highest") != F.col("n") - 1)))
    partition_ids = violation(
        numbered, "topics.partition_ids", topic_id=F.col("topic_id"),
        detail=F.format_string("%d partitions (%d distinct ids) numbered %d..%d, not 0..%d",
                               "n", "distinct", "lowest", "highest", F.col("n") - 1))
    return {"topics.partition_ids": partition_ids, "topics.unique": violation(
        shared, "topics.unique", topic_id=F.col("topic_id"),
        detail=F.format_string("topic %s (%s) shares its name with %d and its id with %d "
                               "other topic(s)", "name", "topic_id", F.col("same_name") - 1,
                               F.col("same_id") - 1))}
