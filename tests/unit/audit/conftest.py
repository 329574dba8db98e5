"""One SparkSession for every Spark test of the audit (starting one costs ~5 s).

local[2], two shuffle partitions, UI and progress bar off, log4j at error. Tests that need
Spark take the ``spark`` fixture; the rest of tests/unit/audit never starts a JVM.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    pytest.importorskip("pyspark")
    from chunkraft.audit.spark.session import build_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = build_session("local[2]", {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "1g",
        # Small test frames: planning, not data, is the cost; skip broadcast-size estimates.
        "spark.sql.adaptive.enabled": "false",
    })
    yield session
    session.stop()
