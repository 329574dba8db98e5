"""The Spark engine and the pyarrow engine agree: same counts, samples, load summary, timelines
and diff, on the clean scenario and on every metadata corruption of
tests/support/audit_corruptions (each exit 1); and the same exit status and named file on
every damaged export of tests/support/audit_integrity (exit 2, or an audit of the listed files
only, with a notice).

The one place the two engines are compared. The Spark reports are the session's shared ones
(``scenario_audits`` in conftest.py), which the Spark rule tests read too.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from chunkraft.audit.arrow import run_audit as arrow_audit
from chunkraft.audit.job import main
from chunkraft.audit.model import AuditReport
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_integrity import DAMAGES
from tests.support.audit_snapshots import (
    TIME_MS,
    Scenario,
    clean_records,
    clean_scenario,
    write_snapshot_export,
)
from tests.unit.audit.conftest import ScenarioAudits

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
    assert "chunks.epoch" in SCENARIOS
    assert set(SCENARIOS) == {"clean", *CORRUPTIONS}
    assert all(isinstance(s, Scenario) for s in SCENARIOS.values())
    assert Path(__file__).name == "test_engines_agree.py"


@pytest.fixture(scope="module")
def clean_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_snapshot_export(tmp_path_factory.mktemp("clean") / "snapshot", clean_records(),
                                 offset=1_000, time_ms=TIME_MS)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_engines_agree_on_damaged_exports(damage: str, clean_export: Path, spark: SparkSession,
                                          tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Each engine audits its own copy of the damaged export through the job (the Spark one
    in the session's JVM): same exit status; on exit 2 one stderr line naming the file and
    what differs (the same line when the verification before the engines found it); else a
    clean report of the listed files with the notice."""
    outcomes: dict[str, tuple[int, list[str], dict[str, Any]]] = {}
    expected = None
    for engine in ("spark", "arrow"):
        export = tmp_path / engine / "snapshot"
        shutil.copytree(clean_export, export)
        expected = DAMAGES[damage](export)
        report = tmp_path / engine / "report"
        code = main(["--snapshot", str(export), "--engine", engine, "--report", str(report)])
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        outcomes[engine] = (code, err, json.loads((report / "report.json").read_text()))
    assert expected is not None
    for engine, (code, err, value) in outcomes.items():
        assert code == expected.exit_code, f"{engine}: exit {code}: {err}"
        if code == 2:
            assert len(err) == 1, f"{engine}: {err}"
            assert err[0].startswith("chunkraft audit: error: ")
            assert str(tmp_path / engine / "snapshot") in err[0]
            for fragment in expected.fragments:
                assert fragment in err[0], f"{engine}: {err[0]}"
            assert "Traceback" not in err[0] and "Py4J" not in err[0]
            assert value["status"] == "error" and value["message"] in err[0]
        else:
            assert value["status"] == "clean"
            assert not [r for r in value["rules"] if r["count"]]
            (notice,) = value["notices"]
            assert expected.notice is not None and expected.notice in notice
            assert value["snapshot"]["rows"]["chunks"] == len(
                [r for r in clean_records() if type(r).__name__ == "ChunkRecord"])
            assert err == [f"audit: note: {notice}"]
    spark_line, arrow_line = (outcomes[e][1] for e in ("spark", "arrow"))
    if expected.exit_code == 2 and "cannot read" not in expected.fragments:
        # found before either engine ran: the very same line, but for the copy's path
        assert spark_line[0].replace("/spark/", "/arrow/") == arrow_line[0]
