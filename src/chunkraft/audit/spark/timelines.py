"""Chunk timelines of a few partitions: those with violations first, then the hottest."""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import Window
from pyspark.sql import functions as F

from chunkraft.audit.model import RuleResult, Timeline, TimelineChunk
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.load_summary import hottest_frame

__all__ = ["timelines"]


def timelines(ctx: Context, results: list[RuleResult]) -> list[Timeline]:
    """At most ``settings.timelines`` partitions, each with its ``settings.timeline_chunks``
    newest inactive chunks and its active chunk, in offset order."""
    limit = ctx.settings.timelines
    chosen: dict[tuple[str, int], str] = {}
    for result in results:
        for sample in result.sample:
            if len(chosen) >= limit:
                break
            if sample.get("topic_id") is not None and sample.get("partition_id") is not None:
                chosen.setdefault((sample["topic_id"], sample["partition_id"]), "violation")
    if len(chosen) < limit:
        for hot in hottest_frame(ctx).limit(limit).collect():
            if len(chosen) >= limit:
                break
            chosen.setdefault((hot["topic_id"], hot["partition_id"]), "hottest")
    if not chosen:
        return []
    wanted = F.broadcast(ctx.spark.createDataFrame(list(chosen), "topic_id string, "
                                                                  "partition_id int"))
    newest = Window.partitionBy("topic_id", "partition_id").orderBy(F.desc("start_offset"))
    inactive = (ctx.now.chunks.join(wanted, ["topic_id", "partition_id"])
                .select("topic_id", "partition_id", "start_offset", "stop_offset",
                        "end_offset", "start_timestamp", "replicas", F.lit(False).alias("active"),
                        F.row_number().over(newest).alias("rank"))
                .where(F.col("rank") <= ctx.settings.timeline_chunks).drop("rank"))
    active = (ctx.now.partitions.join(wanted, ["topic_id", "partition_id"])
              .select("topic_id", "partition_id", "start_offset",
                      F.lit(-1).cast("bigint").alias("stop_offset"),
                      F.lit(-1).cast("bigint").alias("end_offset"), "start_timestamp",
                      "replicas", F.lit(True).alias("active")))
    rows = (inactive.unionByName(active).join(F.broadcast(ctx.topic_names), "topic_id", "left")
            .collect())
    chunks: dict[tuple[str, int], list[TimelineChunk]] = defaultdict(list)
    names: dict[tuple[str, int], str] = {}
    for row in rows:
        key = (row["topic_id"], row["partition_id"])
        names[key] = row["topic"] or ""
        chunks[key].append(TimelineChunk(
            start_offset=int(row["start_offset"]), stop_offset=int(row["stop_offset"]),
            end_offset=int(row["end_offset"]), start_timestamp=int(row["start_timestamp"]),
            replicas=list(row["replicas"] or []), active=bool(row["active"])))
    return [Timeline(topic=names.get(key, ""), topic_id=key[0], partition_id=key[1],
                     chunks=sorted(chunks[key], key=lambda c: (c.active, c.start_offset)),
                     why=why)
            for key, why in chosen.items() if key in chunks]
