"""Every rule that reads one row of the assignment (a chunk or a partition) or compares it with
its neighbours along the partition: chunk coverage, the replica lists, prior partitions and
orphans.

:func:`frame` is the one pass they share. Row by row (before any shuffle), cheap conditions
say whether a row may break a row-local rule (the rules' own conditions, written so that a
clean row builds no array); only such rows, rare in a healthy cluster, build their violation
structs (``candidate``: null when a rule holds), so the string formatting and the higher-order
array functions never run on the others. Then narrow rows (keys, offsets, timestamps, RF and
those structs; no replica lists) are shuffled once by partition and every window runs over
that one sort: the previous chunk, the partition's RF, chunk count and offsets. What is kept,
and persisted, is every partition row (the hottest partitions read their chunk counts and
offsets) and every row with a violation.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import VIOLATION_STRUCT, VIOLATIONS_TYPE, Context, candidate

__all__ = ["RULE_IDS", "frame", "violations"]

RULE_IDS = (
    "chunks.offsets_ordered", "chunks.epoch", "chunks.contiguous", "chunks.overlap",
    "chunks.active_start", "chunks.timestamps", "replicas.distinct", "replicas.count",
    "replicas.isr_subset", "replicas.lists", "replicas.leader_in_isr", "replicas.no_leader",
    "replicas.registered",
    "topics.prior_partition_epochs", "topics.orphans",
)

def _ids(column: str | Column) -> Column:
    values = F.col(column) if isinstance(column, str) else column
    return F.array_join(values.cast("array<string>"), ", ")


def _any(conditions: list[Column]) -> Column:
    return reduce(lambda a, b: a | b, conditions)


def _kept(found: list[Column]) -> Column:
    return F.filter(F.array(*found), lambda v: v.isNotNull())


_UNROLLED = 4
"""Replica lists up to this long are checked element by element (no array is built); longer
ones, rare, by the array functions. Measured on the 1M-partition export (AQE off,
bench/profile_spark_audit.py, two runs each): the shuffle's map side took 13.2 and 15.6 CPU-s
with these checks, 21.0 and 22.9 CPU-s with the array functions as the pre-check."""


def _no_repeats(values: str) -> Column:
    """True when the list ``values`` names no broker twice."""
    n = F.size(values)

    def item(i: int) -> Column:
        return F.get(F.col(values), i)

    pairs = [(n > j) & (item(i) == item(j))
             for j in range(1, _UNROLLED) for i in range(j)]
    return F.when(n <= _UNROLLED, ~_any(pairs)).otherwise(
        F.size(F.array_distinct(values)) == n)


def _within(values: str, allowed: str) -> Column:
    """True when every item of the list ``values`` is in the list ``allowed``."""
    n = F.size(values)
    each = [(n <= i) | F.array_contains(allowed, F.get(F.col(values), i))
            for i in range(_UNROLLED)]
    return F.when(n <= _UNROLLED, reduce(lambda a, b: a & b, each)).otherwise(
        F.size(F.array_except(values, allowed)) == 0)


def _registered(values: str, brokers: list[int]) -> Column:
    """True when every item of the list ``values`` is a registered broker (a hash-set
    lookup per item)."""
    n = F.size(values)
    if not brokers:
        return n == 0
    each = [(n <= i) | F.get(F.col(values), i).isin(brokers) for i in range(_UNROLLED)]
    return F.when(n <= _UNROLLED, reduce(lambda a, b: a & b, each)).otherwise(
        F.size(F.array_except(values, F.array(*(F.lit(b) for b in brokers)))) == 0)


def _row_checks(ctx: Context) -> Column:
    """The row-local rules' violation structs of a row of :attr:`Context.assignment`, or null
    when the row's cheap pre-check says it breaks none of them."""
    c = F.col
    active, chunk = c("active"), ~c("active")
    start, stop, end = c("start_offset"), c("stop_offset"), c("end_offset")
    key = {"partition_id": c("partition_id"), "start_offset": start}
    misordered = chunk & ~((start <= stop) & (stop <= end))
    epoch_differs = chunk & (c("chunk_epoch") != c("epoch"))
    repeated = F.size(F.array_distinct("replicas")) != F.size("replicas")
    miscounted = active & (c("rf") != c("topic_rf"))
    not_subset = (F.size("isr") == 0) | (F.size(F.array_except("isr", "replicas")) > 0)
    misfit = _any([F.size(F.array_distinct(name)) != F.size(name)
                   for name in ("isr", "adding_replicas", "removing_replicas")]
                  + [F.size(F.array_except(name, "replicas")) > 0
                     for name in ("adding_replicas", "removing_replicas")])
    leader_out = active & (c("leader") >= 0) & ~F.array_contains("isr", c("leader"))
    leaderless = active & (c("leader") < 0)
    leader = F.when(c("leader") >= 0, F.array("leader")).otherwise(F.array().cast("array<int>"))
    unknown = F.array_except(F.concat("replicas", "isr", leader), ctx.broker_id_array())
    expanded = active & (F.size("prior_partition_epochs") > 0)  # the full check is costlier
    orphan = active & c("known").isNull()
    found = [
        candidate(misordered, "chunks.offsets_ordered",
                  F.format_string("start %d, stop %d, end %d: not start <= stop <= end",
                                  start, stop, end), **key),
        candidate(epoch_differs, "chunks.epoch",
                  F.format_string("ChunkEpoch %d but Epoch %d: they must be equal",
                                  c("chunk_epoch"), c("epoch")), **key),
        candidate(repeated, "replicas.distinct",
                  F.format_string("%s %s lists a broker twice: replicas [%s]", "kind",
                                  start.cast("string"), _ids("replicas")), **key),
        candidate(miscounted, "replicas.count",
                  F.format_string("partition has %d replicas (less removing), the topic's "
                                  "replication factor is %d", "rf", "topic_rf"), **key),
        candidate(not_subset, "replicas.isr_subset",
                  F.format_string("%s has ISR [%s] but replicas [%s]", "kind", _ids("isr"),
                                  _ids("replicas")), **key),
        candidate(misfit, "replicas.lists",
                  F.format_string("%s %s has ISR [%s], adding [%s], removing [%s] for "
                                  "replicas [%s]", "kind", start.cast("string"), _ids("isr"),
                                  _ids("adding_replicas"), _ids("removing_replicas"),
                                  _ids("replicas")), **key),
        candidate(leader_out, "replicas.leader_in_isr",
                  F.format_string("leader %d is not in the ISR [%s]", "leader", _ids("isr")),
                  broker_id=c("leader"), **key),
        candidate(leaderless, "replicas.no_leader",
                  F.format_string("no leader (%d): the partition is offline", "leader"), **key),
        _prior_partition_epochs(key),
        candidate(orphan, "topics.orphans",
                  F.format_string("partition %d of topic id %s, which is not a topic",
                                  "partition_id", "topic_id"), **key),
    ]
    # replicas.registered: one row per broker named by the row but not registered.
    registered = F.transform(unknown, lambda broker: F.struct(
        F.lit("replicas.registered").alias("rule_id"), c("partition_id").alias("partition_id"),
        start.alias("start_offset"), broker.cast("int").alias("broker_id"),
        F.format_string("%s lists broker %d, which is not registered", c("kind"), broker)
        .alias("detail")))
    # The pre-check: the same conditions, written so a clean row builds no array.
    brokers = [b.broker_id for b in ctx.brokers]
    unregistered = ~(_registered("replicas", brokers) & _registered("isr", brokers)
                     & (c("leader").isNull() | (c("leader") < 0)
                        | c("leader").isin(brokers)))
    suspect = _any([misordered, epoch_differs, ~_no_repeats("replicas"), miscounted,
                    (F.size("isr") == 0) | ~_within("isr", "replicas"), leader_out,
                    ~_no_repeats("isr"),
                    (F.size("adding_replicas") > 0)
                    & (~_no_repeats("adding_replicas") | ~_within("adding_replicas", "replicas")),
                    (F.size("removing_replicas") > 0)
                    & (~_no_repeats("removing_replicas")
                       | ~_within("removing_replicas", "replicas")),
                    leaderless, unregistered, expanded, orphan])
    return F.when(suspect, F.concat(_kept(found), registered))


