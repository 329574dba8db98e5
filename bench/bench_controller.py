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
  ``/v3/kv/put`` of 200-byte values, txn of 100 puts);
- ``failover``: kill -9 of the leader while one client writes to a follower, time from the kill
  to the first successful write sent after it (chunkraft, and etcd unless --skip-etcd);
- ``restart``: build an image of ``--partitions`` partitions (topics of 1,000), restart once with
  a compaction due 15 s after the start so that every node writes its Raft dump, then kill -9
  all three and time until all are ready and agree on the image hash (the brokers keep
  heartbeating throughout, as real brokers would).

The 3 brokers a chunkraft cluster needs for RF 3 are registered by the script and kept unfenced by
a heartbeat thread (3 heartbeats/s in all). Writes that meet a leader change are counted as
errors in load windows; setup writes are retried with the same idempotency key.

Prints one JSON line per measurement and appends a dated section to bench/RESULTS.md (unless
--no-save). Not a test: never run it in CI. It only signals processes it started, by PID.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import contextlib
import json
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from _etcd import EtcdCluster, ensure_etcd, etcd_version
from _http_load import (
    LoadResult,
    Workload,
    new_client,
    percentile,
    run_load,
    summary,
)
from _pysyncobj_front import RawCluster
from _report import append_section, emit
from chunkraft.deploy.local_cluster import LocalCluster

CLUSTER_TIMEOUT = 60.0
Headers = Mapping[str, str]
TICKS = os.sysconf("SC_CLK_TCK")
ROWS: list[dict[str, Any]] = []
NOTES: list[str] = []


def note(text: str) -> None:
    """A sentence for the RESULTS.md section (also printed as a JSON line)."""
    NOTES.append(text)
    emit({"bench": "controller", "item": "note", "text": text})


def record(row: dict[str, Any]) -> dict[str, Any]:
    row = {"bench": "controller", **row}
    emit(row)
    ROWS.append(row)
    return row


# ------------------------------------------------------------------ process helpers


def cpu_seconds(pids: list[int]) -> float:
    """user + system CPU seconds of the given processes (0 for one that is gone)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
        except (OSError, IndexError, ValueError):
            pass
    return total


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, from /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS


def vm_hwm_mib(pid: int) -> float:
    """Peak resident set size of a process (VmHWM), in MiB; 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def controller_pids(cluster: LocalCluster) -> list[int]:
    return [n.process.pid for n in cluster.nodes.values() if n.process is not None]


def other_load() -> str:
    """The load averages when the run starts."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def code_version() -> str:
    """The commit measured, and whether src/ had uncommitted changes (others edit it)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, cwd=Path(__file__).parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], capture_output=True,
                               text=True, timeout=10, cwd=Path(__file__).parent).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    changed = len(dirty.splitlines())
    return f"commit {head}" + (f" with {changed} uncommitted file(s) in src/" if changed else "")


# ------------------------------------------------------------------ chunkraft helpers


def quorum(url: str, headers: Headers, hash_: bool = False,
           timeout: float = 5.0) -> dict[str, Any]:
    """The node's ``/controller/v1/quorum`` answer (``headers``: the quorum's, explicitly)."""
    suffix = "?hash=true" if hash_ else ""
    return dict(httpx.get(f"{url}/controller/v1/quorum{suffix}", timeout=timeout,
                          headers=dict(headers), trust_env=False).json())


def post(url: str, headers: Headers, path: str, body: dict[str, Any], timeout: float = 60.0,
         attempts: int = 30) -> dict[str, Any]:
    """A setup write, retried with the same idempotency key (so applied once) while the
    quorum changes leader: 421 / 503 answers and connection errors."""
    sent = {"Idempotency-Key": os.urandom(16).hex(), **headers}
    problem = ""
    for _attempt in range(attempts):
        try:
            answer = httpx.post(f"{url}/controller/v1/{path}", json=body, timeout=timeout,
                                headers=sent, trust_env=False)
            if answer.status_code == 200:
                return dict(answer.json())
            problem = f"HTTP {answer.status_code} {answer.text[:300]}"
            if answer.status_code not in (421, 503):
                break
        except httpx.HTTPError as error:
            problem = repr(error)
        time.sleep(0.2)
    raise RuntimeError(f"{path}: {problem}")


class Brokers:
    """Three registered brokers, kept unfenced by a heartbeat thread (as real brokers would).

    The thread only heartbeats; ``close`` stops it. Uses the cluster's own admin headers."""

    def __init__(self, cluster: LocalCluster, count: int = 3, interval: float = 1.0) -> None:
        self.cluster = cluster
        self.headers = dict(cluster.headers)
        self.interval = interval
        self.epochs: dict[int, int] = {}
        self._stop = threading.Event()
        leader = cluster.wait_ready(CLUSTER_TIMEOUT)
        url = cluster.nodes[leader].url
        cluster_id = quorum(url, self.headers)["cluster_id"]
        for broker in range(1, count + 1):
            answer = post(url, self.headers, "broker-registration", {
                "broker_id": broker, "cluster_id": cluster_id,
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 19092 + broker,
                               "security_protocol": 0}]})
            if answer["error_code"] != 0:
                raise RuntimeError(f"broker registration: {answer}")
            self.epochs[broker] = answer["broker_epoch"]
        self.heartbeat_once()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def heartbeat_once(self) -> None:
        for broker, epoch in self.epochs.items():
            for node in self.cluster.nodes.values():
                if not node.running:
                    continue
                with contextlib.suppress(httpx.HTTPError, RuntimeError):
                    post(node.url, self.headers, "broker-heartbeat", {
                        "broker_id": broker, "broker_epoch": epoch,
                        "current_metadata_offset": 2**62}, timeout=2.0, attempts=1)
                    break

    def _loop(self) -> None:
        for _ in range(100_000):
            if self._stop.wait(self.interval):
                return
            self.heartbeat_once()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def create_pool(url: str, headers: Headers, prefix: str, count: int,
                per_request: int = 1000) -> list[str]:
    """``count`` topics of 1 partition, RF 3, created in requests of ``per_request`` topics (2
    records each; at most request.max.batch.items, 1,000 by default)."""
    names = [f"{prefix}-{i}" for i in range(count)]
    for start in range(0, count, per_request):
        chunk = names[start:start + per_request]
        answer = post(url, headers, "create-topics", {"topics": [
            {"name": n, "num_partitions": 1, "replication_factor": 3} for n in chunk]})
        bad = [t for t in answer["topics"] if t["error_code"] != 0]
        if bad:
            raise RuntimeError(f"pool creation failed: {bad[0]}")
    return names


