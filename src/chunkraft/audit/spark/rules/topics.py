"""Topics: unique names and ids, partition ids 0..n-1, KIP-253 prior partitions, orphans."""

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
    unique = violation(
        shared, "topics.unique", topic_id=F.col("topic_id"),
        detail=F.format_string("topic %s (%s) shares its name with %d and its id with %d "
                               "other topic(s)", "name", "topic_id", F.col("same_name") - 1,
                               F.col("same_id") - 1))

    per_topic = ctx.now.partitions.groupBy("topic_id").agg(
        F.count(F.lit(1)).alias("n"), F.countDistinct("partition_id").alias("distinct"),
        F.min("partition_id").alias("lowest"), F.max("partition_id").alias("highest"))
    numbered = (topics.select("topic_id").distinct().join(per_topic, "topic_id")
                .where((F.col("distinct") != F.col("n")) | (F.col("lowest") != 0)
                       | (F.col("highest") != F.col("n") - 1)))
    partition_ids = violation(
        numbered, "topics.partition_ids", topic_id=F.col("topic_id"),
        detail=F.format_string("%d partitions (%d distinct ids) numbered %d..%d, not 0..%d",
                               "n", "distinct", "lowest", "highest", F.col("n") - 1))

    p = ctx.now.partitions
    k = F.size("prior_partition_epochs")
    ids = F.array_sort(F.transform("prior_partition_epochs", lambda x: x["partition_id"]))
    expected = F.sequence(F.lit(0), k - 1)
    negative = F.exists("prior_partition_epochs", lambda x: x["leader_epoch"] < 0)
    priors = p.where((k > 0) & ((ids != expected) | (k > F.col("partition_id")) | negative))
    prior_rows = violation(
        priors, "topics.prior_partition_epochs", topic_id=F.col("topic_id"),
        partition_id=F.col("partition_id"), start_offset=F.col("start_offset"),
        detail=F.format_string("partition %d lists prior partitions [%s] with leader epochs "
                               "[%s]; expected 0..%d, each once, epochs >= 0",
                               "partition_id",
                               F.array_join(F.transform("prior_partition_epochs",
                                                        lambda x: x["partition_id"])
                                            .cast("array<string>"), ", "),
                               F.array_join(F.transform("prior_partition_epochs",
                                                        lambda x: x["leader_epoch"])
                                            .cast("array<string>"), ", "),
                               k - 1))

    known = F.broadcast(topics.select("topic_id").distinct())
    orphan_partitions = violation(
        p.join(known, "topic_id", "left_anti"), "topics.orphans", topic_id=F.col("topic_id"),
        partition_id=F.col("partition_id"), start_offset=F.col("start_offset"),
        detail=F.format_string("partition %d of topic id %s, which is not a topic",
                               "partition_id", "topic_id"))
    orphan_chunks = violation(
        ctx.now.chunks.join(p.select("topic_id", "partition_id"),
                            ["topic_id", "partition_id"], "left_anti"),
        "topics.orphans", topic_id=F.col("topic_id"), partition_id=F.col("partition_id"),
        start_offset=F.col("start_offset"),
        detail=F.format_string("chunk %d of partition %d of topic id %s, which is not a "
                               "partition", "start_offset", "partition_id", "topic_id"))
    return {
        "topics.unique": unique,
        "topics.partition_ids": partition_ids,
        "topics.prior_partition_epochs": prior_rows,
        "topics.orphans": orphan_partitions.unionByName(orphan_chunks),
    }