def _window_checks(found_before: Column) -> tuple[Column, Column]:
    """The rules that compare a row with its partition (after the windows of :func:`frame`):
    whether the row may break one (cheap comparisons), and its violation structs added to
    ``found_before`` (null when there are none)."""
    c = F.col
    active, chunk = c("active"), ~c("active")
    start, end = c("start_offset"), c("end_offset")
    ts, prev_ts, prev_stop, prev_end = (c("start_timestamp"), c("prev_timestamp"),
                                        c("prev_stop"), c("prev_end"))
    key = {"partition_id": c("partition_id"), "start_offset": start}
    gap = chunk & prev_stop.isNotNull() & (start != prev_stop + 1)
    overlap = chunk & prev_end.isNotNull() & (end < prev_end)
    active_gap = active & prev_stop.isNotNull() & (start != prev_stop + 1)
    earlier = (prev_ts >= 0) & (ts >= 0) & (ts < prev_ts)
    miscounted = chunk & c("has_partition") & (c("rf") != c("partition_rf"))
    orphan = chunk & ~c("has_partition")
    found = [
        candidate(gap, "chunks.contiguous",
                  F.format_string("starts at %d but the previous chunk stops at %d "
                                  "(expected %d)", start, prev_stop, prev_stop + 1), **key),
        candidate(overlap, "chunks.overlap",
                  F.format_string("ends at %d but the previous chunk ends later, at %d",
                                  end, prev_end), **key),
        candidate(active_gap, "chunks.active_start",
                  F.format_string("the active chunk starts at %d but the last inactive chunk "
                                  "stops at %d (expected %d)", start, prev_stop,
                                  prev_stop + 1), **key),
        candidate(earlier, "chunks.timestamps",
                  F.when(chunk, F.format_string(
                      "StartTimestamp %d is before the previous chunk's %d", ts, prev_ts))
                  .otherwise(F.format_string(
                      "the active chunk's StartTimestamp %d is before the last inactive "
                      "chunk's %d", ts, prev_ts)), **key),
        candidate(miscounted, "replicas.count",
                  F.format_string("chunk has %d replicas (less removing), its partition %d",
                                  "rf", "partition_rf"), **key),
        candidate(orphan, "topics.orphans",
                  F.format_string("chunk %d of partition %d of topic id %s, which is not a "
                                  "partition", "start_offset", "partition_id", "topic_id"),
                  **key),
    ]
    suspect = _any([gap, overlap, active_gap, earlier, miscounted, orphan])
    empty = F.array().cast(VIOLATIONS_TYPE)
    return suspect, (F.when(suspect, F.concat(F.coalesce(found_before, empty), _kept(found)))
                     .otherwise(found_before))


