"""run_audit: every rule, the load summary, timelines and the diff, as one AuditReport.

All rules' violations go into one union; one action computes every rule's exact count and its
first ``sample_size`` rows (a window over rule_id), so the snapshot is scanned once for them.
"""

from __future__ import annotations

import dataclasses
import time
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from chunkraft.audit.catalog import RULES
from chunkraft.audit.inputs import AuditInputs, AuditSettings, ExportInput
from chunkraft.audit.model import VIOLATION_COLUMNS, AuditReport, ExportSummary, RuleResult
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.diff import diff_summary
from chunkraft.audit.spark.load_summary import load_summary
from chunkraft.audit.spark.rules import all_rules
from chunkraft.audit.spark.timelines import timelines

__all__ = ["export_summary", "run_audit", "violations_frame"]


def export_summary(export: ExportInput) -> ExportSummary:
    """The manifest of an input as the report shows it."""
    m = export.manifest
    return ExportSummary(path=str(export.path), kind=m.kind.value, cluster_id=m.cluster_id,
                         offset=m.offset, epoch=m.epoch, snapshot_time_ms=m.snapshot_time_ms,
                         rows=export.rows(),
                         broker_id=m.broker_id)


def violations_frame(ctx: Context) -> tuple[DataFrame, dict[str, str]]:
    """The union of every rule's violations, with ``topic``, and the skipped rules."""
    fused, others, skipped = all_rules(ctx)
    union = reduce(DataFrame.unionByName, [fused, *others])
    named = union.join(F.broadcast(ctx.topic_names.drop("known")), "topic_id", "left")
    return named.select(*VIOLATION_COLUMNS), skipped


def _rule_results(ctx: Context) -> list[RuleResult]:
    union, skipped = violations_frame(ctx)
    counts: dict[str, int] = {}
    samples: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    order = Window.partitionBy("rule_id").orderBy(
        *(F.asc_nulls_first(c) for c in ("topic", "partition_id", "start_offset",
                                          "broker_id", "topic_id", "detail")))
    ranked = union.select("*", F.row_number().over(order).alias("_rank"),
                          F.count(F.lit(1)).over(Window.partitionBy("rule_id"))
                          .alias("_count"))
    for row in (ranked.where(F.col("_rank") <= max(ctx.settings.sample_size, 1))
                .collect()):
        values = row.asDict()
        counts[values["rule_id"]] = int(values["_count"])
        if values["_rank"] <= ctx.settings.sample_size:
            samples.setdefault(values["rule_id"], []).append(
                (values["_rank"], {c: values[c] for c in VIOLATION_COLUMNS}))
    results = []
    for rule in RULES:
        if rule.id in skipped:
            results.append(RuleResult(rule.id, 0, [], skipped=skipped[rule.id]))
        else:
            sample = [r for _, r in sorted(samples.get(rule.id, []), key=lambda x: x[0])]
            results.append(RuleResult(rule.id, counts.get(rule.id, 0), sample))
    return results


def run_audit(spark: SparkSession, inputs: AuditInputs,
              settings: AuditSettings | None = None) -> AuditReport:
    """Audits ``inputs`` with ``spark``: every catalog rule (skipped without its input), the
    load summary, timelines and, with a previous snapshot, the diff."""
    settings = settings or AuditSettings()
    seconds: dict[str, float] = {}
    began = time.monotonic()
    ctx = Context(spark, inputs, settings)
    try:
        seconds["read"] = time.monotonic() - began
        mark = time.monotonic()
        results = _rule_results(ctx)
        seconds["rules"] = time.monotonic() - mark
        mark = time.monotonic()
        load = load_summary(ctx)
        drawn = timelines(ctx, results)
        seconds["load"] = time.monotonic() - mark
        diff = None
        if inputs.previous is not None:
            mark = time.monotonic()
            diff = diff_summary(ctx, export_summary(inputs.previous))
            seconds["diff"] = time.monotonic() - mark
    finally:
        ctx.close()
    seconds["total"] = time.monotonic() - began
    return AuditReport(
        generated_at_ms=int(time.time() * 1000), engine="spark",
        snapshot=export_summary(inputs.snapshot),
        broker_states=[export_summary(s) for s in inputs.broker_states],
        rules=results, load=load, timelines=drawn, diff=diff,
        seconds={**{k: round(v, 3) for k, v in seconds.items()},
                 "verify": round(inputs.verify_seconds, 3)},
        settings=dataclasses.asdict(settings), notices=inputs.notices)
