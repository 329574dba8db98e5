"""The SparkSession the audit runs in: quiet, small shuffles, and the master only if asked.

``spark-submit --master ...`` decides where a submitted job runs, and a ``.master()`` in code
would override it, so :func:`build_session` sets the master only when the caller names one;
without either, PySpark runs ``local[*]``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

__all__ = ["DEFAULT_CONF", "build_session", "quiet_log4j_file"]

DEFAULT_CONF: dict[str, str] = {
    "spark.app.name": "chunkraft-audit",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # The audit's shuffles are of one snapshot: a few partitions per core beat Spark's 200.
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "2g",
    # Adaptive execution re-plans at every shuffle; the audit's plans have one big shuffle.
    # The 1M-partition audit (report.json seconds.total) took 45.7 s and 50.9 s without it,
    # 51.0 s and 52.9 s with it (bench/RESULTS.md, issue 7).
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
"""Settings applied unless the caller's ``conf`` (or spark-submit's) gives its own."""

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def quiet_log4j_file() -> Path:
    """A log4j2 configuration logging errors only (written once per user in the temp dir)."""
    path = Path(tempfile.gettempdir()) / f"chunkraft-audit-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text(encoding="utf-8") != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J, encoding="utf-8")
        os.replace(tmp, path)
    return path


def build_session(master: str | None = None,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """A SparkSession for the audit (an existing one is reused, with ``conf`` applied).

    ``master`` is set only when given. ``SPARK_LOCAL_IP`` and ``PYSPARK_PYTHON`` default to
    127.0.0.1 and this interpreter, so a laptop run binds locally and executors run the same
    Python (and packages) as the driver.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = dict(DEFAULT_CONF)
    settings["spark.driver.extraJavaOptions"] = (
        f"-Dlog4j.configurationFile=file:{quiet_log4j_file()}")
    settings.update(conf or {})
    builder = SparkSession.builder
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
