"""A campaign, not a test: power cuts of all three controllers under write load, repeated.

Three controller processes (LocalCluster) run with their data dirs on lazyfs
(``chunkraft.chaos.power``): only what the controllers fsync survives a cut (docs/chaos.md,
"Power cuts"). Each round:

1. ``--writers`` threads create topics with unique names (``pc-w<k>-<n>``, one per request,
   a fresh idempotency key each) for a random time in ``--load-seconds`` (seeded); a write is
   acknowledged when a controller answers 200 with error code 0;
2. a canary file is written, without any fsync, into each data dir;
3. the power of all three is cut at once, while the writers are writing; the writers are then
   stopped (what they had in flight is of unknown outcome);
4. all three restart; once ready and on one image (same offset and hash on every node), every
   node's topics are read: every topic ever acknowledged must be there, no name twice, no name
   no writer sent; and every canary must be gone (else the harness lost nothing).

Compaction runs every ``--compaction-entries`` Raft entries, so cuts also fall during dumps.

    .venv/bin/python bench/loop_power_cut.py --cuts 100 --writers 8

Prints one JSON line per cut and a summary line; exits 1 on any loss, hash mismatch, anomaly,
surviving canary or node that fails to come back. Needs root and /dev/fuse.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chunkraft.chaos.power import PowerSupply
from chunkraft.local.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.cluster_client import admin_client
from tests.support.power_load import LoadResult, WriteLoad, check_after_restart

PREFIX = "pc"
READY_TIMEOUT_S = 90.0
CANARY = b"written without fsync: a power cut must lose this\n"


def _properties(compaction_entries: int) -> dict[str, str]:
    return {
        # No broker heartbeats here: keep broker 1 (the topics' replica) unfenced all along.
        "broker.session.timeout.ms": str(7 * 24 * 3600 * 1000),
        "raft.log.compaction.min.entries": str(compaction_entries),
    }


def _write_canaries(cluster: LocalCluster, cut: int) -> list[Path]:
    paths = []
    for node in cluster.nodes.values():
        path = node.data_dir / f"canary-{cut}"
        with open(path, "wb") as file:
            file.write(CANARY)
        paths.append(path)
    return paths


def _surviving_canaries(paths: list[Path]) -> list[str]:
    """Canaries a cut left with any byte (an empty file means only its name was synced)."""
    return [str(path) for path in paths if path.exists() and path.stat().st_size > 0]


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="power-cut-", dir=args.dir))
    cluster = LocalCluster(base, extra_properties=_properties(args.compaction_entries))
    total = LoadResult()
    failures: list[dict[str, Any]] = []
    rounds: list[dict[str, Any]] = []
    started = time.monotonic()
    with PowerSupply(cluster) as power:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=READY_TIMEOUT_S)
        with admin_client(cluster, deadline=READY_TIMEOUT_S) as client:
            client.ensure_unfenced([1], cluster.cluster_id)
        for cut in range(args.cuts):
            if time.monotonic() - started > args.max_seconds:
                failures.append({"cut": cut, "stopped": f"--max-seconds {args.max_seconds}"})
                break
            load_seconds = rng.uniform(*args.load_seconds)
            load = WriteLoad(cluster, f"{PREFIX}-c{cut}", args.writers)
            load.start()
            time.sleep(load_seconds)
            canaries = _write_canaries(cluster, cut)
            power.cut()
            result = load.stop()
            report = power.reports[-1]
            total.acknowledged |= result.acknowledged
            total.unknown |= result.unknown
            total.refused.update(result.refused)
            total.latencies += result.latencies
            restart = time.monotonic()
            cluster.start()
            line: dict[str, Any] = {
                "cut": cut, "load_s": round(load_seconds, 3),
                "acknowledged": len(result.acknowledged), "unknown": len(result.unknown),
                "refused": len(result.refused), "cut_ms": round(report.cut_seconds * 1000, 1),
                "remount_ms": round(report.remount_seconds * 1000, 1),
                "survived_bytes": {n: s.bytes for n, s in report.survived.items()},
                "not_stopped": report.not_stopped,
            }
            try:
                cluster.wait_ready(timeout=READY_TIMEOUT_S)
                after = check_after_restart(cluster, PREFIX, total, timeout=READY_TIMEOUT_S)
            except (AssertionError, RuntimeError, TimeoutError) as error:
                line["error"] = str(error)[:2000]
                failures.append(line)
                print(json.dumps(line), flush=True)
                break
            line.update({
                "restart_to_converged_s": round(time.monotonic() - restart, 2),
                "offset": after.offset, "hash": after.image_hash[:16], "topics": after.topics,
                "acknowledged_total": len(total.acknowledged),
                "lost": sorted(after.lost)[:20], "duplicates": sorted(after.duplicates)[:20],
                "never_written": sorted(after.never_written)[:20],
                "unknown_present": after.unknown_present,
                "canaries_survived": _surviving_canaries(canaries),
                "dumps": sum(1 for n in cluster.nodes.values()
                             if (n.data_dir / "raft" / "dump").exists()),
            })
            rounds.append(line)
            print(json.dumps(line), flush=True)
            if not after.ok or line["canaries_survived"] or result.refused:
                failures.append(line)
                if not args.keep_going:
                    break
        cluster.stop()
    # A controller thread that ran on after the daemons died would have logged ENOTCONN.
    enotconn = sum(node.log_path.read_text(errors="replace").count(
        "Transport endpoint is not connected") for node in cluster.nodes.values())
    restarts = [r["restart_to_converged_s"] for r in rounds]
    summary = {
        "summary": True, "cuts": len(rounds), "writers": args.writers, "seed": args.seed,
        "acknowledged": len(total.acknowledged), "unknown": len(total.unknown),
        "refused": len(total.refused),
        "lost": sum(len(r["lost"]) for r in rounds),
        "not_converged": sum(1 for f in failures if "error" in f),
        "failures": len(failures),
        "canaries_survived": sum(len(r["canaries_survived"]) for r in rounds),
        "cuts_with_running_threads": sum(1 for r in rounds if r["not_stopped"]),
        "enotconn_in_controller_logs": enotconn,
        "unknown_present": rounds[-1]["unknown_present"] if rounds else 0,
        "write_p50_ms": round(1000 * (_percentile(total.latencies, 0.5) or 0), 1),
        "write_p99_ms": round(1000 * (_percentile(total.latencies, 0.99) or 0), 1),
        "restart_to_converged_s": {
            "median": round(statistics.median(restarts), 2) if restarts else None,
            "max": max(restarts) if restarts else None},
        "elapsed_s": round(time.monotonic() - started, 1), "base_dir": str(base),
    }
    print(json.dumps(summary), flush=True)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cuts", type=int, default=10)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load-seconds", type=float, nargs=2, default=(0.5, 3.0),
                        metavar=("MIN", "MAX"), help="load time before each cut (uniform)")
    parser.add_argument("--compaction-entries", type=int, default=200,
                        help="raft.log.compaction.min.entries of the controllers")
    parser.add_argument("--max-seconds", type=float, default=4 * 3600,
                        help="stop starting new cuts after this long")
    parser.add_argument("--keep-going", action="store_true",
                        help="go on after a failed check (not after a node failed to return)")
    parser.add_argument("--dir", default=None, help="where the cluster's directory goes")
    args = parser.parse_args()
    if os.geteuid() != 0 or not Path("/dev/fuse").exists():
        print("needs root and /dev/fuse (lazyfs mounts a FUSE file system)", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
