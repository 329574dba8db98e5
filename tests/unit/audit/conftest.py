"""One SparkSession for every Spark test of the audit (starting one costs ~5 s).

local[2], one shuffle partition, UI and progress bar off, log4j at error, expressions
interpreted. Tests that need Spark take the ``spark`` fixture; the rest of tests/unit/audit
never starts a JVM. The shared scenario audits run two at a time in threads of the one session
(``ScenarioAudits``).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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
    session = build_session("local[2]", {
        # Two task slots for two audits at a time (ScenarioAudits); one shuffle partition each.
        "spark.sql.shuffle.partitions": "1",
        "spark.default.parallelism": "1",
        "spark.driver.memory": "1g",
        # Small test frames: planning, not data, is the cost; skip broadcast-size estimates,
        # and interpret expressions rather than compile code for a few rows (measured: a warm
        # audit of the clean scenario 11-14 s instead of 19 s). The e2e tests run the job with
        # its defaults (code generation on).
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.codegen.wholeStage": "false",
    })
    yield session
    session.stop()


class ScenarioAudits:
    """Each shared scenario's exports and Spark report, made once per test session.

    A Spark audit costs seconds even on the tiny fixtures, so the rule tests and the
    engines' agreement test read the same reports instead of each auditing every scenario.
    Scenario names are ``clean`` and the rule ids of ``CORRUPTIONS``; a ``settings`` override
    is a different audit and is cached under its own key. The first request starts every
    scenario's audit in a pool of :data:`AUDIT_THREADS` threads (Spark runs concurrent jobs of
    one session; most of a tiny audit is driver-side planning, which then overlaps).
    """

    AUDIT_THREADS = 2

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark = spark
        self.root = root
        self._lock = threading.Lock()
        self._inputs: dict[str, AuditInputs] = {}
        self._reports: dict[tuple[str, AuditSettings | None], Future[AuditReport]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    def scenario(name: str) -> Scenario:
        from tests.support.audit_corruptions import CORRUPTIONS
        from tests.support.audit_snapshots import clean_scenario

        return clean_scenario() if name == "clean" else CORRUPTIONS[name]()

    def inputs(self, name: str) -> AuditInputs:
        with self._lock:
            if name not in self._inputs:
                from tests.support.audit_snapshots import write_scenario

                self._inputs[name] = write_scenario(self.scenario(name),
                                                    self.root / name.replace(".", "_"))
            return self._inputs[name]

    def report(self, name: str, settings: AuditSettings | None = None) -> AuditReport:
        with self._lock:
            if self._pool is None:
                from tests.support.audit_corruptions import CORRUPTIONS

                self._pool = ThreadPoolExecutor(self.AUDIT_THREADS,
                                                thread_name_prefix="scenario-audit")
                for every in ["clean", *CORRUPTIONS]:
                    self._submit(every, None)
            future = self._submit(name, settings)
        return future.result()

    def _submit(self, name: str, settings: AuditSettings | None) -> Future[AuditReport]:
        key = (name, settings)
        if key not in self._reports:
            assert self._pool is not None
            self._reports[key] = self._pool.submit(self._audit, name, settings)
        return self._reports[key]

    def _audit(self, name: str, settings: AuditSettings | None) -> AuditReport:
        from chunkraft.audit.spark.runner import run_audit

        chosen = settings if settings is not None else self.scenario(name).settings
        return run_audit(self.spark, self.inputs(name), chosen)


@pytest.fixture(scope="session")
def scenario_audits(spark: SparkSession,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScenarioAudits]:
    audits = ScenarioAudits(spark, tmp_path_factory.mktemp("scenarios"))
    yield audits
    audits.close()
