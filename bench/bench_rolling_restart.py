"""A rolling restart under client load: is anything acknowledged lost, duplicated or
failed while every node restarts, one at a time?

A LocalCluster (3 controller processes, 3 broker agents, default settings) in a temporary
directory; ``--topics`` topics of ``--partitions`` partitions with RF 3. While the load runs
(``tests/support/roll_load.py``): ``--producers`` idempotent acks=all producers at ``--rate``
records/s each (every value unique), a group of ``--consumers`` consumers reading the topics,
and an admin loop (create a topic, add a partition to it, describe it) through AdminClient,
the roll of :mod:`chunkraft.local.rolling_restart` restarts the 3 brokers (controlled
shutdown, then registered, unfenced and back in every ISR before the next), then the 3
controllers (followers first, the leader last, each ready and caught up). ``--settle``
seconds of load before and after it. Then a fresh consumer reads every partition from its
start and each acknowledged value is counted.

Targets (exit 1 if one is missed): 0 failed acknowledged produces, 0 lost records, 0
duplicated records, 0 failed admin ops, the roll completed. Prints one JSON line per step, then
a summary JSON line; does not touch bench/RESULTS.md. ``--quick``: 1 producer at 50/s, 1
topic, 1 consumer. It only signals processes it started, by PID (through LocalCluster).

    PYTHONPATH=src python bench/bench_rolling_restart.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.roll_load import RollLoad, drain

from _report import emit
from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.roll_target import LocalClusterTarget
from chunkraft.local.rolling_restart import RollingRestartError, RollStep, rolling_restart


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    topics = [f"roll-{k}" for k in range(args.topics)]
    cluster = LocalCluster(base, broker_count=3)
    with cluster:
        cluster.wait_ready(timeout=60)
        cluster.start_brokers()
        cluster.wait_brokers_ready(timeout=60)
        with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as admin:
            for topic in topics:
                admin.create_topic(topic, args.partitions, 3)
        load = RollLoad(cluster, topics, producers=args.producers, rate=args.rate,
                        consumers=args.consumers, group="bench-roll")
        steps: list[RollStep] = []
        error: str | None = None

        def progress(step: RollStep) -> None:
            steps.append(step)
            emit({"bench": "rolling_restart", "step": step.as_json()})

        load.start()
        try:
            time.sleep(args.settle)
            started = time.monotonic()
            try:
                with LocalClusterTarget(cluster) as target:
                    rolling_restart(target, timeout=args.node_timeout, progress=progress)
            except RollingRestartError as failure:
                error = str(failure)
            roll_seconds = time.monotonic() - started
            time.sleep(args.settle)
        finally:
            result = load.stop()
        counted = drain(cluster, topics, result.acked, timeout=180.0)
    return {
        "bench": "rolling_restart", "measure": "summary",
        "producers": args.producers, "rate_per_producer": args.rate,
        "topics": args.topics, "partitions": args.partitions,
        "consumers": args.consumers,
        "roll_ok": error is None, "roll_error": error,
        "roll_seconds": round(roll_seconds, 1),
        "steps": {s.node: round(s.seconds, 1) for s in steps},
        "acked": len(result.acked), "failed_acked": len(result.failed),
        "failed_examples": result.failed[:10],
        "lost": len(counted.lost), "duplicated": len(counted.duplicated),
        "drain": counted.as_json(),
        "admin_ops": result.admin_ops, "admin_failed": len(result.admin_failed),
        "admin_failed_examples": result.admin_failed[:10],
        "group_consumed": result.group_consumed, "group_errors": len(result.group_errors),
        "group_error_examples": result.group_errors[:5],
    }


def missed(summary: dict[str, Any]) -> list[str]:
    """The targets the run missed, by name."""
    misses = [name for name in ("failed_acked", "lost", "duplicated", "admin_failed")
              if summary[name] != 0]
    if not summary["roll_ok"]:
        misses.append("roll_ok")
    return misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 producer at 50/s, 1 topic, 1 consumer")
    parser.add_argument("--producers", type=int, default=3)
    parser.add_argument("--rate", type=float, default=100.0,
                        help="records/s of each producer (default 100)")
    parser.add_argument("--topics", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds of load before and after the roll (default 5)")
    parser.add_argument("--node-timeout", type=float, default=120.0,
                        help="seconds each wait of the roll may take (default 120)")
    parser.add_argument("--base-dir", type=Path, default=None,
                        help="cluster directory (default: a fresh temporary one)")
    args = parser.parse_args()
    if args.quick:
        args.producers, args.rate, args.topics, args.consumers = 1, 50.0, 1, 1
    with tempfile.TemporaryDirectory(prefix="bench_roll_") as temporary:
        summary = run(args, args.base_dir or Path(temporary))
    summary["missed"] = missed(summary)
    print(json.dumps(summary, sort_keys=True), flush=True)
    return 1 if summary["missed"] else 0


if __name__ == "__main__":
    sys.exit(main())
