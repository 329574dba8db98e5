"""What the driver JVM's class-data sharing archive saves: a Spark session's start, first
query and stop, each run a fresh process.

Runs ``--runs`` processes one after the other against one cache directory (a fresh temporary
one unless ``--cache DIR``): the first writes the archive as its JVM exits (``written``), the
others map it (``mapped``); ``--off`` runs them all without it (``off``). Each prints a JSON
line: seconds to start the session (``start_session``, ``local[2]``), to run a first small
query, and to stop the session and its JVM (writing the archive included), and the archive's
size once published.

    .venv/bin/python bench/bench_spark_start.py [--runs 4] [--off] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_ONE_RUN = """
import json, sys, time
from chunkraft.audit.spark.class_archive import ClassArchive
from chunkraft.audit.spark.session import start_session

began = time.monotonic()
spark, launched = start_session("local[2]", None, ClassArchive.for_this_installation())
started = time.monotonic()
spark.range(100_000).selectExpr("sum(id)", "count(distinct id % 97)").collect()
queried = time.monotonic()
mode = launched.archive_mode
launched.stop(spark)
print(json.dumps({"mode": mode, "start_s": round(started - began, 2),
                  "first_query_s": round(queried - started, 2),
                  "stop_s": round(time.monotonic() - queried, 2)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--off", action="store_true", help="without the archive")
    parser.add_argument("--cache", type=Path, help="cache directory (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chunkraft-cds-") as scratch:
        cache = args.cache or Path(scratch)
        env = {**os.environ, "CHUNKRAFT_CACHE_DIR": str(cache),
               "CHUNKRAFT_SPARK_CDS": "0" if args.off else "1",
               "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
               "PYSPARK_DRIVER_PYTHON": sys.executable}
        for run in range(args.runs):
            done = subprocess.run([sys.executable, "-c", _ONE_RUN], env=env, text=True,
                                  capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise SystemExit(f"run {run} failed: {done.stderr[-2000:]}")
            line = json.loads(done.stdout.strip().splitlines()[-1])
            archives = list((cache / "spark-cds").glob("*.jsa"))
            line.update(bench="spark_start", run=run,
                        archive_mib=round(archives[0].stat().st_size / 2**20, 1)
                        if archives else None)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