def delete_prefixed(url: str, headers: Headers, prefix: str) -> None:
    """Deletes every topic whose name starts with ``prefix`` (keeps the image small)."""
    answer = httpx.post(f"{url}/controller/v1/metadata", json={"topics": None,
                                                               "include_chunks": False},
                        timeout=120, headers=dict(headers), trust_env=False).json()
    delete_names(url, headers, [t["name"] for t in answer.get("topics", [])
                                if str(t.get("name")).startswith(prefix + "-")])


def delete_names(url: str, headers: Headers, names: list[str], per_request: int = 1000) -> None:
    """Deletes ``names`` in requests of at most request.max.batch.items (1,000 by default)."""
    for start in range(0, len(names), per_request):
        post(url, headers, "delete-topics", {"topic_names": names[start:start + per_request]},
             timeout=120)


# ------------------------------------------------------------------ load runs


def load_row(system: str, item: str, workload: Workload, clients: int, result: LoadResult,
             run: int, processes: int, extra: dict[str, Any]) -> dict[str, Any]:
    window = result.window_s or 1.0
    ops_per_s = result.ops / window
    return record({
        "item": item, "system": system, "workload": workload.kind, "batch": workload.batch,
        "clients": clients, "processes": processes, "run": run,
        "ops_per_s": round(ops_per_s, 1),
        "records_per_s": round(extra.pop("records", result.ops * workload.records_per_op)
                               / window, 1),
        "p50_ms": round(percentile(result.latencies_ms, 0.50), 2),
        "p99_ms": round(percentile(result.latencies_ms, 0.99), 2),
        "errors": result.errors, "first_error": result.first_error[:200],
        "pool_exhausted": result.pool_exhausted,
        "client_cpu_cores": round(result.client_cpu_s / window, 2),
        "client_cpu_ms_per_op": round(1000 * result.client_cpu_s / max(result.ops, 1), 3),
        **extra,
    })


def measured(pids: list[int], offset_url: str | None, headers: Headers | None = None
             ) -> tuple[Callable[[float, float], None], dict[str, float]]:
    """An ``on_window`` that samples server CPU (and the metadata offset of ``offset_url``,
    asked with ``headers``) at the window edges."""
    seen: dict[str, float] = {}
    sent = dict(headers or {})

    def on_window(start: float, end: float) -> None:
        time.sleep(max(start - time.time(), 0))
        seen["cpu0"] = cpu_seconds(pids)
        seen["busy0"] = machine_busy_seconds()
        if offset_url:
            status = quorum(offset_url, sent)
            seen["offset0"], seen["epoch0"] = status["metadata_offset"], status["epoch"]
            seen["leader0"] = status["leader_id"]
        seen["t0"] = time.time()
        time.sleep(max(end - time.time(), 0))
        seen["cpu1"] = cpu_seconds(pids)
        seen["busy1"] = machine_busy_seconds()
        if offset_url:
            status = quorum(offset_url, sent)
            seen["offset1"], seen["epoch1"] = status["metadata_offset"], status["epoch"]
            seen["leader1"] = status["leader_id"]
        seen["t1"] = time.time()

    return on_window, seen


def run_config(system: str, item: str, workload: Workload, clients: int, duration: float,
               pids: list[int], *, processes: int = 1, run: int = 0,
               offset_url: str | None = None, variant: str | None = None) -> dict[str, Any]:
    on_window, seen = measured(pids, offset_url, dict(workload.headers))
    result = run_load(workload, clients=clients, duration=duration, processes=processes,
                      on_window=on_window)
    span = seen["t1"] - seen["t0"]
    server = (seen["cpu1"] - seen["cpu0"]) / span
    busy = (seen["busy1"] - seen["busy0"]) / span
    extra: dict[str, Any] = {
        "server_cpu_cores": round(server, 2),
        "machine_busy_cores": round(busy, 2),
        "other_cpu_cores": round(max(busy - server - result.client_cpu_s / span, 0), 2),
        "server_cpu_ms_per_op": round(1000 * (seen["cpu1"] - seen["cpu0"])
                                      / max(result.ops, 1), 3),
    }
    if variant:
        extra["variant"] = variant
    if offset_url:
        committed = seen["offset1"] - seen["offset0"]
        extra["records"] = committed * (result.window_s / span)  # per the client's window
        extra["offset_records"] = int(committed)
        extra["client_counted_records"] = result.ops * workload.records_per_op
        extra["raft_epochs"] = [seen["epoch0"], seen["epoch1"]]
        extra["leaders"] = [seen["leader0"], seen["leader1"]]
    return load_row(system, item, workload, clients, result, run, processes, extra)


