"""Drift: the brokers' state exports against the controller's assignment.

Only brokers with a state export are judged, and only partitions of known topics and chunks
of known partitions (orphans are ``topics.orphans``' alone). The state names topics, so the
assignment is keyed by topic name (one name per topic id, see ``ctx.topic_names``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation

__all__ = ["rules"]

_NEEDS = "needs --brokers-state"
_IDS = ("drift.missing_replica", "drift.extra_replica", "drift.beyond_end", "drift.gap")


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    if not ctx.inputs.broker_states:
        return dict.fromkeys(_IDS, _NEEDS)
    brokers = ctx.state_brokers
    # Partitions of known topics and chunks of known partitions, with their topic names.
    known = ctx.assignment.where(F.col("known").isNotNull())
    partitions = known.where(F.col("active"))
    chunks = known.where(~F.col("active")).join(
        partitions.select("topic_id", "partition_id"), ["topic_id", "partition_id"],
        "left_semi")
    replicas = ctx.states["local_replicas"]
    held = replicas.where(F.col("first_offset_held") >= 0)
    logs = ctx.states["local_logs"]
    key = {"topic_id": F.col("topic_id"), "partition_id": F.col("partition_id"),
           "start_offset": F.col("start_offset"), "broker_id": F.col("broker_id")}

    # missing_replica: an ISR replica (not being added) holding nothing of an inactive chunk,
    # or a replica of the active chunk without a log of the partition.
    isr = (chunks.select("*", F.explode("isr").alias("broker_id"))
           .where(F.col("broker_id").isin(brokers)
                  & ~F.array_contains("adding_replicas", F.col("broker_id"))))
    held_keys = held.select("broker_id", "topic", "partition_id",
                            F.col("chunk_start_offset").alias("start_offset"))
    missing_chunks = violation(
        isr.join(held_keys, ["broker_id", "topic", "partition_id", "start_offset"],
                 "left_anti"),
        "drift.missing_replica", **key,
        detail=F.format_string("broker %d is an ISR replica of chunk %d..%d but holds none "
                               "of it", "broker_id", "start_offset", "end_offset"))
    active = (partitions.select("*", F.explode("replicas").alias("broker_id"))
              .where(F.col("broker_id").isin(brokers)))
    missing_active = violation(
        active.join(logs.select("broker_id", "topic", "partition_id").distinct(),
                    ["broker_id", "topic", "partition_id"], "left_anti"),
        "drift.missing_replica", **key,
        detail=F.format_string("broker %d is a replica of the active chunk (from %d) but has "
                               "no log of the partition", "broker_id", "start_offset"))

    # extra_replica: data of a chunk the assignment does not give the broker (or unknown).
    assigned = chunks.select("topic", "partition_id", "start_offset", "replicas",
                             "adding_replicas", "removing_replicas").unionByName(
        partitions.select("topic", "partition_id", "start_offset", "replicas",
                          "adding_replicas", "removing_replicas"))
    listed = F.concat("replicas", "adding_replicas", "removing_replicas")
    extra = (held.withColumnRenamed("topic_id", "state_topic_id")
             .join(assigned.withColumnRenamed("start_offset", "chunk_start_offset"),
                   ["topic", "partition_id", "chunk_start_offset"], "left")
             .where(F.col("replicas").isNull() | ~F.array_contains(listed, F.col("broker_id")))
             .join(F.broadcast(ctx.topic_ids), "topic", "left"))
    extra_rows = violation(
        extra, "drift.extra_replica",
        topic_id=F.coalesce(F.col("topic_id"), F.nullif(F.col("state_topic_id"), F.lit(""))),
        partition_id=F.col("partition_id"), start_offset=F.col("chunk_start_offset"),
        broker_id=F.col("broker_id"),
        detail=F.when(F.col("replicas").isNull(), F.format_string(
            "broker %d holds offsets %d..%d (%d bytes) of a chunk the snapshot does not have",
            "broker_id", "first_offset_held", "last_offset_held", "bytes_held"))
        .otherwise(F.format_string(
            "broker %d holds offsets %d..%d (%d bytes) of a chunk assigned to [%s]",
            "broker_id", "first_offset_held", "last_offset_held", "bytes_held",
            F.array_join(F.col("replicas").cast("array<string>"), ", "))))

    # beyond_end: a broker off the active chunk holding past the last chunk assigned to it.
    log_end = logs.groupBy("broker_id", "topic", "partition_id").agg(
        (F.max("log_end_offset") - 1).alias("held_end"))
    assigned_end = (chunks.select("topic_id", "topic", "partition_id", "end_offset",
                                  F.explode(F.array_distinct("replicas")).alias("broker_id"))
                    .groupBy("broker_id", "topic_id", "topic", "partition_id")
                    .agg(F.max("end_offset").alias("assigned_end")))
    beyond = (log_end.join(assigned_end, ["broker_id", "topic", "partition_id"])
              .join(partitions.select("topic", "partition_id", "replicas"),
                    ["topic", "partition_id"])
              .where(~F.array_contains("replicas", F.col("broker_id"))
                     & (F.col("held_end") > F.col("assigned_end"))))
    beyond_rows = violation(
        beyond, "drift.beyond_end", topic_id=F.col("topic_id"),
        partition_id=F.col("partition_id"), broker_id=F.col("broker_id"),
        detail=F.format_string("broker %d holds up to offset %d but its last chunk here ends "
                               "at %d", "broker_id", "held_end", "assigned_end"))

    # gap: an ISR replica with data that stops short of the end, or a segment hole inside
    # [max(start, log start), end].
    with_data = isr.join(
        held.select("broker_id", "topic", "partition_id",
                    F.col("chunk_start_offset").alias("start_offset"), "last_offset_held"),
        ["broker_id", "topic", "partition_id", "start_offset"])
    short = violation(
        with_data.where(F.col("last_offset_held") < F.col("end_offset")), "drift.gap", **key,
        detail=F.format_string("broker %d holds chunk %d..%d only up to offset %d",
                               "broker_id", "start_offset", "end_offset", "last_offset_held"))
    by_base = Window.partitionBy("broker_id", "topic", "partition_id").orderBy("base_offset")
    holes = (ctx.states["local_segments"]
             .select("broker_id", "topic", "partition_id", "base_offset",
                     F.lag("next_offset").over(by_base).alias("previous_next"))
             .where(F.col("base_offset") > F.col("previous_next"))
             .select("broker_id", "topic", "partition_id",
                     F.col("previous_next").alias("hole_first"),
                     (F.col("base_offset") - 1).alias("hole_last")))
    log_start = logs.groupBy("broker_id", "topic", "partition_id").agg(
        F.min("log_start_offset").alias("log_start"))
    holed = (with_data.join(holes, ["broker_id", "topic", "partition_id"])
             .join(log_start, ["broker_id", "topic", "partition_id"], "left")
             .where((F.col("hole_first") <= F.col("end_offset"))
                    & (F.col("hole_last") >= F.greatest(
                        F.col("start_offset"), F.coalesce(F.col("log_start"), F.lit(0))))))
    hole_rows = violation(
        holed, "drift.gap", **key,
        detail=F.format_string("broker %d misses offsets %d..%d of chunk %d..%d",
                               "broker_id", "hole_first", "hole_last", "start_offset",
                               "end_offset"))
    gap = (short.unionByName(hole_rows)
           .groupBy("rule_id", "topic_id", "partition_id", "start_offset", "broker_id")
           .agg(F.min("detail").alias("detail")))
    return {
        "drift.missing_replica": missing_chunks.unionByName(missing_active),
        "drift.extra_replica": extra_rows,
        "drift.beyond_end": beyond_rows,
        "drift.gap": gap,
    }
