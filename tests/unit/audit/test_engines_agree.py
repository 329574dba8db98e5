"""The Spark engine and the pyarrow engine agree: same counts, samples, load summary, timelines
and diff, on the clean scenario and on every corruption of tests/support/audit_snapshots.

The one place the two engines are compared. The Spark reports are the session's shared ones
(``scenario_audits`` in conftest.py), which the Spark rule tests read too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from chunkraft.audit.arrow import run_audit as arrow_audit
from chunkraft.audit.model import AuditReport
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_snapshots import Scenario, clean_scenario
from tests.unit.audit.conftest import ScenarioAudits

if TYPE_CHECKING:
    pass

SCENARIOS: dict[str, Scenario] = {"clean": clean_scenario(),
                                  **{rule: make() for rule, make in sorted(CORRUPTIONS.items())}}


def _comparable(report: AuditReport) -> dict[str, Any]:
    """What both engines must agree on: everything but timings, time and the engine name."""
    value = asdict(report)
    for key in ("generated_at_ms", "seconds", "engine"):
        value.pop(key)
    return value


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9)
    return bool(a == b)


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Paths where two JSON-like values differ (floats compared to 1e-9)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in {'spark' if k in a else 'arrow'}"
               for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += _differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items in spark, {len(b)} in arrow: {a!r} vs {b!r}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _differences(x, y, f"{where}[{i}]")]
    return [] if _close(a, b) else [f"{where}: spark {a!r}, arrow {b!r}"]


CUT_SCENARIO = "replicas.count"
"""Audited once more with a sample of 2, so both engines are seen cutting a sample."""


def _compare(spark: AuditReport, arrow: AuditReport) -> None:
    assert (spark.engine, arrow.engine) == ("spark", "arrow")
    assert {r.rule_id: r.count for r in spark.rules} == {r.rule_id: r.count for r in arrow.rules}
    differences = _differences(_comparable(spark), _comparable(arrow))
    assert differences == [], "\n".join(differences)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_engines_agree(name: str, scenario_audits: ScenarioAudits) -> None:
    _compare(scenario_audits.report(name),
             arrow_audit(scenario_audits.inputs(name), SCENARIOS[name].settings))


def test_engines_cut_samples_alike(scenario_audits: ScenarioAudits) -> None:
    settings = replace(SCENARIOS[CUT_SCENARIO].settings, sample_size=2, diff_sample_size=2)
    spark = scenario_audits.report(CUT_SCENARIO, settings)
    fired = next(r for r in spark.rules if r.rule_id == CUT_SCENARIO)
    assert fired.count > len(fired.sample) == 2
    _compare(spark, arrow_audit(scenario_audits.inputs(CUT_SCENARIO), settings))


def test_every_scenario_is_compared() -> None:
    assert set(SCENARIOS) == {"clean", *CORRUPTIONS}
    assert all(isinstance(s, Scenario) for s in SCENARIOS.values())
    assert Path(__file__).name == "test_engines_agree.py"
