"""A steady leader over minutes: idle quorums, then quorums under writing clients.

Runs a 3-controller and a 5-controller LocalCluster (each with 3 broker agents that register,
heartbeat and follow the metadata stream) side by side on 127.0.0.1:

1. ``idle``: nothing but the brokers' heartbeats for ``--minutes``;
2. ``writes``: ``--clients`` admin clients per quorum (each creating a topic, then altering its
   config, in turn, at ``--rate`` writes/s per client) for ``--minutes``.

For every phase and quorum it counts the leaderships the controllers logged (``the leader is
node N at Raft term T``: one per election that produced a leader, whichever nodes saw it) and
each controller's own counts (``leadership_changes``, ``term_increments`` of
``/controller/v1/quorum``), and prints one JSON line. Targets: 1 election in all (the first),
0 later changes of leader or term, 0 failed writes. A phase that misses them fails the run
(exit status 1) and says why. ``tests/integration/test_steady_leader.py`` is the short version
(60 s a phase) that CI runs.

Appends a dated section to bench/RESULTS.md unless ``--no-save``. Not a test: never run in CI.
It only signals processes it started, by PID.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import append_section, emit
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.steady_leader import AdminWriter, leaderships_in_logs

SIZES = (3, 5)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--clients", type=int, default=4, help="writing clients per quorum")
    parser.add_argument("--rate", type=float, default=5.0, help="writes/s of each client")
    parser.add_argument("--no-save", action="store_true")
    return parser.parse_args(argv)


def phase_row(phase: str, cluster: LocalCluster, seconds: float,
              before: set[tuple[str, int]], writers: list[AdminWriter]) -> dict[str, Any]:
    """The JSON row of one phase of one quorum, with its verdict (``problems``)."""
    seen = leaderships_in_logs(node.log_path for node in cluster.nodes.values())
    sample = cluster.leadership()
    new = sorted(seen - before)
    problems = []
    expected_new = 1 if not before else 0  # the first phase holds the first election
    if len(new) != expected_new:
        problems.append(f"{len(new)} new leaderships, expected {expected_new}: {new}")
    if len(sample.leaders()) != 1 or None in sample.leaders():
        problems.append(f"no single leader at the end: {sample.summary()}")
    changes = {node_id: node.leadership_changes for node_id, node in sample.nodes.items()}
    if any(count != 1 for count in changes.values()):
        problems.append(f"leadership changes per node {changes}, expected 1 each")
    failed = [f for w in writers for f in w.failed]
    if failed:
        problems.append(f"{len(failed)} failed writes, first: {failed[:3]}")
    return {"bench": "steady_leader", "phase": phase, "controllers": cluster.size,
            "seconds": round(seconds, 1), "leaderships_logged": len(seen),
            "new_leaderships": len(new), "leadership": sample.as_json(),
            "writes": sum(w.done for w in writers), "failed_writes": len(failed),
            "problems": problems}


def run(args: argparse.Namespace, base: Path) -> list[dict[str, Any]]:
    clusters = [LocalCluster(base / f"quorum-{size}", size=size, broker_count=3)
                for size in SIZES]
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        for cluster in clusters:
            stack.enter_context(cluster)  # stops its brokers, then its controllers
        for cluster in clusters:
            cluster.wait_ready(timeout=120)
            cluster.start_brokers()
        for cluster in clusters:
            cluster.wait_brokers_ready(timeout=120)
        seconds = args.minutes * 60
        before = {id(c): set[tuple[str, int]]() for c in clusters}
        for phase in ("idle", "writes"):
            writers = {id(c): [AdminWriter(c.urls, c.admin_token, f"{phase}{c.size}-{i}",
                                           args.rate)
                               for i in range(args.clients if phase == "writes" else 0)]
                       for c in clusters}
            started = time.monotonic()
            for group in writers.values():
                for writer in group:
                    writer.start()
            time.sleep(seconds)
            for group in writers.values():
                for writer in group:
                    writer.stopping.set()
                for writer in group:
                    writer.join(timeout=60)
            took = time.monotonic() - started
            for cluster in clusters:
                row = phase_row(phase, cluster, took, before[id(cluster)], writers[id(cluster)])
                emit(row)
                rows.append(row)
                before[id(cluster)] = leaderships_in_logs(
                    node.log_path for node in cluster.nodes.values())
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-steady-") as tmp:
        rows = run(args, Path(tmp))
    failed = [row for row in rows if row["problems"]]
    lines = ["| phase | controllers | seconds | new leaderships | leadership changes per node "
             "| writes | failed writes |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        changes = ", ".join(f"{node}: {seen['leadership_changes']}"
                            for node, seen in row["leadership"].items())
        lines.append(f"| {row['phase']} | {row['controllers']} | {row['seconds']} | "
                     f"{row['new_leaderships']} | {changes} | {row['writes']} | "
                     f"{row['failed_writes']} |")
    for row in failed:
        lines.append(f"\nFAILED {row['phase']} / {row['controllers']} controllers: "
                     + "; ".join(row["problems"]))
    if not args.no_save:
        append_section(f"A steady leader: {args.minutes:g} minutes idle, then {args.clients} "
                       f"writing clients per quorum", lines)
    for row in failed:
        print(f"FAILED {row['phase']} / {row['controllers']} controllers: "
              + "; ".join(row["problems"]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
