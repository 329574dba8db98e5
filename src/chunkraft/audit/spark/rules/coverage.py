"""Chunk coverage per partition: offsets ordered, contiguous, overlaps, the active start and
timestamps, from one window over each partition's inactive chunks (``ctx.chunk_facts``)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation

__all__ = ["rules"]


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    c = ctx.chunk_facts
    key = {"topic_id": F.col("topic_id"), "partition_id": F.col("partition_id"),
           "start_offset": F.col("start_offset")}
    ordered = violation(
        c.where(~((F.col("start_offset") <= F.col("stop_offset"))
                  & (F.col("stop_offset") <= F.col("end_offset")))),
        "chunks.offsets_ordered", **key,
        detail=F.format_string("start %d, stop %d, end %d: not start <= stop <= end",
                               "start_offset", "stop_offset", "end_offset"))
    contiguous = violation(
        c.where(F.col("prev_stop").isNotNull()
                & (F.col("start_offset") != F.col("prev_stop") + 1)),
        "chunks.contiguous", **key,
        detail=F.format_string("starts at %d but the previous chunk stops at %d (expected %d)",
                               "start_offset", "prev_stop", F.col("prev_stop") + 1))
    overlap = violation(
        c.where(F.col("prev_end").isNotNull() & (F.col("end_offset") < F.col("prev_end"))),
        "chunks.overlap", **key,
        detail=F.format_string("ends at %d but the previous chunk ends later, at %d",
                               "end_offset", "prev_end"))
    p = ctx.partition_facts.where(F.col("last_stop").isNotNull())
    active_start = violation(
        p.where(F.col("start_offset") != F.col("last_stop") + 1),
        "chunks.active_start", **key,
        detail=F.format_string("the active chunk starts at %d but the last inactive chunk "
                               "stops at %d (expected %d)", "start_offset", "last_stop",
                               F.col("last_stop") + 1))
    inactive_ts = violation(
        c.where((F.col("prev_timestamp") >= 0) & (F.col("start_timestamp") >= 0)
                & (F.col("start_timestamp") < F.col("prev_timestamp"))),
        "chunks.timestamps", **key,
        detail=F.format_string("StartTimestamp %d is before the previous chunk's %d",
                               "start_timestamp", "prev_timestamp"))
    active_ts = violation(
        p.where((F.col("last_timestamp") >= 0) & (F.col("start_timestamp") >= 0)
                & (F.col("start_timestamp") < F.col("last_timestamp"))),
        "chunks.timestamps", **key,
        detail=F.format_string("the active chunk's StartTimestamp %d is before the last "
                               "inactive chunk's %d", "start_timestamp", "last_timestamp"))
    return {
        "chunks.offsets_ordered": ordered,
        "chunks.contiguous": contiguous,
        "chunks.overlap": overlap,
        "chunks.active_start": active_start,
        "chunks.timestamps": inactive_ts.unionByName(active_ts),
    }
