"""Every rule that reads one row of :attr:`Context.sequence` (a chunk or a partition, with its
windows): chunk coverage, the replica lists, partition ids, prior partitions and orphans.

One select builds, per row, the array of the violation structs of every rule the row breaks
(``candidate``: null when it does not), and one explode turns them into violation rows, so
these rules cost one pass over the persisted frame, not a plan branch each.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import VIOLATION_STRUCT, Context, candidate

__all__ = ["RULE_IDS", "violations"]

RULE_IDS = (
    "chunks.offsets_ordered", "chunks.contiguous", "chunks.overlap", "chunks.active_start",
    "chunks.timestamps", "replicas.distinct", "replicas.count", "replicas.isr_subset",
    "replicas.leader_in_isr", "replicas.no_leader", "replicas.registered",
    "topics.prior_partition_epochs", "topics.orphans",
)


def _ids(column: str | Column) -> Column:
    values = F.col(column) if isinstance(column, str) else column
    return F.array_join(values.cast("array<string>"), ", ")


def violations(ctx: Context) -> DataFrame:
    """The violations of :data:`RULE_IDS` with ``topic_id`` and ``topic`` (from the row)."""
    c = F.col
    active, chunk = c("active"), ~c("active")
    start, stop, end = c("start_offset"), c("stop_offset"), c("end_offset")
    ts, prev_ts = c("start_timestamp"), c("prev_timestamp")
    key = {"partition_id": c("partition_id"), "start_offset": start}
    found: list[Column] = [
        # --- chunk coverage ---
        candidate(chunk & ~((start <= stop) & (stop <= end)), "chunks.offsets_ordered",
                  F.format_string("start %d, stop %d, end %d: not start <= stop <= end",
                                  start, stop, end), **key),
        candidate(chunk & c("prev_stop").isNotNull() & (start != c("prev_stop") + 1),
                  "chunks.contiguous",
                  F.format_string("starts at %d but the previous chunk stops at %d "
                                  "(expected %d)", start, c("prev_stop"), c("prev_stop") + 1),
                  **key),
        candidate(chunk & c("prev_end").isNotNull() & (end < c("prev_end")), "chunks.overlap",
                  F.format_string("ends at %d but the previous chunk ends later, at %d",
                                  end, c("prev_end")), **key),
        candidate(active & c("prev_stop").isNotNull() & (start != c("prev_stop") + 1),
                  "chunks.active_start",
                  F.format_string("the active chunk starts at %d but the last inactive chunk "
                                  "stops at %d (expected %d)", start, c("prev_stop"),
                                  c("prev_stop") + 1), **key),
        candidate((prev_ts >= 0) & (ts >= 0) & (ts < prev_ts), "chunks.timestamps",
                  F.when(chunk, F.format_string(
                      "StartTimestamp %d is before the previous chunk's %d", ts, prev_ts))
                  .otherwise(F.format_string(
                      "the active chunk's StartTimestamp %d is before the last inactive "
                      "chunk's %d", ts, prev_ts)), **key),
        # --- replica lists ---
        candidate(F.size(F.array_distinct("replicas")) != F.size("replicas"),
                  "replicas.distinct",
                  F.format_string("%s %s lists a broker twice: replicas [%s]", "kind",
                                  start.cast("string"), _ids("replicas")), **key),
        candidate(active & (c("rf") != c("topic_rf")), "replicas.count",
                  F.format_string("partition has %d replicas (less removing), the topic's "
                                  "replication factor is %d", "rf", "topic_rf"), **key),
        candidate(chunk & c("has_partition") & (c("rf") != c("partition_rf")),
                  "replicas.count",
                  F.format_string("chunk has %d replicas (less removing), its partition %d",
                                  "rf", "partition_rf"), **key),
        candidate((F.size("isr") == 0) | (F.size(F.array_except("isr", "replicas")) > 0),
                  "replicas.isr_subset",
                  F.format_string("%s has ISR [%s] but replicas [%s]", "kind", _ids("isr"),
                                  _ids("replicas")), **key),
        candidate(active & (c("leader") >= 0) & ~F.array_contains("isr", c("leader")),
                  "replicas.leader_in_isr",
                  F.format_string("leader %d is not in the ISR [%s]", "leader", _ids("isr")),
                  broker_id=c("leader"), **key),
        candidate(active & (c("leader") < 0), "replicas.no_leader",
                  F.format_string("no leader (%d): the partition is offline", "leader"), **key),
        # --- topics ---
        _prior_partition_epochs(key),
        candidate(active & c("known").isNull(), "topics.orphans",
                  F.format_string("partition %d of topic id %s, which is not a topic",
                                  "partition_id", "topic_id"), **key),
        candidate(chunk & ~c("has_partition"), "topics.orphans",
                  F.format_string("chunk %d of partition %d of topic id %s, which is not a "
                                  "partition", "start_offset", "partition_id", "topic_id"),
                  **key),
    ]
    # replicas.registered: one row per broker named by the row but not registered.
    leader = F.when(c("leader") >= 0, F.array("leader")).otherwise(F.array().cast("array<int>"))
    unknown = F.array_except(F.concat("replicas", "isr", leader), ctx.broker_id_array())
    registered = F.transform(unknown, lambda broker: F.struct(
        F.lit("replicas.registered").alias("rule_id"), c("partition_id").alias("partition_id"),
        start.alias("start_offset"), broker.cast("int").alias("broker_id"),
        F.format_string("%s lists broker %d, which is not registered", c("kind"), broker)
        .alias("detail")))
    every = F.concat(F.filter(F.array(*found), lambda v: v.isNotNull()), registered)
    return (ctx.sequence.select("topic_id", "topic", F.explode(every).alias("v"))
            .select("topic_id", "topic", *(F.col("v")[name].alias(name)
                                           for name in VIOLATION_STRUCT)))


def _prior_partition_epochs(key: dict[str, Column]) -> Column:
    priors = F.col("prior_partition_epochs")
    k = F.size(priors)
    ids = F.array_sort(F.transform(priors, lambda x: x["partition_id"]))
    expected = F.sequence(F.lit(0), k - 1)
    negative = F.exists(priors, lambda x: x["leader_epoch"] < 0)
    return candidate(
        F.col("active") & (k > 0) & ((ids != expected) | (k > F.col("partition_id")) | negative),
        "topics.prior_partition_epochs",
        F.format_string("partition %d lists prior partitions [%s] with leader epochs [%s]; "
                        "expected 0..%d, each once, epochs >= 0", "partition_id",
                        _ids(F.transform(priors, lambda x: x["partition_id"])),
                        _ids(F.transform(priors, lambda x: x["leader_epoch"])), k - 1),
        **key)
