"""Metadata propagation: a commit on the controller -> applied on all 3 broker agents.

A LocalCluster of 3 controller processes and 3 broker agents (``chunkraft broker``) on
127.0.0.1. An open-loop client sends metadata operations to the controller leader at a fixed
rate for ``--seconds``: each operation creates or deletes one ACL (one AccessControlEntryRecord
or RemoveAccessControlEntryRecord): bindings of a pool of 200 are created in turn, then deleted
in turn, so the image keeps at most 200 of them (CreateAcls checks every existing ACL, and
BrokerRegistration, whose epoch is its own offset, cannot share a batch). The leader's group
commit puts one or more operations into one batch.

Two latencies, per operation, to the moment the last of the 3 brokers had applied the batch
holding it (its metadata follower, after the ReplicaManager ran):

- ``ack_to_applied``: from the controller's 200 answer to the client (the write is committed
  and applied on the leader: "commit on the controller");
- ``append_to_applied``: from the batch's ``append_time_ms`` on the leader, before the quorum
  commits it: so it includes the Raft commit too (an overestimate of commit -> applied).

Each broker reports its last batches (``GET /broker/v1/metadata-stats?samples=N``: base offset,
append time, applied time). All processes share the host's clock.

``--profile DIR``: ``py-spy record`` samples the controller leader and broker 0 during each
run (collapsed stacks, one file per process and run, in DIR; py-spy must be on PATH).

Each run's window, from before its first operation until every broker applied its last, follows
the steady-leader rule of ``_steady``: the quorum is sampled at both edges, the run's row carries
``leadership`` (start, end, and what moved), and a run whose leader or term moved fails: its
reason (naming the counts) is printed and the exit status is 1.

Prints one JSON line per run; does not write bench/RESULTS.md. Only signals processes it
started (LocalCluster, by PID). Target: p99 <= 50 ms at 100 operations/s.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from _report import emit
from _steady import LeadershipWindow, exit_status, failed_rows
from chunkraft.local.local_cluster import LocalCluster

RUNS = ((100, 1), (1000, 10), (1000, 1))
"""(Operations per second, operations per request): 1,000/s as 100 requests of 10 ACLs, and
as 1,000 requests of one (more than one controller leader serves on this kind of machine:
the achieved rate is reported)."""
POOL = 200


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(fraction * len(ordered) + 0.999999) - 1))
    return ordered[index]


async def drive(url: str, headers: dict[str, str], rate: int, per_request: int, seconds: float,
                tag: str, acks: list[tuple[int, float]]) -> dict[str, Any]:
    """Sends ``rate`` operations/s for ``seconds``, ``per_request`` in each request; appends
    (offset, answer wall ms) to ``acks``; returns the achieved rate and the last offset."""
    requests = int(rate * seconds / per_request)
    interval = per_request / rate
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    done = failed = 0
    last_offset = -1
    latencies: list[float] = []
    semaphore = asyncio.Semaphore(256)
    async with httpx.AsyncClient(timeout=30, headers=headers, limits=limits) as client:

        async def one(index: int) -> None:
            nonlocal done, failed, last_offset
            first = index * per_request
            names = [f"{tag}-{(first + j) % POOL}" for j in range(per_request)]
            if (first // POOL) % 2 == 0:
                path, body = "create-acls", {"creations": [{
                    "resource_type": "TOPIC", "resource_name": name, "principal": f"User:{name}",
                    "operation": "READ", "permission_type": "ALLOW"} for name in names]}
            else:
                path, body = "delete-acls", {"filters": [{
                    "resource_type_filter": "TOPIC", "resource_name_filter": name,
                    "principal_filter": f"User:{name}", "operation": "READ",
                    "permission_type": "ALLOW"} for name in names]}
            async with semaphore:
                sent = time.perf_counter()
                try:
                    answer = await client.post(f"{url}/controller/v1/{path}", json=body,
                                               headers={"Idempotency-Key": os.urandom(16).hex()})
                except httpx.HTTPError:
                    failed += 1
                    return
            if answer.status_code != 200:
                failed += 1
                return
            latencies.append((time.perf_counter() - sent) * 1000)
            done += 1
            offset = int(answer.headers.get("x-metadata-offset", -1))
            acks.append((offset, time.time() * 1000))
            last_offset = max(last_offset, offset)

        started = time.perf_counter()
        tasks = []
        for index in range(requests):
            delay = started + index * interval - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(index)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
    return {"requests": done, "failed": failed, "elapsed_s": round(elapsed, 2),
            "achieved_ops_per_s": round(done * per_request / elapsed, 1),
            "last_offset": last_offset,
            "commit_p50_ms": round(percentile(latencies, 0.5), 2) if latencies else None,
            "commit_p99_ms": round(percentile(latencies, 0.99), 2) if latencies else None}


def broker_batches(cluster: LocalCluster, broker_id: int) -> list[list[float]]:
    answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/metadata-stats",
                       params={"samples": 10_000}, headers=cluster.headers, timeout=30)
    answer.raise_for_status()
    batches: list[list[float]] = answer.json()["batches"]
    return batches


def wait_applied(cluster: LocalCluster, offset: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        statuses = [cluster.broker_status(b, timeout=5) for b in cluster.broker_nodes]
        if all(s is not None and s["metadata_offset"] >= offset for s in statuses):
            return
        time.sleep(0.1)
    raise TimeoutError(f"the brokers did not reach offset {offset}")


def start_profiles(cluster: LocalCluster, leader: int, directory: Path, tag: str,
                   seconds: float) -> list[subprocess.Popen[bytes]]:
    """py-spy on the controller leader and broker 0 for ``seconds`` (see the module doc)."""
    directory.mkdir(parents=True, exist_ok=True)
    targets = {"leader": cluster.nodes[leader].process,
               "broker0": cluster.broker_nodes[0].process}
    spies = []
    for name, process in targets.items():
        if process is None:
            continue
        spies.append(subprocess.Popen(
            ["py-spy", "record", "--pid", str(process.pid), "--format", "raw", "--threads",
             "--rate", "200", "--duration", str(int(seconds) + 1),
             "--output", str(directory / f"{tag}-{name}.txt")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return spies


def measure(cluster: LocalCluster, rate: int, per_request: int, seconds: float,
            profile: Path | None = None, raft_process: str = "separate") -> dict[str, Any]:
    """One run at ``rate`` operations/s, ``per_request`` a request: prints and returns its
    row (``raft_process``: the controllers' setting, carried in the row)."""
    leader = cluster.leader_id()
    if leader is None:
        raise RuntimeError("no leader")
    window_start_ms = time.time() * 1000
    acks: list[tuple[int, float]] = []
    spies = ([] if profile is None else
             start_profiles(cluster, leader, profile, f"{rate}x{per_request}", seconds))
    with LeadershipWindow(cluster.leadership) as window:
        client = asyncio.run(drive(cluster.nodes[leader].url, cluster.headers, rate,
                                   per_request, seconds, f"prop-{rate}-{per_request}", acks))
        for spy in spies:
            spy.wait(timeout=seconds + 60)
        wait_applied(cluster, client["last_offset"])
    applied: dict[int, list[float]] = {}
    appended: dict[int, float] = {}
    for broker_id in cluster.broker_nodes:
        for offset, append_ms, applied_ms in broker_batches(cluster, broker_id):
            if append_ms < window_start_ms:
                continue
            applied.setdefault(int(offset), []).append(applied_ms)
            appended[int(offset)] = append_ms
    on_all = {o: max(t) for o, t in applied.items() if len(t) == len(cluster.broker_nodes)}
    bases = sorted(on_all)
    append_to_applied = [on_all[o] - appended[o] for o in bases]
    ack_to_applied = []
    for offset, acked_ms in acks:
        index = bisect.bisect_right(bases, offset) - 1
        if index >= 0:
            ack_to_applied.append(on_all[bases[index]] - acked_ms)
    row: dict[str, Any] = {"bench": "propagation", "raft_process": raft_process,
                           "target_ops_per_s": rate,
                           "ops_per_request": per_request, "seconds": seconds, **client,
                           "batches_on_all_brokers": len(bases), **window.result().fields()}
    for name, values in (("ack_to_applied", ack_to_applied),
                         ("append_to_applied", append_to_applied)):
        if values:
            row[name] = {"p50_ms": round(percentile(values, 0.5), 2),
                         "p99_ms": round(percentile(values, 0.99), 2),
                         "max_ms": round(max(values), 2),
                         "mean_ms": round(statistics.fmean(values), 2), "samples": len(values)}
    emit(row)
    return row


def describe(row: dict[str, Any]) -> str:
    """A run's place in the bench, in words."""
    return f"{row['target_ops_per_s']} operations/s, {row['ops_per_request']} a request"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--runs", default=",".join(f"{r}x{k}" for r, k in RUNS),
                        help="RATExPER_REQUEST, comma-separated (default: %(default)s)")
    parser.add_argument("--profile", type=Path, default=None,
                        help="py-spy the leader and broker 0 into this directory")
    parser.add_argument("--raft-process", choices=("separate", "embedded"), default="separate",
                        help="raft.process of the controllers: the Raft node in a process of "
                             "its own (the default) or a thread of the API process, to compare")
    args = parser.parse_args()
    if args.profile is not None and shutil.which("py-spy") is None:
        print("--profile needs py-spy on PATH (pip install py-spy)", file=sys.stderr)
        return 2
    runs = [tuple(int(n) for n in item.split("x")) for item in args.runs.split(",")]
    # SIGTERM (a timeout) must still run the finally below: the cluster is ours to stop.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    base = args.dir or Path(tempfile.mkdtemp(prefix="bench-propagation-"))
    cluster = LocalCluster(base, broker_count=3,
                           extra_properties={"raft.process": args.raft_process})
    rows: list[dict[str, Any]] = []
    try:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=60)
        cluster.start_brokers()
        cluster.wait_brokers_ready(timeout=60)
        for rate, per_request in runs:
            rows.append(measure(cluster, rate, per_request, args.seconds, args.profile,
                                args.raft_process))
    finally:
        cluster.stop_brokers(timeout=30)
        cluster.stop()
    return exit_status(failed_rows(rows, describe))


if __name__ == "__main__":
    sys.exit(main())
