"""The controller quorum against its targets, side by side with raw pysyncobj and etcd 3.4.

Every chunkraft figure comes from a real 3-node LocalCluster on 127.0.0.1 (journal, dump and
Raft password on: the LocalCluster defaults), driven over HTTP by the one load client of
``_http_load.py`` (each task its own AsyncClient with one keep-alive connection, clients in their
own processes). Each system gets its own client settings, passed explicitly with its workloads:
chunkraft's requests carry its admin token, etcd's and raw pysyncobj's carry none of ours, and
nothing is read from the environment. Items, each selectable with ``--only``:

- ``partitions``: createPartitions adding 1,000 partitions to a fresh 1-partition topic (RF 3),
  end-to-end latency of one client, p50/p99 (target p50 <= 150 ms);
- ``throughput``: batched records/s (createPartitions adding 100 partitions to a pooled
  1-partition topic: 101 records per op, counted from the quorum's metadata offset growth) and
  single-record ops/s (createTopics of one topic, 1 partition, RF 3: 2 records per op), with 1
  and 32 clients; then the same client code against raw pysyncobj behind a tiny HTTP front
  (``_pysyncobj_front.py``, plus the library's in-process ceiling) and etcd 3.4 (``_etcd.py``,
  ``/v3/kv/put`` of 200-byte values, txn of 100 puts); one table of ratios ours/etcd and
  ours/raw from the same run;
- ``failover``: kill -9 of the leader while one client writes to a follower, time from the kill
  to the first successful write sent after it (chunkraft, and etcd unless --skip-etcd);
- ``restart``: build an image of ``--partitions`` partitions (topics of 1,000), restart once with
  a compaction due 15 s after the start so that every node writes its Raft dump, then kill -9
  all three and time until all are ready and agree on the image hash (the brokers keep
  heartbeating throughout, as real brokers would).

The 3 brokers a chunkraft cluster needs for RF 3 are registered by the script and kept unfenced by
a heartbeat thread (3 heartbeats/s in all). Writes that meet a leader change are counted as
errors in load windows; setup writes are retried with the same idempotency key.

A run fails (exit status 1) when a measured row has errors (except failover's, which are what it
measures), measured nothing, or a step raised; when the leader or the term of the quorum a window
measured moved during it (``_steady``: every partitions, throughput and ceiling window samples
its system's quorum at its edges, and its row carries ``leadership``); when a reference system
(etcd, raw pysyncobj) that was to run has no sound row, the comparison is broken and the run
fails and says why. The reasons are printed at the end, and head the RESULTS.md section.

Prints one JSON line per measurement and appends a dated section to bench/RESULTS.md (unless
--no-save). Not a test: never run it in CI. It only signals processes it started, by PID.
The work is in ``_controller/`` (one module per item, plus the measurement, the verdict, the
ratios and the report); this script parses the flags and runs the items in turn.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _controller.cluster import CLUSTER_TIMEOUT, Brokers
from _controller.failover import bench_failover
from _controller.machine import code_version, other_load
from _controller.partitions import bench_partitions
from _controller.ratios import Comparison, compare
from _controller.report import print_verdict, report
from _controller.restart import bench_restart, dumps_in_logs
from _controller.results import Results
from _controller.throughput import chunkraft_throughput, etcd_throughput, raw_throughput
from _controller.verdict import problems as row_problems
from _etcd import ensure_etcd, etcd_version
from _report import append_section, command_line
from chunkraft.local.local_cluster import LocalCluster

TITLE = "Controller quorum: 3 nodes on 127.0.0.1, journal + password on"
ITEMS = ("partitions", "throughput", "failover", "restart")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="1 run of 5 s per load (--duration still sets the window)")
    parser.add_argument("--only", choices=ITEMS, action="append",
                        help="run only these items (repeatable)")
    parser.add_argument("--raft-process", choices=("separate", "embedded"), default=None,
                        help="raft.process of the chunkraft cluster (default: the node's own "
                             "default, separate); run once with each to compare them")
    parser.add_argument("--skip-etcd", action="store_true")
    parser.add_argument("--skip-raw", action="store_true")
    parser.add_argument("--partitions", type=int, default=1_000_000,
                        help="partitions in the image for the restart item")
    parser.add_argument("--build-timeout", type=float, default=1200.0)
    parser.add_argument("--partition-ops", type=int, default=30)
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of each load window (default: 10, or 5 with --quick)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-save", action="store_true", help="do not append to RESULTS.md")
    parser.add_argument("--keep", action="store_true", help="keep logs and data dirs")
    parser.add_argument("--report-from", type=Path, nargs="+", metavar="JSONL",
                        help="write the RESULTS.md section from the JSON lines of earlier runs "
                             "of this script (their stdout) instead of measuring")
    parser.add_argument("--break-reference", choices=("etcd", "pysyncobj"), action="append",
                        default=[], metavar="SYSTEM",
                        help="test only: send that reference system's load to a port where "
                             "nothing listens, to see the run fail (etcd or pysyncobj)")
    return parser.parse_args(argv)


def references(args: argparse.Namespace) -> list[str]:
    """The reference systems this run is to compare with (a skipped one is not among them)."""
    return [system for system, skipped in (("etcd", args.skip_etcd),
                                           ("pysyncobj", args.skip_raw)) if not skipped]


def verdict(results: Results) -> tuple[Comparison | None, list[str]]:
    """The ratio table (if the throughput item ran) and every reason the run fails."""
    plan = results.plan()
    rows = results.rows
    if plan:
        ran = "throughput" in plan.get("items", ())
        expected = list(plan.get("references", ()))
    else:  # the lines of a run from before the plan row: what its rows show
        ran = any(r.get("item") in ("batched", "single") for r in rows)
        expected = sorted({str(r["system"]) for r in rows if r.get("item") in (
            "batched", "single") and r.get("system") not in (None, "chunkraft")})
    comparison = compare(rows, expected) if ran else None
    missing = [f"{system} was to run but was not found (install it, or pass --skip-{system})"
               for system in plan.get("missing", ())]
    return comparison, [*missing, *row_problems(rows),
                        *(comparison.problems if comparison else [])]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report_from:
        results = Results.from_lines(line for path in args.report_from
                                     for line in path.read_text().splitlines())
        if len(args.report_from) > 1:
            results.note(f"This section was written from the JSON lines of "
                         f"{len(args.report_from)} runs: its ratios mix runs.")
    else:
        results = measure(args)
    comparison, problems = verdict(results)
    print_verdict(results, comparison, problems)
    if not args.no_save:
        append_section(TITLE, report(results, comparison, problems))
    return 1 if problems else 0


def measure(args: argparse.Namespace) -> Results:
    results = Results()
    items = set(args.only or ITEMS)
    duration = args.duration if args.duration is not None else (5.0 if args.quick else 10.0)
    repeats = 1 if args.quick else args.repeats
    etcd_binary = None if args.skip_etcd else ensure_etcd()
    missing = ["etcd"] if not args.skip_etcd and etcd_binary is None and items & {
        "throughput", "failover"} else []
    results.record({"item": "plan", "items": sorted(items), "references": references(args),
                    "missing": missing, "duration_s": duration, "repeats": repeats,
                    "code": code_version(), "command": command_line(),
                    "raft_process": args.raft_process or "separate",
                    "broken_on_purpose": args.break_reference})
    results.note(f"Code measured: {code_version()}. At the start: {other_load()}. This "
                 "script ran one system at a time, plus its client processes; the 3 brokers "
                 "of each chunkraft cluster are a heartbeat thread of the script (3 "
                 "heartbeats/s). Other work on the machine is not under this script's "
                 "control: `other CPU` in the tables is the machine's busy CPU during each "
                 "window minus the servers' and the clients' (from /proc/stat).")
    if etcd_binary and items & {"throughput", "failover"}:
        results.note(f"etcd: {etcd_version(etcd_binary)} (Debian etcd-server), 3 members on "
                     "127.0.0.1, default settings (fsync on).")
    if args.break_reference:
        results.note(f"Test run: the load of {', '.join(args.break_reference)} went to a port "
                     "where nothing listens (--break-reference).")
    with contextlib.ExitStack() as stack:
        if args.keep:
            base = Path(tempfile.mkdtemp(prefix="chunkraft-bench-"))
            print(f"# logs and data dirs are kept under {base}", flush=True)
        else:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="chunkraft-bench-")))
        steps: list[tuple[str, Callable[[], None]]] = []
        if items & {"partitions", "throughput"}:
            steps.append(("chunkraft load", lambda: chunkraft_load(results, args, items, base,
                                                                  duration, repeats)))
        if "throughput" in items and not args.skip_raw:
            steps.append(("raw pysyncobj", lambda: raw_throughput(
                results, base, duration, repeats, "pysyncobj" in args.break_reference)))
        if "throughput" in items and etcd_binary:
            steps.append(("etcd", lambda: etcd_throughput(
                results, base, etcd_binary, duration, repeats, "etcd" in args.break_reference)))
        if "failover" in items:
            steps.append(("failover", lambda: bench_failover(
                results, base, etcd_binary, 2 if args.quick else 5)))
        if "restart" in items:
            steps.append(("restart", lambda: bench_restart(results, base, args.partitions,
                                                           args.build_timeout)))
        for name, step in steps:
            try:
                step()
            except Exception as error:  # report what was measured, and say what failed
                results.record({"item": "failure", "step": name, "error": repr(error)[:500]})
                results.note(f"The {name} step FAILED: {repr(error)[:300]}")
    return results


def chunkraft_load(results: Results, args: argparse.Namespace, items: set[str], base: Path,
                   duration: float, repeats: int) -> None:
    properties = {} if args.raft_process is None else {"raft.process": args.raft_process}
    with LocalCluster(base / "load", extra_properties=properties) as cluster:
        brokers = Brokers(cluster)
        try:
            cluster.wait_ready(CLUSTER_TIMEOUT)
            if "partitions" in items:
                bench_partitions(results, cluster, 10 if args.quick else args.partition_ops)
            if "throughput" in items:
                chunkraft_throughput(results, cluster, duration, repeats)
            dumps = dumps_in_logs(cluster)
            if any(dumps.values()):
                results.note(f"Raft dumps during the load runs: {dumps}")
        finally:
            brokers.close()


if __name__ == "__main__":
    sys.exit(main())
