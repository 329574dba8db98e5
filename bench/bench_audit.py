"""Export and audit of a large controller snapshot: Spark (local[2]) against pyarrow.

Setup (timed, reported apart): a synthetic snapshot file of ``--partitions`` partitions with
``--chunks-per-partition`` inactive chunks each on 12 brokers in 3 racks (bench/_audit_data.py:
a valid chunk chain, some chunks cut in a transaction, RF 3, a few planted violations). Then,
each as its own subprocess, so its wall time and peak memory are its own:

- export: ``chunkraft snapshot export --snapshot FILE --out DIR``: seconds, Parquet MiB per table;
- spark: ``chunkraft audit --snapshot DIR --engine spark --master local[2] --report OUT``: wall
  seconds (JVM start included) and the job's own phases from report.json; ``class_archive``
  says whether its driver JVM mapped the class-data sharing archive (``mapped``), wrote it as
  it exited (``written``: the first run after an install, slower) or ran without (``off``);
- arrow: the same with ``--engine arrow``.

Peak memory is the largest sum of RSS over the subprocess and its descendants (the JVM, the
export's workers), sampled every 0.2 s. Both audits must find the same count per rule, and
the planted violations exactly. Prints JSON lines; ``--save`` appends a section to
bench/RESULTS.md. Heavy at full size: run it alone (``flock /tmp/chunkraft-heavy.lock``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _audit_data
from _report import append_section, emit

BENCH = "audit"


def _tree_rss_mib(root: int) -> float:
    """RSS of ``root`` and all its descendants, in MiB (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21])  # pages
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_measured(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Runs ``command``; wall seconds, peak RSS of its process tree, exit code, output."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    peak = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_mib(process.pid))
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    return {"seconds": seconds, "peak_rss_mib": peak, "rc": process.returncode,
            "stdout": out, "stderr": err}


def _chunkraft() -> list[str]:
    """The venv's ``chunkraft`` script (next to this interpreter), else the one on PATH."""
    script = Path(sys.executable).with_name("chunkraft")
    return [str(script) if script.exists() else "chunkraft"]


def _table_sizes(export: Path) -> dict[str, float]:
    sizes = {}
    for table in sorted(p for p in export.iterdir() if p.is_dir()):
        sizes[table.name] = sum(f.stat().st_size for f in table.rglob("*.parquet")) / 2**20
    return sizes


_DIRECT = """\
import json, sys, time
from pathlib import Path
from chunkraft.audit.inputs import AuditInputs, AuditSettings
engine, export, out, master = sys.argv[1:5]
inputs = AuditInputs.load(export)
if engine == "spark":
    from chunkraft.audit.spark.runner import run_audit
    from chunkraft.audit.spark.session import build_session
    start = time.perf_counter()
    spark = build_session(master)
    session_s = time.perf_counter() - start
    report = run_audit(spark, inputs, AuditSettings())
    report.seconds["session"] = round(session_s, 3)
else:
    from chunkraft.audit.arrow import run_audit
    report = run_audit(inputs, AuditSettings())
Path(out).mkdir(parents=True, exist_ok=True)
(Path(out) / "report.json").write_text(json.dumps(report.to_json()))
sys.exit(report.exit_code())
"""
"""The engine called without the CLI (``--direct``): for when ``chunkraft audit`` is absent."""


def _has_audit_command() -> bool:
    return subprocess.run([*_chunkraft(), "audit", "--help"], capture_output=True).returncode == 0


def _class_archive_state() -> str:
    """What the next ``chunkraft audit`` driver JVM does with its class archive."""
    from chunkraft.audit.spark.class_archive import ClassArchive

    archive = ClassArchive.for_this_installation()
    return "off" if archive is None else "mapped" if archive.usable() else "written"


def audit(engine: str, export: Path, out: Path, master: str, direct: bool) -> dict[str, Any]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    if direct:
        command = [sys.executable, "-c", _DIRECT, engine, str(export), str(out), master]
    else:
        command = [*_chunkraft(), "audit", "--snapshot", str(export), "--engine", engine,
                   "--report", str(out)]
        if engine == "spark":
            command += ["--master", master]
    run = run_measured(command, env)
    if run["rc"] not in (0, 1):
        raise SystemExit(f"{engine} audit failed (exit {run['rc']}): {run['stderr'][-3000:]}")
    report = json.loads((out / "report.json").read_text())
    run["phases"] = report.get("seconds", {})
    run["counts"] = {r["rule_id"]: r["count"] for r in report["rules"]}
    run["skipped"] = sorted(r["rule_id"] for r in report["rules"] if r.get("skipped"))
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--chunks-per-partition", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--engines", default="spark,arrow",
                        help="comma-separated audits to run (spark, arrow)")
    parser.add_argument("--work", default=None,
                        help="directory for the snapshot, export and reports (default: a "
                             "temporary directory, removed afterwards)")
    parser.add_argument("--export", default=None, metavar="DIR",
                        help="audit this existing export instead of generating and exporting")
    parser.add_argument("--direct", action="store_true",
                        help="call each engine's run_audit in a fresh process instead of "
                             "`chunkraft audit` (automatic when that command is absent)")
    parser.add_argument("--save", action="store_true", help="append a section to RESULTS.md")
    args = parser.parse_args()
    engines = [e for e in args.engines.split(",") if e]

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench_audit_"))
    rows: list[dict[str, Any]] = []
    size = {"partitions": args.partitions,
            "chunks": args.partitions * args.chunks_per_partition}

    def report(step: str, metric: str, value: float, unit: str, **extra: Any) -> None:
        row = {"bench": BENCH, "step": step, "metric": metric,
               "value": round(value, 3) if isinstance(value, float) else value, "unit": unit,
               **size, **extra}
        emit(row)
        rows.append(row)

    try:
        if args.export:
            export = Path(args.export)
        else:
            start = time.perf_counter()
            snapshot = _audit_data.write(work / "snapshot", args.partitions,
                                         args.chunks_per_partition)
            report("setup", "snapshot file written", time.perf_counter() - start, "s")
            report("setup", "snapshot file size", snapshot.stat().st_size / 2**20, "MiB")

            export = work / "export"
            run = run_measured([*_chunkraft(), "snapshot", "export", "--snapshot", str(snapshot),
                                "--out", str(export)])
            if run["rc"] != 0:
                raise SystemExit(f"export failed (exit {run['rc']}): {run['stderr'][-3000:]}")
            report("export", "wall time", run["seconds"], "s", target_s=60)
            report("export", "peak RSS (process tree)", run["peak_rss_mib"], "MiB")
            sizes = _table_sizes(export)
            for table, mib in sizes.items():
                report("export", f"parquet {table}", mib, "MiB")
            report("export", "parquet total", sum(sizes.values()), "MiB")

        direct = args.direct or not _has_audit_command()
        if direct:
            print("note: engines called directly (run_audit in a fresh process), not through "
                  "`chunkraft audit`", file=sys.stderr)
        counts: dict[str, dict[str, int]] = {}
        for engine in engines:
            archive_state = _class_archive_state()
            result = audit(engine, export, work / f"report-{engine}", args.master, direct)
            counts[engine] = result["counts"]
            extra = ({"target_s": 60, "class_archive": archive_state} if engine == "spark"
                     else {})
            report(engine, "wall time", result["seconds"], "s", direct=direct, **extra)
            report(engine, "peak RSS (process tree)", result["peak_rss_mib"], "MiB")
            for phase, seconds in result["phases"].items():
                report(engine, f"phase {phase} (report.json)", float(seconds), "s")
            fired = {k: v for k, v in result["counts"].items() if v}
            report(engine, "violations found", sum(fired.values()), "rows", fired=fired,
                   planted=_audit_data.PLANTED, skipped=result["skipped"])
            if fired != _audit_data.PLANTED:
                print(f"MISMATCH: {engine} found {fired}, planted {_audit_data.PLANTED}",
                      file=sys.stderr)
        if len(counts) == 2:
            a, b = counts.values()
            report("compare", "engines agree on every rule's count", int(a == b), "bool")
            if a != b:
                print(f"MISMATCH between engines: {a} vs {b}", file=sys.stderr)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    if args.save:
        table = ["| step | metric | value | unit |", "|---|---|---|---|"]
        table += [f"| {r['step']} | {r['metric']} | {r['value']:,} | {r['unit']} |"
                  for r in rows]
        append_section(f"Audit: {size['partitions']:,} partitions + {size['chunks']:,} chunks, "
                       f"{args.master}", table)


if __name__ == "__main__":
    main()