def medians(rows: list[dict[str, Any]], variant: str | None = None) -> dict[str, Any]:
    """Median of each figure over runs, with the spread of ops/s and records/s."""
    out: dict[str, Any] = {key: rows[0][key] for key in
                           ("item", "system", "workload", "batch", "clients", "processes")}
    if variant:
        out["variant"] = variant
    out["runs"] = len(rows)
    for key in ("ops_per_s", "records_per_s", "p50_ms", "p99_ms", "client_cpu_cores",
                "client_cpu_ms_per_op", "server_cpu_cores", "server_cpu_ms_per_op",
                "other_cpu_cores"):
        values = [r[key] for r in rows if key in r]
        if values:
            out[key] = round(statistics.median(values), 2)
            if key in ("ops_per_s", "records_per_s"):
                s = summary(values)
                out[key + "_spread"] = [round(s["min"], 1), round(s["max"], 1)]
    out["errors"] = sum(r["errors"] for r in rows)
    out["leader_changes"] = sum(r["raft_epochs"][1] - r["raft_epochs"][0] for r in rows
                                if "raft_epochs" in r)
    out["pool_exhausted"] = any(r.get("pool_exhausted") for r in rows)
    out["summary"] = True
    return record(out)


# ------------------------------------------------------------------ item 1


def bench_partitions(args: argparse.Namespace, cluster: LocalCluster) -> None:
    """One client, to the current leader; a 421/503 answer (leader change) is retried with the
    same idempotency key and counted in the latency, as a client would see it."""
    ops = 10 if args.quick else args.partition_ops
    headers = cluster.headers
    latencies: list[float] = []
    epochs = []
    for i in range(ops):
        url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
        name = f"expand-{i}"
        created = post(url, headers, "create-topics", {"topics": [
            {"name": name, "num_partitions": 1, "replication_factor": 3}]})
        if created["topics"][0]["error_code"] != 0:
            raise RuntimeError(f"create-topics: {created}")
        status = quorum(url, headers)
        before, epoch = status["metadata_offset"], status["epoch"]
        began = time.perf_counter()
        answer = post(url, headers, "create-partitions", {
            "topics": [{"name": name, "count": 1001, "assignments": None}],
            "timeout_ms": 60_000, "validate_only": False})
        latencies.append((time.perf_counter() - began) * 1000)
        if answer["results"][0]["error_code"] != 0:
            raise RuntimeError(f"create-partitions: {answer}")
        status = quorum(url, headers)
        epochs.append(status["epoch"] - epoch)
        if i == 0:
            record({"item": "partitions", "first_op_records": status["metadata_offset"] - before})
    record({"item": "partitions", "system": "chunkraft", "ops": ops,
            "added_partitions": 1000, "p50_ms": round(percentile(latencies, 0.5), 1),
            "p99_ms": round(percentile(latencies, 0.99), 1),
            "min_ms": round(min(latencies), 1), "max_ms": round(max(latencies), 1),
            "mean_ms": round(statistics.fmean(latencies), 1),
            "leader_changes": sum(epochs), "latencies_ms": [round(x) for x in latencies],
            "summary": True})


# ------------------------------------------------------------------ items 2-4


def chunkraft_throughput(args: argparse.Namespace, cluster: LocalCluster, duration: float,
                         repeats: int) -> None:
    pids = controller_pids(cluster)
    headers = cluster.headers
    own = tuple(headers.items())  # chunkraft's client settings: its admin token
    for clients in (1, 32):
        rows = []
        for run in range(repeats):
            leader_url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
            prefix = f"b{clients}r{run}"
            pool = create_pool(leader_url, headers, prefix, 3000 if clients == 1 else 8000)
            workload = Workload("create-partitions", (leader_url,), prefix, batch=100,
                                pool=tuple(pool), headers=own)
            rows.append(run_config("chunkraft", "batched", workload, clients, duration, pids,
                                   run=run, offset_url=leader_url))
            delete_names(leader_url, headers, pool)
        medians(rows)
    for clients in (1, 32):
        rows = []
        for run in range(repeats):
            leader_url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
            prefix = f"s{clients}r{run}"
            workload = Workload("create-topic", (leader_url,), prefix, headers=own)
            rows.append(run_config("chunkraft", "single", workload, clients, duration, pids,
                                   run=run, offset_url=leader_url))
            delete_prefixed(leader_url, headers, prefix)
        medians(rows)
    leader = cluster.wait_ready(CLUSTER_TIMEOUT)
    leader_url = cluster.nodes[leader].url
    follower = next(n for n in cluster.nodes if n != leader)
    extra_runs = [("two client processes", (leader_url,), 2),
                  ("to a follower", (cluster.nodes[follower].url,), 1)]
    for label, urls, processes in extra_runs:
        prefix = f"x{processes}{len(label)}"
        workload = Workload("create-topic", urls, prefix, headers=own)
        row = run_config("chunkraft", "single", workload, 32, duration, pids,
                         processes=processes, offset_url=leader_url, variant=label)
        medians([row], label)
        delete_prefixed(leader_url, headers, prefix)


