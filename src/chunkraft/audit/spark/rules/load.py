"""load.skew: no registered broker holds more than max_skew times the mean chunk replicas.

The per-broker counts are one aggregate of the replica lists (``Context.broker_counts``, a row
per broker); the rule filters them as a constant frame, with the mean over registered brokers a
literal.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation

__all__ = ["rules"]


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    settings = ctx.settings
    rows = [(b.broker_id, ctx.broker_load(b.broker_id)["partition_replicas"]
             + ctx.broker_load(b.broker_id)["chunk_replicas"]) for b in ctx.brokers]
    mean = sum(r for _, r in rows) / len(rows) if rows else None
    counts = ctx.local_frame(rows, "broker_id int, replicas bigint").select(
        "broker_id", "replicas", F.lit(mean).cast("double").alias("mean"))
    skewed = counts.where((F.col("mean") >= settings.min_mean_for_skew)
                          & (F.col("replicas") > F.lit(settings.max_skew) * F.col("mean")))
    return {"load.skew": violation(
        skewed, "load.skew", broker_id=F.col("broker_id"),
        detail=F.format_string("holds %d chunk replicas, %.2fx the mean of %.1f (limit %.2fx)",
                               "replicas", F.col("replicas") / F.col("mean"), "mean",
                               F.lit(settings.max_skew)))}
