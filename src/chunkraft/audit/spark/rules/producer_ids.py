"""Producer ids: the brokers' blocks are disjoint and below the controller's next id, and the
next id never goes back. The controller's next id is a row or two: collected, a literal."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from chunkraft.audit.spark.context import Context, violation

__all__ = ["rules"]


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    found: dict[str, DataFrame | str] = {}
    next_id = ctx.next_producer_id
    if not ctx.inputs.broker_states:
        found["producer_ids.blocks_overlap"] = "needs --brokers-state"
    else:
        # Few rows (a block or two per broker): one window over all of them is fine.
        earlier = (Window.orderBy("block_start", "block_end", "broker_id")
                   .rowsBetween(Window.unboundedPreceding, -1))
        blocks = ctx.states["producer_id_blocks"].select(
            "broker_id", "block_start", "block_end",
            F.max("block_end").over(earlier).alias("earlier_end"),
            F.lit(next_id).cast("bigint").alias("next_id"))
        overlapping = (F.col("earlier_end").isNotNull()
                       & (F.col("block_start") < F.col("earlier_end")))
        beyond = F.col("next_id").isNotNull() & (F.col("block_end") > F.col("next_id"))
        found["producer_ids.blocks_overlap"] = violation(
            blocks.where(overlapping | beyond), "producer_ids.blocks_overlap",
            broker_id=F.col("broker_id"),
            detail=F.concat(
                F.format_string("block %d..%d", "block_start", F.col("block_end") - 1),
                F.when(overlapping, F.format_string(" starts before an earlier block's end %d",
                                                    "earlier_end")).otherwise(""),
                F.when(beyond, F.format_string(" reaches past the next producer id %d",
                                               "next_id")).otherwise("")))
    if ctx.before is None:
        found["producer_ids.grow"] = "needs --previous"
    else:
        ids = ctx.local_frame([(next_id, ctx.previous_next_producer_id)],
                              "next_id bigint, previous_id bigint")
        found["producer_ids.grow"] = violation(
            ids.where(F.col("next_id") < F.col("previous_id")), "producer_ids.grow",
            detail=F.format_string("next producer id %d, but %d in the previous snapshot",
                                   "next_id", "previous_id"))
    return found