def raw_throughput(args: argparse.Namespace, base: Path, duration: float,
                   repeats: int) -> None:
    with RawCluster(base / "raw", password=os.urandom(18).hex()) as raw:
        leader = raw.leader_index(CLUSTER_TIMEOUT)
        url = raw.urls[leader]
        pids = [p for p in (raw.pid(i) for i in range(3)) if p is not None]
        for kind, batch in (("raw-batch", 100), ("raw-put", 1)):
            for clients in (1, 32):
                rows = [run_config("pysyncobj", "batched" if batch > 1 else "single",
                                   Workload(kind, (url,), f"r{clients}{run}", batch=batch),
                                   clients, duration, pids, run=run)
                        for run in range(repeats)]
                medians(rows)
        follower = raw.urls[(leader + 1) % 3]
        for label, urls, processes in (("two client processes", (url,), 2),
                                       ("to a follower", (follower,), 1)):
            row = run_config("pysyncobj", "single", Workload("raw-put", urls, f"x{processes}"),
                             32, duration, pids, processes=processes, variant=label)
            medians([row], label)
        for mode, batch in (("sync", 1), ("async", 100)):
            answer = httpx.post(f"{url}/ceiling", json={
                "mode": mode, "seconds": min(duration, 10), "batch": batch, "window": 100},
                timeout=120, trust_env=False).json()
            record({"item": "ceiling", "system": "pysyncobj", **answer})


def etcd_throughput(args: argparse.Namespace, base: Path, binary: str, duration: float,
                    repeats: int) -> None:
    with EtcdCluster(base / "etcd", binary=binary) as etcd:
        leader = etcd.leader_index(CLUSTER_TIMEOUT)
        url = etcd.urls[leader]
        pids = [p for p in (etcd.pid(i) for i in range(3)) if p is not None]
        for kind, batch in (("etcd-txn", 100), ("etcd-put", 1)):
            for clients in (1, 32):
                rows = [run_config("etcd", "batched" if batch > 1 else "single",
                                   Workload(kind, (url,), f"e{clients}-{run}", batch=batch),
                                   clients, duration, pids, run=run)
                        for run in range(repeats)]
                medians(rows)
        follower = etcd.urls[(leader + 1) % 3]
        for label, urls, processes in (("two client processes", (url,), 2),
                                       ("to a follower", (follower,), 1)):
            row = run_config("etcd", "single", Workload("etcd-put", urls, f"x{processes}"),
                             32, duration, pids, processes=processes, variant=label)
            medians([row], label)


# ------------------------------------------------------------------ item 5


async def _failover_once(kill: Callable[[], None], target: str, headers: Headers, path: str,
                         body: Callable[[int], dict[str, Any]],
                         ok: Callable[[int, Any], bool]) -> dict[str, Any]:
    """Writes to ``target`` in a loop; kills; returns the time to the first success sent after
    the kill. Bounded: 30 s after the kill at most."""
    state: dict[str, Any] = {"kill": None, "first": None, "errors": 0, "ok_before": 0,
                             "error_kinds": set()}
    async with new_client(target, timeout=1.0, headers=headers) as client:

        async def writer() -> None:
            for seq in range(1_000_000):
                sent = time.perf_counter()
                try:
                    answer = await client.post(path, json=body(seq), headers={
                        "Idempotency-Key": os.urandom(16).hex()})
                    success = ok(answer.status_code, answer.json())
                    if not success:
                        state["error_kinds"].add(str(answer.status_code))
                except (httpx.HTTPError, ValueError) as error:
                    success = False
                    state["error_kinds"].add(type(error).__name__)
                done = time.perf_counter()
                if success:
                    if state["kill"] is None:
                        state["ok_before"] += 1
                    elif sent >= state["kill"]:
                        state["first"] = done
                        return
                else:
                    if state["kill"] is not None:
                        state["errors"] += 1
                    await asyncio.sleep(0.01)
                if state["kill"] is not None and done - state["kill"] > 30:
                    return

        task = asyncio.ensure_future(writer())
        for _ in range(300):
            if state["ok_before"] >= 20 or task.done():
                break
            await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        state["kill"] = time.perf_counter()
        await loop.run_in_executor(None, kill)
        await asyncio.wait_for(task, 60)
    first = state["first"]
    return {"failover_s": None if first is None else round(first - state["kill"], 3),
            "ok_before_kill": state["ok_before"], "errors_after_kill": state["errors"],
            "error_kinds": sorted(state["error_kinds"])}