def frame(ctx: Context) -> DataFrame:
    """Every partition row (``active``: ``topic_id``, ``partition_id``, ``start_offset``,
    ``chunks`` and ``offsets`` of its inactive chunks, ``first_active``: false on a repeated
    partition id) and every row with a violation
    (``found``: its violation structs, null on a row without), persisted; built once per
    audit (see the module docstring)."""
    if "sequence" in ctx.memo:
        cached: DataFrame = ctx.memo["sequence"]
        return cached
    c = F.col
    narrow = ctx.assignment.select(
        "active", "topic_id", "partition_id", "start_offset", "stop_offset", "end_offset",
        "start_timestamp", "rf", _row_checks(ctx).alias("found"))
    inactive, active = ~c("active"), c("active")
    along = Window.partitionBy("topic_id", "partition_id").orderBy("active", "start_offset")
    whole = along.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    windowed = narrow.select(
        "*",
        F.lag(F.when(inactive, c("stop_offset"))).over(along).alias("prev_stop"),
        F.lag(F.when(inactive, c("end_offset"))).over(along).alias("prev_end"),
        F.lag(F.when(inactive, c("start_timestamp"))).over(along).alias("prev_timestamp"),
        (active & ~F.coalesce(F.lag(active).over(along), F.lit(False))).alias("first_active"),
        F.max(active).over(whole).alias("has_partition"),
        F.max(F.when(active, c("rf"))).over(whole).alias("partition_rf"),
        F.count(F.when(inactive, F.lit(1))).over(whole).alias("chunks"),
        F.sum(F.when(inactive, c("end_offset") - c("start_offset") + 1)).over(whole)
        .alias("offsets"))
    suspect, found = _window_checks(c("found"))
    # Filter on the cheap conditions, then build the structs of the rows kept: a filter on
    # the built column would be pushed below the projection and build them twice.
    kept = (windowed.where(active | c("found").isNotNull() | suspect)
            .select("active", "topic_id", "partition_id", "start_offset", "chunks", "offsets",
                    "first_active", found.alias("found")))
    persisted = ctx.memo["sequence"] = ctx.persist(kept)
    return persisted


def violations(ctx: Context) -> DataFrame:
    """The violations of :data:`RULE_IDS` with ``topic_id`` (``topic`` is joined later)."""
    return (frame(ctx).where(F.col("found").isNotNull())
            .select("topic_id", F.explode("found").alias("v"))
            .select("topic_id", *(F.col("v")[name].alias(name) for name in VIOLATION_STRUCT)))


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
