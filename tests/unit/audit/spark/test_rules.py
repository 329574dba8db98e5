"""The Spark engine on the shared fixtures: each corruption fires its rule with exactly the
expected rows and no other rule fires; the clean cluster fires nothing; rules without their
input are skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from chunkraft.audit.catalog import RULES
from chunkraft.audit.inputs import AuditInputs, AuditSettings
from chunkraft.audit.model import VIOLATION_COLUMNS, AuditReport
from chunkraft.audit.spark.runner import run_audit
from tests.support.audit_snapshots import (
    CORRUPTIONS,
    clean_scenario,
    sorted_keys,
    violation_key,
    write_scenario,
)


@pytest.fixture(scope="module")
def clean_inputs(tmp_path_factory: pytest.TempPathFactory) -> AuditInputs:
    return write_scenario(clean_scenario(), tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="module")
def clean_report(spark: SparkSession, clean_inputs: AuditInputs) -> AuditReport:
    return run_audit(spark, clean_inputs, AuditSettings())


def test_the_clean_cluster_fires_nothing(clean_report: AuditReport) -> None:
    fired = {r.rule_id: r.sample for r in clean_report.rules if r.count or r.skipped}
    assert fired == {}
    assert [r.rule_id for r in clean_report.rules] == [rule.id for rule in RULES]
    assert clean_report.exit_code() == 0


@pytest.mark.parametrize("rule_id", list(CORRUPTIONS))
def test_a_corruption_fires_its_rule_with_exactly_its_rows(
        spark: SparkSession, tmp_path: Path, rule_id: str) -> None:
    scenario = CORRUPTIONS[rule_id]()
    report = run_audit(spark, write_scenario(scenario, tmp_path), scenario.settings)
    by_id = {r.rule_id: r for r in report.rules}
    others = {r.rule_id: r.sample for r in report.rules if r.rule_id != rule_id and r.count}
    assert others == {}
    result = by_id[rule_id]
    assert result.skipped is None
    assert result.count == len(scenario.expected)
    assert sorted_keys(violation_key(row) for row in result.sample) == sorted_keys(
        scenario.expected)
    for row in result.sample:
        assert list(row) == list(VIOLATION_COLUMNS)
        assert row["rule_id"] == rule_id and row["detail"]
