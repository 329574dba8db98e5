"""Export of a large controller snapshot to Parquet: wall time, peak memory, Parquet size.

Generates (once, into --dir) a snapshot of --topics x --partitions partitions with --chunks
inactive chunks each, with bench_image's generator (the defaults: 1,000,000 partitions and
5,000,000 chunks, the issue's target), then runs ``chunkraft snapshot export --snapshot`` as a
fresh process per --workers value and prints one JSON line per run. Appends a section to
bench/RESULTS.md only with --save.

    .venv/bin/python bench/bench_export.py --dir /tmp/a_bench --workers 2 1
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _report import append_section, emit
from bench_image import generate
from chunkraft.records import encode_record
from chunkraft.records.files import list_snapshots, write_snapshot


def snapshot_of(directory: Path, topics: int, partitions: int, chunks: int) -> Path:
    """The generated snapshot in ``directory`` (written the first time)."""
    records = topics * partitions * (chunks + 1) + topics + 12
    for found in list_snapshots(directory):
        if found.end_offset == records:
            return found.path
    started = time.perf_counter()
    path = write_snapshot(directory, end_offset=records, epoch=3, cluster_id=uuid.UUID(int=7),
                          records=map(encode_record, generate(topics, partitions, chunks)),
                          append_time_ms=int(time.time() * 1000))
    emit({"generated": str(path), "records": records,
          "seconds": round(time.perf_counter() - started, 1)})
    return path


def run(snapshot: Path, out: Path, workers: int) -> dict[str, object]:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "chunkraft", "snapshot", "export", "--snapshot",
                    str(snapshot), "--out", str(out), "--workers", str(workers)], check=True)
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in out.rglob("*.parquet"))
    row: dict[str, object] = {"workers": workers, "seconds": round(seconds, 1),
           "peak_rss_mib_any_process": round(
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
           "parquet_mib": round(size / 2**20, 1),
           "snapshot_mib": round(snapshot.stat().st_size / 2**20, 1)}
    shutil.rmtree(out, ignore_errors=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/chunkraft-bench-export"))
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--save", action="store_true", help="append to bench/RESULTS.md")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    snapshot = snapshot_of(args.dir, args.topics, args.partitions, args.chunks)
    rows = []
    for workers in args.workers:
        row = run(snapshot, args.dir / "export", workers)
        emit(row)
        rows.append(row)
    if args.save:
        append_section(
            f"Snapshot export: {args.topics * args.partitions:,} partitions, "
            f"{args.topics * args.partitions * args.chunks:,} chunks",
            [f"- {r['workers']} worker(s): {r['seconds']} s, Parquet {r['parquet_mib']} MiB "
             f"(snapshot {r['snapshot_mib']} MiB)" for r in rows])


if __name__ == "__main__":
    main()
