"""AuditReport: exit codes by severity and the JSON that report.json holds."""

from __future__ import annotations

import json

from chunkraft.audit.catalog import RULES, Severity
from chunkraft.audit.model import (
    AuditReport,
    BrokerLoad,
    ExportSummary,
    LoadSummary,
    RuleResult,
)


def _report(counts: dict[str, int]) -> AuditReport:
    summary = ExportSummary("/x", "controller-snapshot", "c1", 10, 1, 1_000, {"chunks": 3})
    rules = [RuleResult(rule.id, counts.get(rule.id, 0),
                        [{"rule_id": rule.id}] if counts.get(rule.id) else [])
             for rule in RULES]
    load = LoadSummary([BrokerLoad(0, "r1", False, 3, 4, 1, 100)], [], {"chunk_replicas": 1.0},
                       [])
    return AuditReport(1, "spark", summary, [], rules, load, [])


def test_clean_report_exits_zero() -> None:
    report = _report({})
    assert report.exit_code() == 0
    assert report.to_json()["status"] == "clean"


def test_an_error_fails_the_audit() -> None:
    report = _report({"chunks.contiguous": 2})
    assert report.violations() == 2
    assert report.exit_code() == 1
    assert report.to_json()["status"] == "violations"


def test_a_warning_fails_only_when_warnings_count() -> None:
    report = _report({"load.skew": 1})
    assert report.exit_code(Severity.WARNING) == 1
    assert report.exit_code(Severity.ERROR) == 0


def test_json_names_each_rule_with_severity_and_title_and_is_serializable() -> None:
    value = _report({"replicas.count": 1}).to_json()
    json.dumps(value)
    rule = next(r for r in value["rules"] if r["rule_id"] == "replicas.count")
    assert rule["severity"] == "error" and rule["count"] == 1
    assert rule["title"] == "replica count = the replication factor"
    assert value["schema_version"] == 1 and value["engine"] == "spark"


def test_status_follows_fail_on_as_the_exit_code_does() -> None:
    from dataclasses import replace

    report = replace(_report({"load.skew": 1}), fail_on=Severity.ERROR)
    assert report.exit_code() == 0
    value = report.to_json()
    assert (value["status"], value["fail_on"]) == ("clean", "error")
    assert next(r for r in value["rules"] if r["rule_id"] == "load.skew")["count"] == 1
