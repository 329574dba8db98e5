"""The audit job's flags, exit statuses (0 clean, 1 violations, 2 job error) and reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from chunkraft.audit.job import main, parse_duration
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_snapshots import clean_records, write_snapshot_export


def test_durations() -> None:
    assert parse_duration("10m") == 600_000
    assert parse_duration("30s") == 30_000
    assert parse_duration("2h") == 7_200_000
    assert parse_duration("250ms") == 250
    with pytest.raises(Exception, match="not a duration"):
        parse_duration("ten minutes")


def test_a_bad_input_directory_exits_2_with_one_clear_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert main(["--snapshot", str(tmp_path / "nowhere"), "--report", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--snapshot" in err[0] and "no such directory" in err[0]
    assert json.loads((out / "report.json").read_text())["status"] == "error"


def test_clean_exits_0_and_violations_exit_1(spark: SparkSession, tmp_path: Path) -> None:
    clean = write_snapshot_export(tmp_path / "clean", clean_records(), offset=10,
                                  time_ms=1_000)
    assert main(["--snapshot", str(clean), "--report", str(tmp_path / "r0")]) == 0
    assert json.loads((tmp_path / "r0" / "report.json").read_text())["status"] == "clean"
    bad = write_snapshot_export(tmp_path / "bad", CORRUPTIONS["chunks.contiguous"]().records,
                                offset=10, time_ms=1_000)
    assert main(["--snapshot", str(bad), "--report", str(tmp_path / "r1")]) == 1
    # A warning-only failure passes with --fail-on error.
    ts = write_snapshot_export(tmp_path / "ts", CORRUPTIONS["chunks.timestamps"]().records,
                               offset=10, time_ms=1_000)
    assert main(["--snapshot", str(ts), "--fail-on", "error"]) == 0
    # The job found this session running: it is not the job's to stop.
    assert spark.range(3).count() == 3


def test_the_outcome_line_says_what_was_found_and_what_decided() -> None:
    from dataclasses import replace

    from chunkraft.audit.catalog import Severity
    from chunkraft.audit.job import outcome_line
    from tests.unit.audit.report.builders import rules, violation, violations_report

    warning = {"replicas.no_leader": [violation("replicas.no_leader", "t", 1, 8, None, "x")]}
    report = replace(violations_report(), rules=rules(warning), fail_on=Severity.ERROR)
    assert report.exit_code() == 0
    assert outcome_line(report) == (
        "audit: clean: found replicas.no_leader (1); exit 0: only rules below --fail-on error "
        "fired: replicas.no_leader (1, warning); they are reported but do not fail the audit")
    failing = replace(report, fail_on=Severity.WARNING)
    assert outcome_line(failing).startswith(
        "audit: violations: found replicas.no_leader (1); exit 1: 1 rule of severity warning "
        "or above fired: replicas.no_leader (1) (--fail-on warning)")


def test_fail_on_error_with_only_warnings_prints_what_decided(
        spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ts = write_snapshot_export(tmp_path / "ts", CORRUPTIONS["chunks.timestamps"]().records,
                               offset=10, time_ms=1_000)
    assert main(["--snapshot", str(ts), "--fail-on", "error", "--engine", "arrow"]) == 0
    out = capsys.readouterr().out
    assert "audit: clean: found chunks.timestamps (2); exit 0: only rules below --fail-on " \
           "error fired: chunks.timestamps (2, warning)" in out


def test_a_manifest_key_file_requires_signed_inputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = write_snapshot_export(tmp_path / "s", clean_records(), offset=10, time_ms=1_000)
    (tmp_path / "key").write_text("0123456789abcdef0123456789abcdef\n")
    assert main(["--snapshot", str(snapshot), "--engine", "arrow",
                 "--manifest-key-file", str(tmp_path / "key")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "manifest.json: the manifest is not signed, and a key was given" in line
    (tmp_path / "short").write_text("abc")
    assert main(["--snapshot", str(snapshot), "--engine", "arrow",
                 "--manifest-key-file", str(tmp_path / "short")]) == 2
    assert "at least 16 are needed" in capsys.readouterr().err