def bench_failover(args: argparse.Namespace, base: Path, etcd_binary: str | None) -> None:
    runs = 2 if args.quick else 5
    with LocalCluster(base / "failover") as cluster:
        brokers = Brokers(cluster)
        try:
            times = []
            for run in range(runs):
                leader = cluster.wait_ready(CLUSTER_TIMEOUT)
                follower = next(n for n in cluster.nodes if n != leader)

                def body(seq: int, run: int = run) -> dict[str, Any]:
                    return {"topics": [{"name": f"fo-{run}-{seq}", "num_partitions": 1,
                                        "replication_factor": 3}]}

                def ok(status: int, answer: Any) -> bool:
                    return status == 200 and answer["topics"][0]["error_code"] == 0

                result = asyncio.run(_failover_once(
                    lambda leader=leader: cluster.kill(leader), cluster.nodes[follower].url,
                    cluster.headers, "/controller/v1/create-topics", body, ok))
                result["new_leader"] = cluster.leader_id()
                record({"item": "failover", "system": "chunkraft", "run": run,
                        "killed": leader, "written_to": follower, **result})
                if result["failover_s"] is not None:
                    times.append(result["failover_s"])
                cluster.start(leader)
                cluster.wait_ready(CLUSTER_TIMEOUT)
                time.sleep(2.0)  # the restarted node catches up before the next kill
            s = summary(times)
            record({"item": "failover", "system": "chunkraft", "runs": runs,
                    "succeeded": len(times), "median_s": s["median"], "min_s": s["min"],
                    "max_s": s["max"], "summary": True})
        finally:
            brokers.close()
    if etcd_binary is None:
        return
    with EtcdCluster(base / "etcd-failover", binary=etcd_binary) as etcd:
        times = []
        for run in range(runs):
            leader = etcd.leader_index(CLUSTER_TIMEOUT)
            survivor = (leader + 1) % 3

            def put(seq: int, run: int = run) -> dict[str, Any]:
                return {"key": "Zm8=", "value": base64.b64encode(f"{run}-{seq}".encode()).decode()}

            result = asyncio.run(_failover_once(
                lambda leader=leader: etcd.kill(leader), etcd.urls[survivor], {}, "/v3/kv/put",
                put, lambda status, answer: status == 200))
            record({"item": "failover", "system": "etcd", "run": run, **result})
            if result["failover_s"] is not None:
                times.append(result["failover_s"])
            etcd.start(leader)
            etcd.leader_index(CLUSTER_TIMEOUT)
            time.sleep(2.0)
        s = summary(times)
        record({"item": "failover", "system": "etcd", "runs": runs, "succeeded": len(times),
                "median_s": s["median"], "min_s": s["min"], "max_s": s["max"],
                "summary": True})


# ------------------------------------------------------------------ item 6

DUMP_LINE = re.compile(r"Raft dump written at offset (\d+) in ([0-9.]+) s")


def dumps_in_logs(cluster: LocalCluster) -> dict[int, list[tuple[int, float]]]:
    found: dict[int, list[tuple[int, float]]] = {}
    for node_id, node in cluster.nodes.items():
        text = node.log_path.read_text(errors="replace") if node.log_path.exists() else ""
        found[node_id] = [(int(m[1]), float(m[2])) for m in DUMP_LINE.finditer(text)]
    return found


async def _build(url: str, headers: Headers, topics: int, per_topic: int, per_request: int,
                 clients: int, deadline: float, retries: list[str]) -> int:
    """Creates ``topics`` topics of ``per_topic`` partitions; returns how many were created."""
    names = [f"big-{i:06d}" for i in range(topics)]
    requests = [names[i:i + per_request] for i in range(0, topics, per_request)]
    created = 0

    async def task(index: int) -> None:
        nonlocal created
        async with new_client(url, timeout=120.0, headers=headers) as client:
            for chunk in requests[index::clients]:
                if time.monotonic() > deadline:
                    return
                key = os.urandom(16).hex()  # the same key on every retry: applied once
                for _attempt in range(30):
                    try:
                        answer = await client.post("/controller/v1/create-topics", json={
                            "topics": [{"name": n, "num_partitions": per_topic,
                                        "replication_factor": 3} for n in chunk]},
                            headers={"Idempotency-Key": key})
                        if answer.status_code == 200:
                            break
                        retries.append(f"{answer.status_code} {answer.text[:120]}")
                    except httpx.HTTPError as error:
                        retries.append(repr(error))
                    await asyncio.sleep(0.2)
                else:
                    raise RuntimeError(f"build: gave up after 30 attempts: {retries[-1]}")
                created += sum(1 for t in answer.json()["topics"] if t["error_code"] == 0)

    await asyncio.gather(*(task(i) for i in range(clients)))
    return created


