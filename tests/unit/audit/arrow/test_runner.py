"""The arrow engine on the shared scenarios: each corruption fires exactly its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.audit.arrow import run_audit
from chunkraft.audit.catalog import RULES
from chunkraft.audit.model import VIOLATION_COLUMNS, AuditReport
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_snapshots import (
    OLD_TABLES,
    Scenario,
    clean_scenario,
    sorted_keys,
    violation_key,
    write_scenario,
)


def _audit(scenario: Scenario, tmp_path: Path) -> AuditReport:
    inputs = write_scenario(scenario, tmp_path)
    settings = scenario.settings
    # every offending row in the sample, so the rows themselves can be compared
    return run_audit(inputs, type(settings)(**{**settings.__dict__, "sample_size": 1000}))


def test_clean_fires_nothing(tmp_path: Path) -> None:
    report = _audit(clean_scenario(), tmp_path)
    assert report.engine == "arrow"
    assert [r.rule_id for r in report.rules] == [r.id for r in RULES]
    assert {r.rule_id: r.count for r in report.rules if r.count} == {}
    assert all(r.skipped is None for r in report.rules)


@pytest.mark.parametrize("rule_id", sorted(CORRUPTIONS))
def test_corruption_fires_exactly_its_rows(rule_id: str, tmp_path: Path) -> None:
    scenario = CORRUPTIONS[rule_id]()
    report = _audit(scenario, tmp_path)
    fired = {r.rule_id: r.count for r in report.rules if r.count}
    assert fired == {rule_id: len(scenario.expected)}
    result = next(r for r in report.rules if r.rule_id == rule_id)
    assert sorted_keys(violation_key(row) for row in result.sample) == sorted_keys(
        scenario.expected)
    for row in result.sample:
        assert tuple(row) == VIOLATION_COLUMNS
        assert row["rule_id"] == rule_id and row["detail"]


def test_exports_from_before_the_config_tables_are_audited_without_config_drift(
        tmp_path: Path) -> None:
    # The drift.config corruption, written as exports from before the config tables: nothing
    # to compare, so nothing fires, and the other rules still run.
    inputs = write_scenario(CORRUPTIONS["drift.config"](), tmp_path, old=True)
    assert not set(OLD_TABLES) & {name for export in (inputs.snapshot, *inputs.broker_states)
                                  for name in export.manifest.tables}
    report = run_audit(inputs, CORRUPTIONS["drift.config"]().settings)
    assert {r.rule_id: r.count for r in report.rules if r.count} == {}
    assert all(r.skipped is None for r in report.rules)
