"""drift.config: the topic configuration brokers apply against the metadata's.

The snapshot's ``configs`` table holds only the keys set, so it is collected and turned into
the three lookup tables of :mod:`chunkraft.audit.config_expectations` on the driver (the
arrow engine builds the very same), joined to the brokers' ``local_configs`` as constant
frames. Topics are matched by name (``ctx.topic_ids``); rows of topics the snapshot does not
have are not judged.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from chunkraft.audit.config_expectations import (
    BROKER_SOURCE,
    DEFAULT_SOURCE,
    TOPIC_SOURCE,
    expectations,
)
from chunkraft.audit.spark.context import Context, violation
from chunkraft.audit.spark.read import read_table

__all__ = ["rules"]

RULE = "drift.config"


def rules(ctx: Context) -> dict[str, DataFrame | str]:
    if not ctx.inputs.broker_states:
        return {RULE: "needs --brokers-state"}
    snapshot = ctx.inputs.snapshot
    rows: list[tuple[int | None, str | None, str | None, str | None]] = []
    if "configs" in snapshot.manifest.tables:  # exports from before the table have none
        rows = [(r[0], r[1], r[2], r[3]) for r in read_table(ctx.spark, snapshot, "configs")
                .select("resource_type", "resource_name", "name", "value").collect()]
    wanted = expectations(rows)
    by_topic = ctx.local_frame(list(wanted.topic),
                               "topic string, name string, v_topic string")
    by_broker = ctx.local_frame(list(wanted.broker),
                                "broker_id int, name string, v_broker string")
    by_default = ctx.local_frame(list(wanted.default),
                                 "name string, v_default string")
    judged = (ctx.states["local_configs"]
              .join(F.broadcast(ctx.topic_ids), "topic")
              .join(F.broadcast(by_topic), ["topic", "name"], "left")
              .join(F.broadcast(by_broker), ["broker_id", "name"], "left")
              .join(F.broadcast(by_default), ["name"], "left")
              .withColumn("expected", F.coalesce("v_topic", "v_broker", "v_default"))
              .where(F.col("expected").isNotNull() & (F.col("value") != F.col("expected"))))
    source = (F.when(F.col("v_topic").isNotNull(), F.lit(TOPIC_SOURCE))
              .when(F.col("v_broker").isNotNull(), F.lit(BROKER_SOURCE))
              .otherwise(F.lit(DEFAULT_SOURCE)))
    return {RULE: violation(
        judged, RULE, topic_id=F.col("topic_id"), broker_id=F.col("broker_id"),
        detail=F.format_string("broker %d applies %s=%s (%s) to %s but the metadata says %s "
                               "(%s)", "broker_id", "name", "value", "source", "topic",
                               "expected", source))}
