"""The Spark engine and the pyarrow engine agree: same counts, samples, load summary, timelines
and diff, on the clean scenario and on every corruption of tests/support/audit_snapshots.

The one place the two engines are compared. Every scenario's exports are written first and
audited by Spark in one pass over the shared session, so the JVM costs one start.
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from chunkraft.audit.arrow import run_audit as arrow_audit
from chunkraft.audit.inputs import AuditInputs
from chunkraft.audit.model import AuditReport
from tests.support.audit_snapshots import CORRUPTIONS, Scenario, clean_scenario, write_scenario

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, AuditInputs]:
    root = tmp_path_factory.mktemp("engines")
    return {name: write_scenario(scenario, root / name.replace(".", "_"))
            for name, scenario in SCENARIOS.items()}


@pytest.fixture(scope="module")
def spark_reports(spark: SparkSession, inputs: dict[str, AuditInputs]) -> _SparkReports:
    return _SparkReports(spark, inputs)


class _SparkReports:
    """Each scenario's Spark report, computed when a test first asks (so ``-k`` runs few)."""

    def __init__(self, spark: SparkSession, inputs: dict[str, AuditInputs]) -> None:
        self.spark = spark
        self.inputs = inputs
        self.reports: dict[str, AuditReport] = {}

    def __getitem__(self, name: str) -> AuditReport:
        if name not in self.reports:
            from chunkraft.audit.spark.runner import run_audit as spark_audit

            self.reports[name] = spark_audit(self.spark, self.inputs[name], _settings(name))
        return self.reports[name]


def _settings(name: str) -> Any:
    # a sample of 3: small enough that the larger corruptions also test the sample's cut
    return replace(SCENARIOS[name].settings, sample_size=3, diff_sample_size=3)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_engines_agree(name: str, inputs: dict[str, AuditInputs],
                       spark_reports: _SparkReports) -> None:
    spark = spark_reports[name]
    arrow = arrow_audit(inputs[name], _settings(name))
    assert (spark.engine, arrow.engine) == ("spark", "arrow")
    assert {r.rule_id: r.count for r in spark.rules} == {r.rule_id: r.count for r in arrow.rules}
    differences = _differences(_comparable(spark), _comparable(arrow))
    assert differences == [], "\n".join(differences)


def test_every_scenario_is_compared() -> None:
    assert set(SCENARIOS) == {"clean", *CORRUPTIONS}
    assert all(isinstance(s, Scenario) for s in SCENARIOS.values())
    assert Path(__file__).name == "test_engines_agree.py"
