"""Where a Spark audit spends its time: phases, and every Spark job and stage from the event log.

Runs ``run_audit`` on an existing export in one SparkSession (``--repeat`` times: the first run
pays for JIT and code generation), with Spark's event log written to a temporary directory,
then prints JSON lines: one per run (wall seconds and the report's phases), one per job (start
and wall seconds, from the application's start, and where in the audit it was started) and one
per stage of at least
``--min-stage-s`` (tasks, CPU seconds, shuffle MiB written and read).

    .venv/bin/python bench/profile_spark_audit.py --export DIR [--previous DIR]
        [--brokers-state DIR ...] [--master local[2]] [--repeat 1] [--conf KEY=VALUE ...]

Heavy at full size: run it alone (``flock /tmp/chunkraft-heavy.lock``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from chunkraft.audit.inputs import AuditInputs, AuditSettings
from chunkraft.audit.spark.runner import run_audit
from chunkraft.audit.spark.session import build_session


def _events(directory: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        with path.open(encoding="utf-8") as lines:
            out.extend(json.loads(line) for line in lines)
    return out


def _jobs_and_stages(events: list[dict[str, Any]], min_stage_s: float) -> list[dict[str, Any]]:
    jobs: dict[int, dict[str, Any]] = {}
    stage_job: dict[int, int] = {}
    stages: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    walls: dict[int, float] = {}
    begun: dict[int, float] = {}
    origin = next((e["Timestamp"] for e in events
                   if e["Event"] == "SparkListenerApplicationStart"), 0)
    for event in events:
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            where = (event.get("Properties") or {}).get("callSite.short", "")
            jobs[event["Job ID"]] = {"job": event["Job ID"], "start": event["Submission Time"],
                                     "where": where}
            for stage_id in event["Stage IDs"]:
                stage_job.setdefault(stage_id, event["Job ID"])
        elif kind == "SparkListenerJobEnd":
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            if "Submission Time" in info and "Completion Time" in info:
                walls[info["Stage ID"]] = (info["Completion Time"] - info["Submission Time"]) / 1000
                begun[info["Stage ID"]] = (info["Submission Time"] - origin) / 1000
        elif kind == "SparkListenerTaskEnd":
            metrics = event.get("Task Metrics") or {}
            stage = stages[event["Stage ID"]]
            stage["tasks"] += 1
            stage["cpu_s"] += metrics.get("Executor CPU Time", 0) / 1e9
            written = metrics.get("Shuffle Write Metrics") or {}
            stage["shuffle_written_mib"] += written.get("Shuffle Bytes Written", 0) / 2**20
            read = metrics.get("Shuffle Read Metrics") or {}
            stage["shuffle_read_mib"] += (read.get("Local Bytes Read", 0)
                                          + read.get("Remote Bytes Read", 0)) / 2**20
    lines: list[dict[str, Any]] = []
    for job_id, job in sorted(jobs.items()):
        lines.append({"job": job_id, "start_s": round((job["start"] - origin) / 1000, 2),
                      "wall_s": round((job.get("end", job["start"]) - job["start"]) / 1000, 2),
                      "where": job["where"]})
    for stage_id, wall in sorted(walls.items()):
        if wall >= min_stage_s:
            lines.append({"stage": stage_id, "job": stage_job.get(stage_id),
                          "start_s": begun[stage_id], "wall_s": wall,
                          **{k: round(v, 1) for k, v in stages[stage_id].items()}})
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, required=True)
    parser.add_argument("--previous", type=Path)
    parser.add_argument("--brokers-state", type=Path, nargs="*", default=[])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-stage-s", type=float, default=0.5)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    inputs = AuditInputs.load(args.export, args.previous, tuple(args.brokers_state))
    with tempfile.TemporaryDirectory(prefix="chunkraft-events-") as logs:
        conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file://{logs}",
                "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false",
                **dict(item.split("=", 1) for item in args.conf)}
        began = time.monotonic()
        spark = build_session(args.master, conf)
        print(json.dumps({"session_s": round(time.monotonic() - began, 2)}), flush=True)
        for run in range(args.repeat):
            began = time.monotonic()
            report = run_audit(spark, inputs, AuditSettings())
            print(json.dumps({"run": run, "wall_s": round(time.monotonic() - began, 2),
                              "phases": report.seconds,
                              "fired": {r.rule_id: r.count for r in report.rules if r.count}}),
                  flush=True)
        spark.stop()
        for line in _jobs_and_stages(_events(Path(logs)), args.min_stage_s):
            print(json.dumps(line))


if __name__ == "__main__":
    main()
