"""What every rule reads: the snapshot's frames, derived frames computed once, the settings.

Derived frames are built lazily and memoised, so a rule asks for ``ctx.chunk_facts`` and the
window over each partition's chunks is planned once, whichever rules use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from chunkraft.audit.inputs import AuditInputs, AuditSettings
from chunkraft.audit.spark.read import SnapshotFrames, read_snapshot, read_states

__all__ = ["Context", "violation"]


def violation(frame: DataFrame, rule_id: str, *, detail: Column,
              topic_id: Column | None = None, partition_id: Column | None = None,
              start_offset: Column | None = None, broker_id: Column | None = None) -> DataFrame:
    """Rows of ``frame`` as violations of ``rule_id`` (the ``topic`` column is joined later)."""
    def typed(column: Column | None, kind: str) -> Column:
        return (F.lit(None) if column is None else column).cast(kind)

    return frame.select(
        F.lit(rule_id).alias("rule_id"),
        typed(topic_id, "string").alias("topic_id"),
        typed(partition_id, "int").alias("partition_id"),
        typed(start_offset, "bigint").alias("start_offset"),
        typed(broker_id, "int").alias("broker_id"),
        detail.cast("string").alias("detail"),
    )


@dataclass
class Context:
    """The inputs of one audit as DataFrames, and the frames several rules share."""

    spark: SparkSession
    inputs: AuditInputs
    settings: AuditSettings
    now: SnapshotFrames = field(init=False)
    states: dict[str, DataFrame] = field(init=False)

    def __post_init__(self) -> None:
        self.now = read_snapshot(self.spark, self.inputs.snapshot)
        self.states = read_states(self.spark, self.inputs)

    @cached_property
    def before(self) -> SnapshotFrames | None:
        previous = self.inputs.previous
        return None if previous is None else read_snapshot(self.spark, previous)

    @property
    def gap_ms(self) -> int | None:
        """Time between the previous snapshot and the audited one."""
        if self.inputs.previous is None:
            return None
        return (self.inputs.snapshot.manifest.snapshot_time_ms
                - self.inputs.previous.manifest.snapshot_time_ms)

    @property
    def state_brokers(self) -> list[int]:
        return sorted(s.manifest.broker_id for s in self.inputs.broker_states
                      if s.manifest.broker_id is not None)

    @cached_property
    def topic_names(self) -> DataFrame:
        """topic_id -> topic: one name per id (the smallest, should ids repeat)."""
        return (self.now.topics.groupBy("topic_id").agg(F.min("name").alias("topic")))

    @cached_property
    def topic_ids(self) -> DataFrame:
        """topic name -> topic_id (the smallest id, should names repeat)."""
        return (self.now.topics.groupBy(F.col("name").alias("topic"))
                .agg(F.min("topic_id").alias("topic_id")))

    @cached_property
    def chunk_facts(self) -> DataFrame:
        """Each inactive chunk with its predecessor's offsets and timestamp along the partition
        (window over (topic_id, partition_id) by start_offset), and whether it is the last."""
        by_start = Window.partitionBy("topic_id", "partition_id").orderBy("start_offset")
        return self.now.chunks.select(
            "topic_id", "partition_id", "start_offset", "stop_offset", "end_offset",
            "start_timestamp",
            F.lag("stop_offset").over(by_start).alias("prev_stop"),
            F.lag("end_offset").over(by_start).alias("prev_end"),
            F.lag("start_timestamp").over(by_start).alias("prev_timestamp"),
            F.lead("start_offset").over(by_start).isNull().alias("is_last"),
        )

    @cached_property
    def partition_facts(self) -> DataFrame:
        """Per partition row: its chunk count, offsets held in inactive chunks, and the last
        inactive chunk's stop offset and timestamp (null without inactive chunks)."""
        chunks = self.chunk_facts.groupBy("topic_id", "partition_id").agg(
            F.count(F.lit(1)).alias("chunks"),
            F.sum(F.col("end_offset") - F.col("start_offset") + 1).alias("offsets"),
            F.max(F.when(F.col("is_last"), F.col("stop_offset"))).alias("last_stop"),
            F.max(F.when(F.col("is_last"), F.col("start_timestamp"))).alias("last_timestamp"),
        )
        return self.now.partitions.join(chunks, ["topic_id", "partition_id"], "left")

    @cached_property
    def replica_rows(self) -> DataFrame:
        """Partitions and inactive chunks as one frame of replica lists: ``kind`` is
        "partition" or "chunk"; a partition's start_offset is its active chunk's; ``rf`` is
        len(replicas) - len(removing_replicas); ``leader`` is null for chunks."""
        def common(frame: DataFrame, kind: str, leader: Column) -> DataFrame:
            return frame.select(
                F.lit(kind).alias("kind"), "topic_id", "partition_id", "start_offset",
                "replicas", "isr", "adding_replicas", "removing_replicas",
                leader.cast("int").alias("leader"),
                (F.size("replicas") - F.size("removing_replicas")).alias("rf"))

        return common(self.now.partitions, "partition", F.col("leader")).unionByName(
            common(self.now.chunks, "chunk", F.lit(None)))

    @cached_property
    def broker_counts(self) -> DataFrame:
        """Per registered broker: replica entries in partitions and in inactive chunks,
        leaderships and offsets of the inactive chunks it replicates."""
        chunk_replicas = self.now.chunks.select(
            F.explode("replicas").alias("broker_id"),
            (F.col("end_offset") - F.col("start_offset") + 1).alias("offsets"),
        ).groupBy("broker_id").agg(F.count(F.lit(1)).alias("chunk_replicas"),
                                   F.sum("offsets").alias("offsets"))
        partition_replicas = (self.now.partitions.select(F.explode("replicas").alias("broker_id"))
                              .groupBy("broker_id").agg(F.count(F.lit(1))
                                                        .alias("partition_replicas")))
        leaders = (self.now.partitions.where(F.col("leader") >= 0)
                   .groupBy(F.col("leader").alias("broker_id"))
                   .agg(F.count(F.lit(1)).alias("leaders")))
        brokers = self.now.brokers.select("broker_id", "rack", "fenced", "broker_epoch")
        return (brokers.join(partition_replicas, "broker_id", "left")
                .join(chunk_replicas, "broker_id", "left")
                .join(leaders, "broker_id", "left")
                .na.fill(0, ["partition_replicas", "chunk_replicas", "leaders", "offsets"]))
