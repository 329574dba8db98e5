"""The audit's driver JVM with its class-data sharing archive, as real processes.

Each run is a Python process that starts a session through
:func:`chunkraft.audit.spark.session.start_session` with the archive, runs a query, and stops
what it launched. The first run's JVM writes the archive as it exits and the run publishes it;
the next maps it; an archive torn after publication (its record edited to match, so only the
JVM can tell) makes the JVM fail to start, and the run still succeeds: the archive is
discarded and the JVM started without it. (tests/e2e/test_audit.py checks that ``chunkraft
audit`` writes it.) The suite turns the archive off for every other test (tests/conftest.py);
these turn it on, in a temporary cache directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 180
RUN = """
from chunkraft.audit.spark.class_archive import ClassArchive
from chunkraft.audit.spark.session import start_session

spark, launched = start_session("local[1]", None, ClassArchive.for_this_installation())
assert launched is not None
print("rows", spark.range(1000).where("id % 7 = 0").count())
print("writes" if launched.writes_archive else "no-write")
launched.stop(spark)
"""


def run(cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "CHUNKRAFT_SPARK_CDS": "1", "CHUNKRAFT_CACHE_DIR": str(cache),
                   "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                   "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL, env=environment,
                          cwd=cwd)


def archive_files(cache: Path) -> dict[str, int]:
    directory = cache / "spark-cds"
    return ({p.name: p.stat().st_size for p in sorted(directory.iterdir())}
            if directory.is_dir() else {})


def test_the_archive_is_written_once_then_mapped_and_a_torn_one_is_survived(
        tmp_path: Path) -> None:
    cache = tmp_path / "cache"

    first = run(cache, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "rows 143" in first.stdout and "writes" in first.stdout.split()
    files = archive_files(cache)
    archives = [name for name in files if name.endswith(".jsa")]
    assert len(archives) == 1 and files[archives[0]] > 1_000_000, files
    key = archives[0].removesuffix(".jsa")
    record = cache / "spark-cds" / f"{key}.json"
    assert json.loads(record.read_text())["size"] == files[archives[0]]
    assert not [name for name in files if name.endswith(".pending")]

    second = run(cache, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "rows 143" in second.stdout and "no-write" in second.stdout  # it mapped it
    # the JVM's start-up lines are dropped by the session's stderr relay
    assert "Using incubator modules" not in second.stderr
    assert "Setting default log level" not in second.stderr, second.stderr
    assert archive_files(cache) == files

    torn = cache / "spark-cds" / archives[0]
    with torn.open("r+b") as archive:
        archive.truncate(files[archives[0]] // 3)
    record.write_text(json.dumps({"size": torn.stat().st_size}))
    third = run(cache, tmp_path)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "rows 143" in third.stdout
    assert not torn.exists() and not record.exists()  # discarded; the next run writes one
    assert not list(tmp_path.glob("hs_err_pid*.log"))  # the crash report went to the cache
