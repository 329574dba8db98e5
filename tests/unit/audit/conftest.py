"""One SparkSession for every Spark test of the audit (starting one costs ~5 s).

local[1], one shuffle partition, UI and progress bar off, log4j at error. Tests that need
Spark take the ``spark`` fixture; the rest of tests/unit/audit never starts a JVM.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from chunkraft.audit.inputs import AuditInputs, AuditSettings
from chunkraft.audit.model import AuditReport

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.audit_snapshots import Scenario


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    pytest.importorskip("pyspark")
    from chunkraft.audit.spark.session import build_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = build_session("local[1]", {
        # One core: the tiny fixtures gain nothing from two, and the other xdist worker
        # runs the timing-sensitive process tests meanwhile.
        "spark.sql.shuffle.partitions": "1",
        "spark.default.parallelism": "1",
        "spark.driver.memory": "1g",
        # Small test frames: planning, not data, is the cost; skip broadcast-size estimates.
        "spark.sql.adaptive.enabled": "false",
    })
    yield session
    session.stop()


class ScenarioAudits:
    """Each shared scenario's exports and Spark report, made once per test session.

    A Spark audit costs seconds even on the tiny fixtures, so the rule tests and the
    engines' agreement test read the same reports instead of each auditing every scenario.
    Scenario names are ``clean`` and the rule ids of ``CORRUPTIONS``; a ``settings`` override
    is a different audit and is cached under its own key.
    """

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark = spark
        self.root = root
        self._inputs: dict[str, AuditInputs] = {}
        self._reports: dict[tuple[str, AuditSettings | None], AuditReport] = {}

    @staticmethod
    def scenario(name: str) -> Scenario:
        from tests.support.audit_snapshots import CORRUPTIONS, clean_scenario

        return clean_scenario() if name == "clean" else CORRUPTIONS[name]()

    def inputs(self, name: str) -> AuditInputs:
        if name not in self._inputs:
            from tests.support.audit_snapshots import write_scenario

            self._inputs[name] = write_scenario(self.scenario(name),
                                                self.root / name.replace(".", "_"))
        return self._inputs[name]

    def report(self, name: str, settings: AuditSettings | None = None) -> AuditReport:
        key = (name, settings)
        if key not in self._reports:
            from chunkraft.audit.spark.runner import run_audit

            chosen = settings if settings is not None else self.scenario(name).settings
            self._reports[key] = run_audit(self.spark, self.inputs(name), chosen)
        return self._reports[key]


@pytest.fixture(scope="session")
def scenario_audits(spark: SparkSession,
                    tmp_path_factory: pytest.TempPathFactory) -> ScenarioAudits:
    return ScenarioAudits(spark, tmp_path_factory.mktemp("scenarios"))
