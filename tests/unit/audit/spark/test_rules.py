"""The Spark engine on the shared fixtures: each corruption fires its rule with exactly the
expected rows and no other rule fires; the clean cluster fires nothing; rules without their
input are skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.audit.catalog import RULES
from chunkraft.audit.inputs import AuditInputs
from chunkraft.audit.model import VIOLATION_COLUMNS, AuditReport
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_snapshots import (
    sorted_keys,
    violation_key,
    write_scenario,
)
from tests.unit.audit.conftest import ScenarioAudits


@pytest.fixture(scope="module")
def clean_inputs(scenario_audits: ScenarioAudits) -> AuditInputs:
    return scenario_audits.inputs("clean")


@pytest.fixture(scope="module")
def clean_report(scenario_audits: ScenarioAudits) -> AuditReport:
    return scenario_audits.report("clean")


def test_the_clean_cluster_fires_nothing(clean_report: AuditReport) -> None:
    fired = {r.rule_id: r.sample for r in clean_report.rules if r.count or r.skipped}
    assert fired == {}
    assert [r.rule_id for r in clean_report.rules] == [rule.id for rule in RULES]
    assert clean_report.exit_code() == 0


@pytest.mark.parametrize("rule_id", list(CORRUPTIONS))
def test_a_corruption_fires_its_rule_with_exactly_its_rows(
        scenario_audits: ScenarioAudits, rule_id: str) -> None:
    scenario = CORRUPTIONS[rule_id]()
    report = scenario_audits.report(rule_id)
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


def test_exports_from_before_the_config_tables_are_audited_without_config_drift(
        scenario_audits: ScenarioAudits, tmp_path: Path) -> None:
    from chunkraft.audit.spark.runner import run_audit

    scenario = CORRUPTIONS["drift.config"]()
    inputs = write_scenario(scenario, tmp_path, old=True)
    assert "local_configs" not in inputs.broker_states[0].manifest.tables
    report = run_audit(scenario_audits.spark, inputs, scenario.settings)
    assert {r.rule_id: r.count for r in report.rules if r.count} == {}
    assert all(r.skipped is None for r in report.rules)
