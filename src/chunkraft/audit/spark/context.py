"""What every rule reads: the snapshot's frames, the small tables on the driver, and the one
partition-sequence frame most rules, the load summary and the timelines share.

Spark pays per stage, not per row, on small inputs, and recomputes any frame several actions
use unless it is persisted. So the audit is a few fused passes:

- the small dimension tables (brokers, topics, producer ids: thousands of rows at most) are
  collected once and used as literals or constant frames (:func:`literal_frame`, broadcast
  without a job or a Python worker) instead of shuffled joins;
- :attr:`Context.assignment` is every inactive chunk and every partition (as its active
  chunk) in one frame with the topic facts, row by row: the per-broker load is one partially
  aggregated pass over it, and the rules that compare rows along a partition read it through
  :func:`chunkraft.audit.spark.rules.sequence.frame`, which shuffles only narrow rows once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from chunkraft.audit.inputs import AuditInputs, AuditSettings
from chunkraft.audit.spark.literal import literal_frame
from chunkraft.audit.spark.read import SnapshotFrames, read_snapshot, read_states

__all__ = ["VIOLATION_STRUCT", "BrokerInfo", "Context", "candidate", "violation"]

VIOLATION_STRUCT = ("rule_id", "partition_id", "start_offset", "broker_id", "detail")
"""The fields of a violation struct built by :func:`candidate` (the row gives ``topic_id``)."""
_VIOLATION_TYPES = {"rule_id": "string", "partition_id": "int", "start_offset": "bigint",
                    "broker_id": "int", "detail": "string"}
VIOLATIONS_TYPE = "array<struct<" + ",".join(
    f"{name}:{_VIOLATION_TYPES[name]}" for name in VIOLATION_STRUCT) + ">>"
"""The Spark type of an array of :func:`candidate` structs."""


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


def candidate(condition: Column, rule_id: str, detail: Column, *,
              partition_id: Column | None = None, start_offset: Column | None = None,
              broker_id: Column | None = None) -> Column:
    """A violation struct when ``condition`` holds on the row, else null (see
    :func:`chunkraft.audit.spark.rules.sequence.frame`, which keeps the non-null ones)."""
    def typed(column: Column | None, kind: str) -> Column:
        return (F.lit(None) if column is None else column).cast(kind)

    fields = {"rule_id": F.lit(rule_id), "partition_id": partition_id,
              "start_offset": start_offset, "broker_id": broker_id, "detail": detail}
    return F.when(condition, F.struct(*(typed(fields[name], _VIOLATION_TYPES[name]).alias(name)
                                        for name in VIOLATION_STRUCT)))


@dataclass(frozen=True)
class BrokerInfo:
    """A registered broker as the audit needs it (collected from the brokers table)."""

    broker_id: int
    rack: str | None
    fenced: bool
    broker_epoch: int | None


def _max_next_id(frames: SnapshotFrames) -> int | None:
    """The controller's largest next producer id (the table has a row or two)."""
    values = [r[0] for r in frames.producer_ids.select("next_producer_id").collect()
              if r[0] is not None]
    return max(values) if values else None


