"""load.skew: no registered broker holds more than max_skew times the mean chunk replicas."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation

__all__ = ["rules"]


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    settings = ctx.settings
    counts = ctx.broker_counts.select(
        "broker_id", (F.col("partition_replicas") + F.col("chunk_replicas")).alias("replicas"))
    mean = counts.agg(F.avg("replicas").alias("mean"))
    skewed = (counts.crossJoin(mean)
              .where((F.col("mean") >= settings.min_mean_for_skew)
                     & (F.col("replicas") > F.lit(settings.max_skew) * F.col("mean"))))
    return {"load.skew": violation(
        skewed, "load.skew", broker_id=F.col("broker_id"),
        detail=F.format_string("holds %d chunk replicas, %.2fx the mean of %.1f (limit %.2fx)",
                               "replicas", F.col("replicas") / F.col("mean"), "mean",
                               F.lit(settings.max_skew)))}
