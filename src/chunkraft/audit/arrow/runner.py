"""The audit in one process with pyarrow: ``run_audit(inputs, settings) -> AuditReport``.

The same rules as the Spark engine (:mod:`chunkraft.audit.catalog`, with the spec's
clarifications), the same counts and samples; for clusters small enough to audit without a JVM
(``chunkraft audit --engine arrow``). Everything is held in memory: the whole snapshot's
columns, a few GB for millions of chunks.
"""

from __future__ import annotations

import dataclasses
import time

from chunkraft.audit.arrow.diff import diff
from chunkraft.audit.arrow.found import Found, found, to_result
from chunkraft.audit.arrow.load_summary import load_summary, skew_rule
from chunkraft.audit.arrow.read import read_inputs
from chunkraft.audit.arrow.rules_chunks import chunk_rules
from chunkraft.audit.arrow.rules_configs import config_rules
from chunkraft.audit.arrow.rules_drift import drift_rules
from chunkraft.audit.arrow.rules_replicas import replica_rules
from chunkraft.audit.arrow.rules_topics import producer_id_rules, topic_rules
from chunkraft.audit.arrow.timelines import timelines
from chunkraft.audit.catalog import RULES, Needs
from chunkraft.audit.inputs import AuditInputs, AuditSettings, ExportInput
from chunkraft.audit.model import AuditReport, ExportSummary, RuleResult

__all__ = ["ENGINE", "export_summary", "run_audit"]

ENGINE = "arrow"


def export_summary(export: ExportInput) -> ExportSummary:
    m = export.manifest
    return ExportSummary(path=str(export.path), kind=m.kind.value, cluster_id=m.cluster_id,
                         offset=m.offset, epoch=m.epoch, snapshot_time_ms=m.snapshot_time_ms,
                         rows=export.rows(),
                         broker_id=m.broker_id)


def run_audit(inputs: AuditInputs, settings: AuditSettings) -> AuditReport:
    """Audits ``inputs``: every catalog rule, the load summary, timelines and the diff."""
    started = time.perf_counter()
    seconds: dict[str, float] = {}

    mark = time.perf_counter()
    topics, snap, prev, states = read_inputs(inputs)
    seconds["read"] = time.perf_counter() - mark

    mark = time.perf_counter()
    items: list[Found] = [*chunk_rules(snap), *replica_rules(snap, prev, settings),
                          *topic_rules(snap), *producer_id_rules(snap, prev, states),
                          *drift_rules(snap, topics, states), *config_rules(snap, states)]
    seconds["rules"] = time.perf_counter() - mark

    mark = time.perf_counter()
    load = load_summary(snap, topics, states, settings)
    items.append(skew_rule(load, settings))
    seconds["load"] = time.perf_counter() - mark

    mark = time.perf_counter()
    by_id = {item.rule_id: item for item in items}
    results: list[RuleResult] = []
    for rule in RULES:
        skipped = None
        if rule.needs is Needs.PREVIOUS and prev is None:
            skipped = "needs --previous"
        elif rule.needs is Needs.BROKER_STATES and states is None:
            skipped = "needs --brokers-state"
        if skipped is not None:
            results.append(RuleResult(rule.id, 0, [], skipped))
        else:
            results.append(to_result(by_id.get(rule.id) or found(rule.id, 0, str), topics,
                                     settings.sample_size))
    seconds["rules"] += time.perf_counter() - mark

    mark = time.perf_counter()
    drawn = timelines(snap, topics, results, settings)
    seconds["load"] += time.perf_counter() - mark

    mark = time.perf_counter()
    summary = None
    if prev is not None and inputs.previous is not None:
        summary = diff(snap, prev, topics, export_summary(inputs.previous),
                       settings.diff_sample_size)
    seconds["diff"] = time.perf_counter() - mark
    seconds["total"] = time.perf_counter() - started
    return AuditReport(
        generated_at_ms=int(time.time() * 1000), engine=ENGINE,
        snapshot=export_summary(inputs.snapshot),
        broker_states=[export_summary(s) for s in inputs.broker_states],
        rules=results, load=load, timelines=drawn, diff=summary,
        seconds={**{k: round(v, 3) for k, v in seconds.items()},
                 "verify": round(inputs.verify_seconds, 3)},
        settings=dataclasses.asdict(settings), notices=inputs.notices)