@dataclass
class Context:
    """The inputs of one audit as DataFrames, the small tables as values, the shared frames.

    Call :meth:`close` when done: it unpersists the cached sequence frame.
    """

    spark: SparkSession
    inputs: AuditInputs
    settings: AuditSettings
    now: SnapshotFrames = field(init=False)
    states: dict[str, DataFrame] = field(init=False)
    topic_rows: list[tuple[str | None, str | None]] = field(init=False)
    brokers: list[BrokerInfo] = field(init=False)
    memo: dict[str, Any] = field(init=False, default_factory=dict)  # small collected results
    _persisted: list[DataFrame] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.now = read_snapshot(self.spark, self.inputs.snapshot)
        self.states = read_states(self.spark, self.inputs)
        self.topic_rows = [(r["name"], r["topic_id"]) for r in self.now.topics.collect()]
        self.brokers = sorted(
            (BrokerInfo(r["broker_id"], r["rack"], bool(r["fenced"]), r["broker_epoch"])
             for r in self.now.brokers.select("broker_id", "rack", "fenced", "broker_epoch")
             .collect() if r["broker_id"] is not None),
            key=lambda b: b.broker_id)

    def close(self) -> None:
        """Releases what the audit persisted."""
        for frame in self._persisted:
            frame.unpersist()
        self._persisted.clear()

    @cached_property
    def before(self) -> SnapshotFrames | None:
        previous = self.inputs.previous
        return None if previous is None else read_snapshot(self.spark, previous)

    @cached_property
    def next_producer_id(self) -> int | None:
        return _max_next_id(self.now)

    @cached_property
    def previous_next_producer_id(self) -> int | None:
        return None if self.before is None else _max_next_id(self.before)

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
    def names(self) -> dict[str, str | None]:
        """topic_id -> topic: one name per id (the smallest, should ids repeat)."""
        found: dict[str, list[str]] = {}
        for name, topic_id in self.topic_rows:
            if topic_id is not None:
                found.setdefault(topic_id, [])
                if name is not None:
                    found[topic_id].append(name)
        return {tid: (min(names) if names else None) for tid, names in found.items()}

    @cached_property
    def topic_names(self) -> DataFrame:
        """topic_id -> topic as a constant frame (broadcast without a shuffle); ``known`` is
        true on every row, so a left join tells known topics apart."""
        return self.local_frame(
            [(tid, name, True) for tid, name in sorted(self.names.items())],
            "topic_id string, topic string, known boolean")

    @cached_property
    def topic_ids(self) -> DataFrame:
        """topic name -> topic_id (the smallest id, should names repeat), a constant frame."""
        found: dict[str, str] = {}
        for name, topic_id in self.topic_rows:
            if name is not None and topic_id is not None:
                found[name] = min(found.get(name, topic_id), topic_id)
        return self.local_frame(sorted(found.items()), "topic string, topic_id string")

    @cached_property
    def topic_rfs(self) -> dict[str, int | None]:
        """Per topic id of the partitions table: its replication factor, the most common
        partition RF (replicas less removing), the larger on a tie. One small aggregate of the
        partitions (a row per topic and RF: hash aggregation, no sort), collected."""
        rf = (F.size("replicas") - F.size("removing_replicas")).alias("rf")
        per_rf: dict[str, list[tuple[int, int | None]]] = {}
        for r in self.now.partitions.groupBy("topic_id", rf).agg(
                F.count(F.lit(1)).alias("n")).collect():
            per_rf.setdefault(r["topic_id"], []).append((int(r["n"]), r["rf"]))
        # desc n, then desc RF with a null RF last (as Spark's desc ordering)
        return {tid: max(counts, key=lambda nr: (nr[0], nr[1] is not None, nr[1] or 0))[1]
                for tid, counts in per_rf.items()}

    @cached_property
    def topic_facts(self) -> DataFrame:
        """Per topic id (of the topics or the partitions table): ``topic`` (name), ``known``
        (true if in the topics table, else null) and ``topic_rf``; a constant frame."""
        ids = set(self.names) | {tid for tid in self.topic_rfs if tid is not None}
        return self.local_frame(
            [(tid, self.names.get(tid), True if tid in self.names else None,
              self.topic_rfs.get(tid)) for tid in sorted(ids)],
            "topic_id string, topic string, known boolean, topic_rf int")

    def broker_id_array(self) -> Column:
        """The registered broker ids as an array literal."""
        return F.array(*(F.lit(b.broker_id) for b in self.brokers)).cast("array<int>")

    @cached_property
    def assignment(self) -> DataFrame:
        """Every inactive chunk (``active`` false, ``kind`` "chunk") and every partition as its
        active chunk (``active`` true, ``kind`` "partition"; stop/end and the chunk's
        ``chunk_epoch``/``epoch`` null, ``leader`` and
        ``prior_partition_epochs`` set) with its replica lists, ``rf`` (replicas less
        removing) and the topic facts ``topic``, ``known``, ``topic_rf`` (a broadcast constant
        frame). Row by row, no shuffle: each action that reads it scans the Parquet files
        for the columns it needs."""
        def side(frame: DataFrame, active: bool) -> DataFrame:
            chunk = not active
            return frame.select(
                F.lit(active).alias("active"),
                F.lit("partition" if active else "chunk").alias("kind"),
                "topic_id", "partition_id", "start_offset",
                (F.col("stop_offset") if chunk else F.lit(None).cast("bigint"))
                .alias("stop_offset"),
                (F.col("end_offset") if chunk else F.lit(None).cast("bigint"))
                .alias("end_offset"),
                (F.col("chunk_epoch") if chunk else F.lit(None).cast("int"))
                .alias("chunk_epoch"),
                (F.col("epoch") if chunk else F.lit(None).cast("int")).alias("epoch"),
                "start_timestamp", "replicas", "isr", "adding_replicas", "removing_replicas",
                (F.lit(None) if chunk else F.col("leader")).cast("int").alias("leader"),
                (F.lit(None).cast("array<struct<partition_id:int,leader_epoch:int>>") if chunk
                 else F.col("prior_partition_epochs")).alias("prior_partition_epochs"),
                (F.size("replicas") - F.size("removing_replicas")).alias("rf"))

        rows = side(self.now.chunks, False).unionByName(side(self.now.partitions, True))
        return rows.join(F.broadcast(self.topic_facts), "topic_id", "left")

    def persist(self, frame: DataFrame) -> DataFrame:
        """``frame`` persisted until :meth:`close`."""
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(frame)
        return frame

    @cached_property
    def broker_counts(self) -> dict[int | None, dict[str, int]]:
        """Per broker id (registered or not): replica entries in partitions and in inactive
        chunks, leaderships and offsets of the inactive chunks it replicates. One aggregate
        over the chunks' and partitions' replica lists (exploded, no higher-order function)
        and the partitions' leaders, partially aggregated before its one small shuffle; the
        result (a row per broker) is collected."""
        chunks = self.now.chunks.select(
            F.explode("replicas").alias("broker_id"), F.lit(True).alias("chunk"),
            F.lit(False).alias("leader"),
            (F.col("end_offset") - F.col("start_offset") + 1).alias("offsets"))
        partitions = self.now.partitions.select(
            F.explode("replicas").alias("broker_id"), F.lit(False).alias("chunk"),
            F.lit(False).alias("leader"), F.lit(None).cast("bigint").alias("offsets"))
        leaders = self.now.partitions.where(F.col("leader") >= 0).select(
            F.col("leader").alias("broker_id"), F.lit(False).alias("chunk"),
            F.lit(True).alias("leader"), F.lit(None).cast("bigint").alias("offsets"))
        not_leader = ~F.col("leader")
        rows = chunks.unionByName(partitions).unionByName(leaders).groupBy("broker_id").agg(
            F.count(F.when(not_leader & ~F.col("chunk"), 1)).alias("partition_replicas"),
            F.count(F.when(not_leader & F.col("chunk"), 1)).alias("chunk_replicas"),
            F.count(F.when(F.col("leader"), 1)).alias("leaders"),
            F.sum(F.when(F.col("chunk"), F.col("offsets"))).alias("offsets")).collect()
        return {r["broker_id"]: {k: int(r[k] or 0) for k in
                                 ("partition_replicas", "chunk_replicas", "leaders", "offsets")}
                for r in rows}

    def broker_load(self, broker_id: int) -> dict[str, int]:
        """A registered broker's counts (zeros when it holds nothing)."""
        zero = {"partition_replicas": 0, "chunk_replicas": 0, "leaders": 0, "offsets": 0}
        return self.broker_counts.get(broker_id, zero)

    def local_frame(self, rows: list[tuple[Any, ...]], schema: str) -> DataFrame:
        """A small driver-side table as a DataFrame (a constant Spark folds: no Python
        worker, no job to read it)."""
        return literal_frame(self.spark, rows, schema)

