"""report.json: the model's JSON with sorted keys, a status, and error reports."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

from chunkraft.audit.catalog import RULES
from chunkraft.audit.report import write_error_report, write_reports
from chunkraft.audit.report.json_report import report_json
from tests.unit.audit.report.builders import EVIL, clean_report, diff_report, violations_report

TOP_LEVEL = {"broker_states", "decided_by", "diff", "engine", "exit_code", "fail_on",
             "generated_at_ms", "load", "notices", "rules", "schema_version", "seconds",
             "settings", "snapshot", "status", "timelines"}
RULE_FIELDS = {"count", "rule_id", "sample", "severity", "skipped", "title"}


def _written(report_dir: Path) -> dict[str, object]:
    value = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    assert isinstance(value, dict)
    return value


def test_clean_report_has_every_field_and_status_clean(tmp_path: Path) -> None:
    write_reports(clean_report(), tmp_path)
    value = _written(tmp_path)
    assert set(value) == TOP_LEVEL
    assert value["status"] == "clean"
    assert value["diff"] is None
    rules = value["rules"]
    assert isinstance(rules, list)
    assert [r["rule_id"] for r in rules] == [rule.id for rule in RULES]
    assert all(set(r) == RULE_FIELDS for r in rules)
    skipped = {r["rule_id"]: r["skipped"] for r in rules if r["skipped"]}
    assert skipped["producer_ids.grow"] == "needs --previous"
    assert skipped["drift.gap"] == "needs --brokers-state"


def test_violations_report_counts_and_samples(tmp_path: Path) -> None:
    write_reports(violations_report(), tmp_path)
    value = _written(tmp_path)
    assert value["status"] == "violations"
    rules = {r["rule_id"]: r for r in value["rules"]}  # type: ignore[attr-defined]
    contiguous = rules["chunks.contiguous"]
    assert contiguous["count"] == 25 and contiguous["severity"] == "error"
    assert [row["topic"] for row in contiguous["sample"]] == ["a&b", EVIL]
    assert rules["replicas.no_leader"]["severity"] == "warning"


def test_diff_and_broker_states_are_written(tmp_path: Path) -> None:
    write_reports(diff_report(), tmp_path)
    value = _written(tmp_path)
    diff = value["diff"]
    assert isinstance(diff, dict)
    assert diff["counts"]["chunks_created"] == 3
    assert diff["previous"]["offset"] == 900
    assert diff["samples"]["partitions_moved"][0]["replicas_after"] == [1, 2]
    assert value["broker_states"][0]["broker_id"] == 0  # type: ignore[index]
    assert value["load"]["brokers"][1]["bytes"] == 8192  # type: ignore[index]


def test_keys_are_sorted_and_output_is_stable() -> None:
    text = report_json(violations_report())
    assert text == report_json(violations_report())
    value = json.loads(text)
    assert list(value) == sorted(value)
    assert list(value["snapshot"]) == sorted(value["snapshot"])
    assert text.endswith("\n")


def test_a_float_json_cannot_hold_becomes_null() -> None:
    report = clean_report()
    load = replace(report.load, skew={"chunk_replicas": math.nan, "leaders": math.inf})
    value = json.loads(report_json(replace(report, load=load)))
    assert value["load"]["skew"] == {"chunk_replicas": None, "leaders": None}


def test_error_report(tmp_path: Path) -> None:
    write_reports(clean_report(), tmp_path)
    path = write_error_report(tmp_path, "no such directory: /x", engine="spark",
                              snapshot_path="/x")
    assert path == tmp_path / "report.json"
    value = _written(tmp_path)
    assert value["status"] == "error"
    assert value["message"] == "no such directory: /x"
    assert value["engine"] == "spark" and value["snapshot_path"] == "/x"
    assert value["schema_version"] == 1 and isinstance(value["generated_at_ms"], int)
    # an earlier run's pages would contradict the error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_error_report_creates_the_directory(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    write_error_report(out, "boom", engine="arrow", snapshot_path=None)
    assert _written(out)["snapshot_path"] is None
