"""Chunk timelines of a few partitions: those with violations first, then the hottest."""

from __future__ import annotations

import operator
from collections import defaultdict
from functools import reduce

from pyspark.sql import Row
from pyspark.sql import functions as F

from chunkraft.audit.model import RuleResult, Timeline, TimelineChunk
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.load_summary import hottest_rows

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
        for hot in hottest_rows(ctx)[:limit]:
            if len(chosen) >= limit:
                break
            chosen.setdefault((hot["topic_id"], hot["partition_id"]), "hottest")
    if not chosen:
        return []
    # A handful of partitions: a literal filter on the assignment; each keeps its
    # timeline_chunks newest inactive chunks, chosen here.
    wanted = reduce(operator.or_, ((F.col("topic_id") == tid) & (F.col("partition_id") == pid)
                                   for tid, pid in chosen))
    found = (ctx.assignment.where(wanted)
             .select("topic_id", "topic", "partition_id", "start_offset",
                     F.coalesce("stop_offset", F.lit(-1)).alias("stop_offset"),
                     F.coalesce("end_offset", F.lit(-1)).alias("end_offset"),
                     "start_timestamp", "replicas", "active")
             .collect())
    inactive: dict[tuple[str, int], list[Row]] = defaultdict(list)
    rows: list[Row] = []
    for row in found:
        if row["active"]:
            rows.append(row)
        else:
            inactive[(row["topic_id"], row["partition_id"])].append(row)
    newest = max(ctx.settings.timeline_chunks, 0)
    for mine in inactive.values():
        mine.sort(key=lambda r: r["start_offset"])
        rows.extend(mine[-newest:] if newest else [])
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
