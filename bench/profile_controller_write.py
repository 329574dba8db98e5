"""Where a single controller write's time and CPU go: py-spy on the leader under load.

Starts a LocalCluster (3 controllers on 127.0.0.1, its defaults: journal, fsync, Raft password,
bearer tokens), then for each ``--clients`` value runs the ``create-topic`` workload of
``bench_controller.py`` (createTopics of one topic RF 3, the same client) for ``--seconds``
while ``py-spy record`` samples the leader (all threads, idle frames dropped). Writes one
collapsed-stack file per run into ``--out`` and prints one JSON line per run: ops/s, p50, p99
and the top frames by own samples and by inclusive samples of chunkraft-level functions.

Needs ``py-spy`` on PATH (``pip install py-spy``); not a test, never run in CI. Signals only the
processes it started, by PID.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _controller.cluster import CLUSTER_TIMEOUT, Brokers, controller_pids
from _http_load import Workload, percentile, run_load
from chunkraft.local.local_cluster import LocalCluster


def top_frames(collapsed: Path, limit: int) -> dict[str, list[tuple[str, float]]]:
    """Own and inclusive shares of the samples, by frame, from py-spy's collapsed output."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = stack.split(";")
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    share = 100.0 / max(total, 1)
    return {
        "own": [(f, round(c * share, 1)) for f, c in own.most_common(limit)],
        "inclusive": [(f, round(c * share, 1)) for f, c in inclusive.most_common(limit * 3)],
        "samples": [("total", float(total))],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "profile")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--rate", type=int, default=250)
    args = parser.parse_args()
    if shutil.which("py-spy") is None:
        print("py-spy is not on PATH (pip install py-spy)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work, LocalCluster(Path(work)) as cluster:
        cluster.start()
        brokers = Brokers(cluster)  # createTopics RF 3 needs three unfenced brokers
        try:
            run_all(cluster, args)
        finally:
            brokers.close()
    return 0


def run_all(cluster: LocalCluster, args: argparse.Namespace) -> None:
    """One profiled load run per ``--clients`` value, each printed as a JSON line."""
    for clients in args.clients:
        leader = cluster.wait_ready(CLUSTER_TIMEOUT)
        node = cluster.nodes[leader]
        assert node.process is not None
        workload = Workload("create-topic", (node.url,), f"p{clients}",
                            headers=tuple(cluster.headers.items()))
        output = args.out / f"leader-{clients}.txt"
        spy = subprocess.Popen(
            ["py-spy", "record", "--pid", str(node.process.pid), "--format", "raw",
             "--rate", str(args.rate), "--threads", "--output", str(output),
             "--duration", str(int(args.seconds + 5))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            result = run_load(workload, clients=clients, duration=args.seconds)
        finally:
            spy.wait(timeout=args.seconds + 60)
        window = result.window_s or 1.0
        print(json.dumps({
            "clients": clients, "ops_per_s": round(result.ops / window, 1),
            "errors": result.errors, "first_error": result.first_error,
            "p50_ms": round(percentile(result.latencies_ms, 0.5), 2),
            "p99_ms": round(percentile(result.latencies_ms, 0.99), 2),
            "pids": controller_pids(cluster), "profile": str(output),
            **(top_frames(output, args.top) if output.exists() else {}),
        }), flush=True)
        time.sleep(1.0)


if __name__ == "__main__":
    sys.exit(main())