def _wait_dumps(cluster: LocalCluster, before: dict[int, int], offset: int,
                timeout: float) -> dict[int, tuple[int, float]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = dumps_in_logs(cluster)
        fresh = {n: d[-1] for n, d in found.items() if len(d) > before.get(n, 0)
                 and d[-1][0] >= offset}
        if len(fresh) == len(cluster.nodes):
            return fresh
        time.sleep(0.5)
    raise TimeoutError(f"not every node wrote a Raft dump at offset >= {offset} in {timeout} s")


def _all_hashes(cluster: LocalCluster) -> dict[int, dict[str, Any] | None]:
    with concurrent.futures.ThreadPoolExecutor(len(cluster.nodes)) as pool:
        futures = {n: pool.submit(cluster.status, n, 120.0) for n in cluster.nodes}
        return {n: f.result() for n, f in futures.items()}


def bench_restart(args: argparse.Namespace, base: Path) -> None:
    per_topic = 1000
    topics = max(args.partitions // per_topic, 1)
    never = {"raft.log.compaction.min.entries": "100000000",
             "raft.log.compaction.min.time.ms": "86400000"}
    with LocalCluster(base / "restart", extra_properties=dict(never)) as cluster:
        # The brokers heartbeat all along, as real brokers would through a controller restart:
        # without them the new leader fences each broker, one record per partition it holds.
        brokers = Brokers(cluster)
        try:
            _restart_phases(args, cluster, topics, per_topic, never)
        finally:
            brokers.close()


def _restart_phases(args: argparse.Namespace, cluster: LocalCluster, topics: int,
                    per_topic: int, never: dict[str, str]) -> None:
    headers = cluster.headers
    leader = cluster.wait_ready(CLUSTER_TIMEOUT)
    url = cluster.nodes[leader].url
    epoch = quorum(url, headers)["epoch"]
    began = time.monotonic()
    retries: list[str] = []
    created = asyncio.run(_build(url, headers, topics, per_topic, 9, 4,
                                 began + args.build_timeout, retries))
    build_s = time.monotonic() - began
    # Ask the leader of now (leadership moves during the build; a follower may lag).
    status = quorum(cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url, headers)
    offset, partitions = status["metadata_offset"], status["partitions"]
    record({"item": "restart", "phase": "build", "topics": created,
            "partitions": partitions, "offset": offset, "seconds": round(build_s, 1),
            "records_per_s": round(partitions / build_s),
            "raft_epochs": [epoch, status["epoch"]], "retries": len(retries),
            "retry_reasons": sorted(set(retries))[:5],
            "vm_hwm_mib": {n: round(vm_hwm_mib(node.process.pid))
                           for n, node in cluster.nodes.items() if node.process}})
    # A dump is written only at compaction: restart with a compaction due 15 s after the
    # start (pysyncobj skips it when nothing was applied since the last dump, so an idle
    # quorum dumps once), then put the "never" settings back for the measured restart.
    cluster.extra_properties = {"raft.log.compaction.min.entries": "100000000",
                                "raft.log.compaction.min.time.ms": "15000"}
    cluster.prepare()
    before = {n: len(d) for n, d in dumps_in_logs(cluster).items()}
    cluster.stop()
    began = time.monotonic()
    cluster.start()
    leader = cluster.wait_ready(900)
    journal_ready_s = time.monotonic() - began
    epoch_before = quorum(cluster.nodes[leader].url, headers)["epoch"]
    dumps = _wait_dumps(cluster, before, offset, 900)
    time.sleep(2.0)
    after = cluster.wait_ready(900)
    epoch_after = quorum(cluster.nodes[after].url, headers)["epoch"]
    record({"item": "restart", "phase": "restart from the journal, then dump",
            "journal_restart_ready_s": round(journal_ready_s, 1),
            "dump_s": {n: d[1] for n, d in dumps.items()},
            "dump_offset": {n: d[0] for n, d in dumps.items()},
            "dump_bytes": {n: node.data_dir.joinpath("raft", "dump").stat().st_size
                           for n, node in cluster.nodes.items()},
            "epoch_before_dump": epoch_before, "epoch_after_dump": epoch_after,
            "vm_hwm_mib": {n: round(vm_hwm_mib(node.process.pid))
                           for n, node in cluster.nodes.items() if node.process}})
    cluster.extra_properties = dict(never)
    cluster.prepare()
    for node_id in cluster.nodes:
        cluster.kill(node_id)
    began = time.monotonic()
    cluster.start()
    cluster.wait_ready(900)
    ready_s = time.monotonic() - began
    hashes: dict[int, dict[str, Any] | None] = {}
    for _ in range(600):
        hashes = _all_hashes(cluster)
        values = {(h or {}).get("image_hash") for h in hashes.values()}
        offsets = {(h or {}).get("metadata_offset") for h in hashes.values()}
        if len(values) == 1 and None not in values and min(offsets) >= offset:
            break
        time.sleep(0.2)
    hash_s = time.monotonic() - began
    partitions = max(int((h or {}).get("partitions") or 0) for h in hashes.values())
    epoch = quorum(cluster.nodes[cluster.wait_ready(900)].url, headers)["epoch"]
    record({"item": "restart", "phase": "kill -9 all, restart", "partitions": partitions,
            "ready_s": round(ready_s, 1), "ready_same_hash_s": round(hash_s, 1),
            "offsets": {n: (h or {}).get("metadata_offset") for n, h in hashes.items()},
            "hash": next(iter({(h or {}).get("image_hash") for h in hashes.values()})),
            "epoch_after_restart": epoch,
            "vm_hwm_mib": {n: round(vm_hwm_mib(node.process.pid))
                           for n, node in cluster.nodes.items() if node.process},
            "summary": True})


# ------------------------------------------------------------------ report


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if value >= 100 else f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def report(args: argparse.Namespace) -> list[str]:
    lines: list[str] = []
    summaries = [r for r in ROWS if r.get("summary")]

    def find(item: str, system: str, **match: Any) -> dict[str, Any] | None:
        for r in summaries:
            if r.get("item") == item and r.get("system") == system and all(
                    r.get(k) == v for k, v in match.items()):
                return r
        return None

    part = find("partitions", "chunkraft")
    if part:
        met = "met" if part["p50_ms"] <= 150 else "MISSED"
        lines += ["### 1. createPartitions adding 1,000 partitions (fresh topic, RF 3, one "
                  "client, to the leader)", "",
                  "| target | ops | p50 ms | p99 ms | min ms | max ms | leader changes | |",
                  "|---|---|---|---|---|---|---|---|",
                  f"| p50 <= 150 ms | {part['ops']} | {part['p50_ms']} | {part['p99_ms']} | "
                  f"{part['min_ms']} | {part['max_ms']} | {part.get('leader_changes', '')} | "
                  f"{met} |", ""]
    load = [r for r in summaries if r.get("item") in ("batched", "single")]
    if load:
        lines += ["### 2-4. Throughput, same client code, 10 s windows, median of runs "
                  "[min, max]", "",
                  "| system | load | clients | ops/s | records/s | p50 ms | p99 ms | "
                  "client CPU cores | server CPU cores | server CPU ms/op | other CPU cores "
                  "| leader changes |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in load:
            what = {"create-partitions": "createPartitions +100 (101 records)",
                    "create-topic": "createTopics 1 partition RF 3 (2 records)",
                    "raw-batch": "call of 100 values", "raw-put": "call of 1 value",
                    "etcd-txn": "txn of 100 puts", "etcd-put": "put"}[r["workload"]]
            if r.get("variant"):
                what += f", {r['variant']}"
            spread = r.get("records_per_s_spread") if r["batch"] > 1 else r.get(
                "ops_per_s_spread")
            ops = _fmt(r["ops_per_s"])
            recs = _fmt(r["records_per_s"])
            if spread and r["runs"] > 1:
                if r["batch"] > 1:
                    recs += f" [{spread[0]:,.0f}, {spread[1]:,.0f}]"
                else:
                    ops += f" [{spread[0]:,.0f}, {spread[1]:,.0f}]"
            lines.append(f"| {r['system']} | {what} | {r['clients']} | {ops} | {recs} | "
                         f"{r['p50_ms']} | {r['p99_ms']} | {r['client_cpu_cores']} | "
                         f"{r['server_cpu_cores']} | {r['server_cpu_ms_per_op']} | "
                         f"{r.get('other_cpu_cores', '')} | "
                         f"{r['leader_changes'] if r['system'] == 'chunkraft' else '-'} |")
        lines.append("")
        targets = []
        b32 = find("batched", "chunkraft", clients=32, processes=1)
        b1 = find("batched", "chunkraft", clients=1, processes=1)
        s32 = find("single", "chunkraft", clients=32, processes=1, variant=None)
        for label, row, key, goal in (
                ("batched records/s, 1 client", b1, "records_per_s", 30_000),
                ("batched records/s, 32 clients", b32, "records_per_s", 30_000),
                ("single-record ops/s, 32 clients", s32, "ops_per_s", 1_000)):
            if row:
                verdict = "met" if row[key] >= goal else "MISSED"
                targets.append(f"| {label} | >= {goal:,} | {_fmt(row[key])} | {verdict} |")
        if targets:
            lines += ["| target | goal | measured | |", "|---|---|---|---|", *targets, ""]
        ratios = []
        for label, item, clients, key in (("1 client, single ops", "single", 1, "ops_per_s"),
                                          ("32 clients, single ops", "single", 32, "ops_per_s"),
                                          ("1 client, batched records/s", "batched", 1,
                                           "records_per_s"),
                                          ("32 clients, batched records/s", "batched", 32,
                                           "records_per_s")):
            ours = find(item, "chunkraft", clients=clients, processes=1, variant=None)
            etcd = find(item, "etcd", clients=clients, processes=1, variant=None)
            raw = find(item, "pysyncobj", clients=clients, processes=1, variant=None)
            if ours:
                cells = [f"{_fmt(ours[key])}"]
                for other in (etcd, raw):
                    cells.append(f"{_fmt(other[key])} ({ours[key] / other[key]:.2f})"
                                 if other and other[key] else "not run")
                ratios.append(f"| {label} | {' | '.join(cells)} |")
        if ratios:
            lines += ["| comparison | chunkraft | etcd (ours/etcd) | raw pysyncobj "
                      "(ours/raw) |", "|---|---|---|---|", *ratios, ""]
        ceilings = [r for r in ROWS if r.get("item") == "ceiling"]
        if ceilings:
            lines += ["pysyncobj's ceiling, in the leader's process, one thread, no HTTP: " +
                      "; ".join(f"{c['mode']}: {c['calls_per_s']:,.0f} calls/s, "
                                f"{c['records_per_s']:,.0f} records/s" for c in ceilings), ""]
    for system in ("chunkraft", "etcd"):
        fo = find("failover", system)
        if fo:
            runs = [r["failover_s"] for r in ROWS if r.get("item") == "failover"
                    and r.get("system") == system and "failover_s" in r]
            verdict = ("met" if fo["median_s"] <= 1.0 else "MISSED") if system == "chunkraft" \
                else "comparison"
            if system == "chunkraft":
                lines += ["### 5. Failover: kill -9 of the leader, one client writing to a "
                          "follower, to the first successful write sent after the kill", "",
                          "| system | target | runs | median s | min s | max s | each run s | |",
                          "|---|---|---|---|---|---|---|---|"]
            lines.append(f"| {system} | {'median <= 1 s' if system == 'chunkraft' else '-'} | "
                         f"{fo['runs']} | {fo['median_s']} | {fo['min_s']} | {fo['max_s']} | "
                         f"{', '.join(str(t) for t in runs)} | {verdict} |")
    if any(r.get("item") == "failover" for r in summaries):
        lines.append("")
    restart = [r for r in ROWS if r.get("item") == "restart"]
    if restart:
        build = next((r for r in restart if r.get("phase") == "build"), {})
        dump = next((r for r in restart if str(r.get("phase", "")).startswith("restart from")),
                    {})
        final = next((r for r in restart if r.get("summary")), {})
        lines += [f"### 6. Restart to ready, {final.get('partitions', 0):,} partitions in the "
                  "image", "", "| figure | value |", "|---|---|"]
        if build:
            lines += [f"| build: {build['topics']:,} createTopics of 1,000 partitions (RF 3), "
                      f"4 clients | {build['seconds']} s, {build['records_per_s']:,} "
                      "partitions/s |",
                      f"| peak RSS after the build (VmHWM, MiB per node) | "
                      f"{build['vm_hwm_mib']} |"]
        if dump:
            lines += [f"| restart from the journal (no dump yet), to ready | "
                      f"{dump['journal_restart_ready_s']} s |",
                      f"| Raft dump write, per node (\"Raft dump written ... in X s\") | "
                      f"{dump['dump_s']} |",
                      f"| dump size, bytes | {dump['dump_bytes']} |",
                      f"| Raft epoch before / after the dumps | {dump['epoch_before_dump']} / "
                      f"{dump['epoch_after_dump']} |",
                      f"| peak RSS after the dump (MiB per node) | {dump['vm_hwm_mib']} |"]
        if final:
            verdict = "met" if final["ready_same_hash_s"] <= 60 else "MISSED"
            lines += [f"| kill -9 all three, restart: all /readyz 200 | {final['ready_s']} s |",
                      f"| ... and all report the same image hash at offset "
                      f"{max(v or 0 for v in final['offsets'].values()):,} (target <= 60 s) | "
                      f"{final['ready_same_hash_s']} s ({verdict}) |",
                      f"| peak RSS after the restart (MiB per node) | {final['vm_hwm_mib']} |"]
        lines.append("")
    lines += NOTES
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 run of 5 s per load")
    parser.add_argument("--only", choices=("partitions", "throughput", "failover", "restart"),
                        action="append", help="run only these items (repeatable)")
    parser.add_argument("--skip-etcd", action="store_true")
    parser.add_argument("--skip-raw", action="store_true")
    parser.add_argument("--partitions", type=int, default=1_000_000,
                        help="partitions in the image for the restart item")
    parser.add_argument("--build-timeout", type=float, default=1200.0)
    parser.add_argument("--partition-ops", type=int, default=30)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-save", action="store_true", help="do not append to RESULTS.md")
    parser.add_argument("--keep", action="store_true", help="keep logs and data dirs")
    parser.add_argument("--report-from", type=Path, nargs="+", metavar="JSONL",
                        help="write the RESULTS.md section from the JSON lines of earlier runs "
                             "of this script (their stdout) instead of measuring")
    args = parser.parse_args()
    if args.report_from:
        for path in args.report_from:
            for line in path.read_text().splitlines():
                if line.startswith("{"):
                    row = json.loads(line)
                    if row.get("item") == "note":
                        NOTES.append(row["text"])
                    elif row.get("bench") == "controller":
                        ROWS.append(row)
        append_section("Controller quorum: 3 nodes on 127.0.0.1, journal + password on",
                       report(args))
        return
    items = set(args.only or ("partitions", "throughput", "failover", "restart"))
    duration = 5.0 if args.quick else args.duration
    repeats = 1 if args.quick else args.repeats
    etcd_binary = None if args.skip_etcd else ensure_etcd()
    note(f"Code measured: {code_version()}. At the start: {other_load()}. This "
                 "script ran one system at a time, plus its client processes; the 3 brokers "
                 "of each chunkraft cluster are a heartbeat thread of the script (3 "
                 "heartbeats/s). Other work on the machine is not under this script's "
                 "control: `other CPU` in the tables is the machine's busy CPU during each "
                 "window minus the servers' and the clients' (from /proc/stat).")
    if etcd_binary and items & {"throughput", "failover"}:
        note(f"etcd: {etcd_version(etcd_binary)} (Debian etcd-server), 3 members on "
                     "127.0.0.1, default settings (fsync on).")
    with contextlib.ExitStack() as stack:
        if args.keep:
            base = Path(tempfile.mkdtemp(prefix="chunkraft-bench-"))
            print(f"# logs and data dirs are kept under {base}", flush=True)
        else:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="chunkraft-bench-")))
        steps: list[tuple[str, Callable[[], None]]] = []
        if items & {"partitions", "throughput"}:
            steps.append(("chunkraft load", lambda: chunkraft_load(args, items, base, duration,
                                                                  repeats)))
        if "throughput" in items and not args.skip_raw:
            steps.append(("raw pysyncobj", lambda: raw_throughput(args, base, duration,
                                                                  repeats)))
        if "throughput" in items and etcd_binary:
            steps.append(("etcd", lambda: etcd_throughput(args, base, etcd_binary, duration,
                                                          repeats)))
        if "failover" in items:
            steps.append(("failover", lambda: bench_failover(args, base, etcd_binary)))
        if "restart" in items:
            steps.append(("restart", lambda: bench_restart(args, base)))
        for name, step in steps:
            try:
                step()
            except Exception as error:  # report what was measured, and say what failed
                record({"item": "failure", "step": name, "error": repr(error)[:500]})
                note(f"The {name} step FAILED: {repr(error)[:300]}")
    if not args.no_save:
        append_section("Controller quorum: 3 nodes on 127.0.0.1, journal + password on",
                       report(args))


def chunkraft_load(args: argparse.Namespace, items: set[str], base: Path, duration: float,
                   repeats: int) -> None:
    with LocalCluster(base / "load") as cluster:
        brokers = Brokers(cluster)
        try:
            cluster.wait_ready(CLUSTER_TIMEOUT)
            if "partitions" in items:
                bench_partitions(args, cluster)
            if "throughput" in items:
                chunkraft_throughput(args, cluster, duration, repeats)
            dumps = dumps_in_logs(cluster)
            if any(dumps.values()):
                note(f"Raft dumps during the load runs: {dumps}")
        finally:
            brokers.close()


if __name__ == "__main__":
    main()
