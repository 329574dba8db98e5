"""Where a controller write's time goes: py-spy on the leader under load, Raft thread or process.

For each ``--raft-process`` mode (``embedded``: the Raft node is a thread of the API process;
``separate``: it is a process of its own, the default), starts a LocalCluster (3 controllers on
127.0.0.1, its defaults: journal, fsync, Raft password, bearer tokens), then for each
``--clients`` value runs the ``create-topic`` workload of ``bench_controller.py`` (createTopics
of one topic RF 3, the same client) for ``--seconds`` while ``py-spy record`` samples the
leader and its Raft process (all threads, idle ones too: py-spy cannot tell a thread blocked in
poll or recv from a running one on this machine, so every thread is sampled in every round and
a thread's samples in a function are its share of the window's wall time there).
Writes one collapsed-stack file per run into ``--out`` and prints one JSON line per run:
ops/s, p50, p99, the top frames by own and by inclusive samples, and, per thread role (the
event loop, the Raft tick thread, the channel reader, the Raft process's server), where its
wall time went.

Needs ``py-spy`` (``pip install py-spy``); not a test, never run in CI. Signals only the
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
from _http_load import LoadResult, Workload, percentile, run_load
from chunkraft.local.local_cluster import LocalCluster


def frame_name(frame: str) -> str:
    """``func (path/file.py:12)`` -> ``func (file.py)``: one name for every line of a function."""
    func, _, where = frame.partition(" (")
    file = where.rsplit(":", 1)[0].rsplit("/", 1)[-1]
    return f"{func} ({file})" if file else func


def thread_role(frames: list[str]) -> str:
    """Which thread of a controller a stack belongs to, from its process and thread frames."""
    processes = [f for f in frames if f.startswith("process ")]
    in_raft_process = any("raft_process" in p for p in processes[1:])
    thread = next((f for f in frames if f.startswith("thread (")), "")
    if any("_autoTickThread" in f for f in frames):
        return "raft tick thread"
    if "chunkraft-raft-channel" in thread:
        return "channel reader (API process)"
    if thread.endswith("MainThread"):
        return "raft process main (serves the API)" if in_raft_process else "event loop (API)"
    return "other threads of the Raft process" if in_raft_process else "other threads (API)"


def top_frames(collapsed: Path, limit: int) -> dict[str, object]:
    """Own and inclusive shares of the samples, by frame, and where each thread role's wall
    time went (its leaves' shares of its own samples)."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    roles: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = stack.split(";")
        code = [f for f in frames if not f.startswith(("process ", "thread ("))]
        leaf = frame_name(code[-1]) if code else "(no Python frame)"
        roles[thread_role(frames)][leaf] += count
        total += count
        own[leaf] += count
        for frame in {frame_name(f) for f in code}:
            inclusive[frame] += count
    share = 100.0 / max(total, 1)
    return {
        "own": [(f, round(c * share, 1)) for f, c in own.most_common(limit)],
        "inclusive": [(f, round(c * share, 1)) for f, c in inclusive.most_common(limit * 2)],
        "samples": total,
        "roles": {role: role_summary(leaves) for role, leaves in sorted(roles.items())},
    }


def role_summary(leaves: collections.Counter[str]) -> dict[str, object]:
    """One thread role's samples and the leaves they were in, as shares of them."""
    total = sum(leaves.values())
    return {"samples": total,
            "top": [(leaf, round(100.0 * c / max(total, 1), 1))
                    for leaf, c in leaves.most_common(8)]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raft-process", nargs="+", choices=("embedded", "separate"),
                        default=["embedded", "separate"])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "profile")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--rate", type=int, default=250)
    parser.add_argument("--gil", action="store_true",
                        help="sample only the thread holding the GIL (where the Python CPU "
                             "goes) instead of every thread")
    args = parser.parse_args()
    if shutil.which("py-spy") is None:
        print("py-spy is not on PATH (pip install py-spy)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for mode in args.raft_process:
        with tempfile.TemporaryDirectory() as work, \
                LocalCluster(Path(work), extra_properties={"raft.process": mode}) as cluster:
            cluster.start()
            brokers = Brokers(cluster)  # createTopics RF 3 needs three unfenced brokers
            try:
                run_all(cluster, mode, args)
            finally:
                brokers.close()
    return 0


def run_all(cluster: LocalCluster, mode: str, args: argparse.Namespace) -> None:
    """One profiled load run per ``--clients`` value, each printed as a JSON line."""
    for clients in args.clients:
        leader = cluster.wait_ready(CLUSTER_TIMEOUT)
        node = cluster.nodes[leader]
        assert node.process is not None
        workload = Workload("create-topic", (node.url,), f"{mode[0]}{clients}",
                            headers=tuple(cluster.headers.items()))
        output = args.out / f"leader-{mode}-{clients}.txt"
        result = profiled_load(node.process.pid, workload, clients, output, args)
        window = result.window_s or 1.0
        print(json.dumps({
            "raft_process": mode, "clients": clients,
            "ops_per_s": round(result.ops / window, 1),
            "errors": result.errors, "first_error": result.first_error,
            "p50_ms": round(percentile(result.latencies_ms, 0.5), 2),
            "p99_ms": round(percentile(result.latencies_ms, 0.99), 2),
            "pids": controller_pids(cluster), "profile": str(output),
            **(top_frames(output, args.top) if output.exists() else {}),
        }), flush=True)
        time.sleep(1.0)


def profiled_load(pid: int, workload: Workload, clients: int, output: Path,
                  args: argparse.Namespace) -> LoadResult:
    """The load run, with py-spy sampling ``pid`` and its children over the measured window
    only (not the clients' start-up or warm-up)."""
    spies: list[subprocess.Popen[bytes]] = []

    def profile_window(start: float, end: float) -> None:
        time.sleep(max(start - time.time(), 0.0))
        spies.append(subprocess.Popen(
            ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", str(args.rate),
             "--threads", "--subprocesses", *(["--gil"] if args.gil else ["--idle"]),
             "--output", str(output),
             "--duration", str(max(int(end - start), 1))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    try:
        return run_load(workload, clients=clients, duration=args.seconds,
                        on_window=profile_window)
    finally:
        for spy in spies:
            spy.wait(timeout=args.seconds + 60)


if __name__ == "__main__":
    sys.exit(main())
