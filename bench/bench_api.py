"""The admin REST API over HTTP on a real 3-node quorum, authentication on.

Every figure comes from a LocalCluster of 3 controller processes on 127.0.0.1 (its defaults:
journal, dump, Raft password, bearer-token authentication; every request carries the admin's
token), driven by the load client of ``_http_load.py`` (each task its own AsyncClient with one
keep-alive connection, in a client process of its own). Items, each selectable with ``--only``:

- ``middleware``: in-process cost of the metrics middleware per request (wrapped vs bare ASGI
  app, microseconds);
- ``overhead``: the REST layer's added latency: the same single-record operation through the
  RPC route and through the v3 route, one client, to the leader, interleaved in random order
  (createTopics of one 1-partition topic: ``POST /controller/v1/create-topics`` vs ``POST
  /v3/clusters/{c}/topics``; createPartitions +1 of one topic: ``/controller/v1/
  create-partitions`` vs ``PATCH /v3/clusters/{c}/topics/{t}``; and a read: metadata of one
  topic vs ``GET /v3/clusters/{c}/topics/{t}``): p50 of each and their difference (target:
  REST adds <= 2 ms p50);
- ``create-topics``: createTopics/s with ``--clients`` (32) clients to the leader, through v3
  and through the RPC route (1 partition, RF 3);
- ``create-partitions``: v3 ``topics:create-partitions`` latency p50/p99 with 32 clients (one
  pooled 1-partition topic to 2 partitions per request);
- ``describe``: ``GET .../topics/{t}/partitions?include_chunks=true&page_size=10000`` of a
  topic of 10,000 partitions (RF 3) and 50,000 inactive chunks (5 cuts per partition, made
  through ``/controller/v1/create-chunks`` with offsets, 2,500 partitions a request): one
  client (target p50 <= 200 ms) and 32 clients over the three nodes;
- ``metadata``: ``POST /controller/v1/metadata`` of every topic (no chunks) once the image
  holds 100,000 partitions: one client and 32 clients over the three nodes.

Items run in that order on one cluster (the image only grows from ``describe`` on). The 3
brokers are registered by the script and kept unfenced by a heartbeat thread (3 heartbeats/s).
Prints one JSON line per measurement and appends a dated section to bench/RESULTS.md (unless
--no-save). Not a test: never run it in CI. It only signals processes it started, by PID.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from _controller.cluster import (
    CLUSTER_TIMEOUT,
    Headers,
    cluster_with_brokers,
    controller_pids,
    create_pool,
    delete_names,
    delete_prefixed,
    post,
    quorum,
)
from _controller.load import measured
from _controller.machine import code_version, other_load
from _http_load import LoadResult, Workload, percentile, run_load
from _report import append_section, emit
from chunkraft.local.local_cluster import LocalCluster

ITEMS = ("middleware", "overhead", "create-topics", "create-partitions", "describe", "metadata")
ROWS: list[dict[str, Any]] = []
NOTES: list[str] = []
DESCRIBE_TOPIC = "describe-10k"
DESCRIBE_PARTITIONS = 10_000
CUTS_PER_PARTITION = 5
CHUNK_SPAN = 1_000  # offsets per cut chunk
METADATA_PARTITIONS = 100_000


def note(text: str) -> None:
    NOTES.append(text)
    emit({"bench": "api", "item": "note", "text": text})


def record(row: dict[str, Any]) -> dict[str, Any]:
    row = {"bench": "api", **row}
    emit(row)
    ROWS.append(row)
    return row


def ms(values: list[float], fraction: float) -> float:
    return round(percentile(values, fraction), 2)


# ------------------------------------------------------------------ middleware


def bench_middleware(requests: int) -> None:
    """The metrics middleware around a bare ASGI app, against the bare app, in-process."""
    from chunkraft.api.metrics import RequestMetricsMiddleware, RequestStats

    async def bare(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    class Route:
        path = "/v3/clusters/{cluster_id}/topics/{topic_name}"

    wrapped = RequestMetricsMiddleware(bare, RequestStats())
    scope = {"type": "http", "method": "GET", "path": "/v3/clusters/c/topics/t",
             "app": None, "route": Route()}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        return None

    async def timed(app: Any) -> float:
        started = time.perf_counter()
        for _ in range(requests):
            await app(dict(scope), receive, send)
        return time.perf_counter() - started

    async def runs() -> list[float]:
        await timed(wrapped)
        return [(await timed(wrapped) - await timed(bare)) / requests * 1e6 for _ in range(5)]

    costs = asyncio.run(runs())
    record({"item": "middleware", "requests_per_run": requests, "runs": len(costs),
            "us_per_request_median": round(statistics.median(costs), 2),
            "us_per_request_min": round(min(costs), 2), "summary": True})


# ------------------------------------------------------------------ overhead


def timed_request(client: httpx.Client, method: str, url: str, body: Any,
                  expect: int) -> float:
    headers = {"Idempotency-Key": os.urandom(16).hex()} if method != "GET" else {}
    began = time.perf_counter()
    answer = client.request(method, url, json=body, headers=headers)
    answer.json()
    elapsed = (time.perf_counter() - began) * 1000
    if answer.status_code != expect:
        raise RuntimeError(f"{method} {url}: {answer.status_code} {answer.text[:300]}")
    return elapsed


def pair_row(name: str, rpc: list[float], v3: list[float], extra: dict[str, Any]) -> None:
    diffs = [b - a for a, b in zip(rpc, v3, strict=True)]
    record({"item": "overhead", "operation": name, "pairs": len(rpc),
            "rpc_p50_ms": ms(rpc, 0.5), "rpc_p99_ms": ms(rpc, 0.99),
            "v3_p50_ms": ms(v3, 0.5), "v3_p99_ms": ms(v3, 0.99),
            "added_p50_ms": round(percentile(v3, 0.5) - percentile(rpc, 0.5), 2),
            "paired_diff_median_ms": round(statistics.median(diffs), 2), **extra,
            "summary": True})


def bench_overhead(cluster: LocalCluster, cluster_id: str, pairs: int) -> None:
    """Each pair sends the RPC and the v3 form of one operation back to back, in random
    order, on one keep-alive connection to the leader."""
    leader = cluster.wait_ready(CLUSTER_TIMEOUT)
    url = cluster.nodes[leader].url
    v3 = f"{url}/v3/clusters/{cluster_id}"
    rng = random.Random(4)
    warm = 20
    headers = cluster.headers
    pool = create_pool(url, headers, "ovp", 2 * (pairs + warm))
    with httpx.Client(headers=headers, timeout=60.0, trust_env=False) as client:
        def run_pairs(name: str, rpc_call: Callable[[int], float],
                      v3_call: Callable[[int], float]) -> None:
            rpc_ms: list[float] = []
            v3_ms: list[float] = []
            for i in range(warm + pairs):
                first_rpc = rng.random() < 0.5
                a, b = (rpc_call, v3_call) if first_rpc else (v3_call, rpc_call)
                one, two = a(i), b(i)
                if i >= warm:
                    rpc_ms.append(one if first_rpc else two)
                    v3_ms.append(two if first_rpc else one)
            pair_row(name, rpc_ms, v3_ms, {"leader": leader})

        run_pairs(
            "createTopics, 1 topic of 1 partition, RF 3",
            lambda i: timed_request(client, "POST", f"{url}/controller/v1/create-topics", {
                "topics": [{"name": f"ovr-{i}", "num_partitions": 1,
                            "replication_factor": 3}]}, 200),
            lambda i: timed_request(client, "POST", f"{v3}/topics", {
                "topic_name": f"ovv-{i}", "partitions_count": 1, "replication_factor": 3},
                201))
        run_pairs(
            "createPartitions +1 of one topic",
            lambda i: timed_request(client, "POST", f"{url}/controller/v1/create-partitions", {
                "topics": [{"name": pool[2 * i], "count": 2, "assignments": None}],
                "timeout_ms": 30_000, "validate_only": False}, 200),
            lambda i: timed_request(client, "PATCH", f"{v3}/topics/{pool[2 * i + 1]}",
                                    {"partitions_count": 2}, 200))
        run_pairs(
            "describe one topic (read)",
            lambda i: timed_request(client, "POST", f"{url}/controller/v1/metadata", {
                "topics": [{"name": pool[2 * i]}], "include_chunks": False}, 200),
            lambda i: timed_request(client, "GET", f"{v3}/topics/{pool[2 * i]}", None, 200))
    delete_names(url, headers, pool)
    for prefix in ("ovr", "ovv"):
        delete_prefixed(url, headers, prefix)


# ------------------------------------------------------------------ load items


def load_row(item: str, variant: str, workload: Workload, clients: int, duration: float,
             pids: list[int], offset_url: str | None = None,
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
    on_window, seen = measured(pids, offset_url, dict(workload.headers))
    result: LoadResult = run_load(workload, clients=clients, duration=duration,
                                  on_window=on_window)
    span = seen["t1"] - seen["t0"]
    window = result.window_s or 1.0
    row: dict[str, Any] = {
        "item": item, "variant": variant, "workload": workload.kind, "clients": clients,
        "urls": len(workload.urls), "window_s": round(window, 1), "ops": result.ops,
        "ops_per_s": round(result.ops / window, 1),
        "p50_ms": ms(result.latencies_ms, 0.5), "p99_ms": ms(result.latencies_ms, 0.99),
        "errors": result.errors, "first_error": result.first_error[:200],
        "pool_exhausted": result.pool_exhausted,
        "server_cpu_cores": round((seen["cpu1"] - seen["cpu0"]) / span, 2),
        "client_cpu_cores": round(result.client_cpu_s / window, 2),
        "other_cpu_cores": round(max((seen["busy1"] - seen["busy0"]) / span
                                     - (seen["cpu1"] - seen["cpu0"]) / span
                                     - result.client_cpu_s / span, 0), 2),
        **(extra or {}),
    }
    if offset_url:
        row["leader_changes"] = seen["epoch1"] - seen["epoch0"]
    return record(row)


def bench_create_topics(cluster: LocalCluster, cluster_id: str, clients: int,
                        duration: float, repeats: int) -> None:
    pids = controller_pids(cluster)
    for run in range(repeats):
        for variant, kind in (("v3", "v3-create-topic"), ("rpc", "create-topic")):
            leader_url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
            prefix = f"ct{variant}{run}"
            workload = Workload(kind, (leader_url,), prefix, cluster_id=cluster_id,
                                headers=tuple(cluster.headers.items()))
            load_row("create-topics", variant, workload, clients, duration, pids,
                     offset_url=leader_url, extra={"run": run})
            delete_prefixed(leader_url, cluster.headers, prefix)


def bench_create_partitions(cluster: LocalCluster, cluster_id: str, clients: int,
                            duration: float, repeats: int) -> None:
    pids = controller_pids(cluster)
    for run in range(repeats):
        leader_url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
        prefix = f"cp{run}"
        pool = create_pool(leader_url, cluster.headers, prefix, 12_000)
        workload = Workload("v3-create-partitions", (leader_url,), prefix, batch=1,
                            headers=tuple(cluster.headers.items()),
                            pool=tuple(pool), cluster_id=cluster_id)
        load_row("create-partitions", "v3", workload, clients, duration, pids,
                 offset_url=leader_url, extra={"run": run})
        delete_names(leader_url, cluster.headers, pool)


def build_describe_topic(url: str, headers: Headers) -> None:
    """10,000 partitions (RF 3) in one topic, then 5 cuts of each: 50,000 inactive chunks.

    One operation writes at most 10,000 records, so the topic is created with 9,999 partitions
    (and its topic record) and then grown by one (whose KIP-253 prior epochs list the 9,999:
    growing a large topic in big steps would write steps x partitions of them)."""
    began = time.monotonic()
    created = post(url, headers, "create-topics", {"topics": [
        {"name": DESCRIBE_TOPIC, "num_partitions": DESCRIBE_PARTITIONS - 1,
         "replication_factor": 3}]}, timeout=120)
    if created["topics"][0]["error_code"] != 0:
        raise RuntimeError(f"create-topics: {created}")
    grown = post(url, headers, "create-partitions", {
        "topics": [{"name": DESCRIBE_TOPIC, "count": DESCRIBE_PARTITIONS, "assignments": None}],
        "timeout_ms": 60_000, "validate_only": False}, timeout=120)
    if grown["results"][0]["error_code"] != 0:
        raise RuntimeError(f"create-partitions: {grown}")
    per_request = 2500  # 2 records a cut: 5,000 records, under the 10,000 of one operation
    for cut in range(1, CUTS_PER_PARTITION + 1):
        for first in range(0, DESCRIBE_PARTITIONS, per_request):
            answer = post(url, headers, "create-chunks", {"topics": [{
                "name": DESCRIBE_TOPIC,
                "partitions": [{
                    "partition_index": p, "broker_ids": [1, 2, 3],
                    "prev_stop_offset": cut * CHUNK_SPAN - 1,
                    "prev_end_offset": cut * CHUNK_SPAN - 1,
                    "start_offset": cut * CHUNK_SPAN,
                    "start_timestamp": 1_700_000_000_000 + cut} for p in
                    range(first, first + per_request)]}]}, timeout=120)
            bad = [p for t in answer["topics"] for p in t["partitions"] if p["error_code"]]
            if answer.get("error_code") or bad:
                raise RuntimeError(f"create-chunks: {answer.get('error_message')} {bad[:2]}")
    status = quorum(url, headers)
    for _ in range(100):  # the node asked may apply the last cut a moment after it answered
        if status["chunks"] >= DESCRIBE_PARTITIONS * CUTS_PER_PARTITION:
            break
        time.sleep(0.1)
        status = quorum(url, headers)
    record({"item": "describe-build", "partitions": status["partitions"],
            "chunks": status["chunks"], "seconds": round(time.monotonic() - began, 1)})


def sequential_reads(urls: list[str], headers: Headers, method: str, path: str, body: Any,
                     count: int) -> tuple[list[float], int, list[float]]:
    """``count`` reads by one client (after 2 unmeasured), in turn over ``urls``; latencies
    in ms, the size of the last answer and the latencies of the 2 first (cold) reads."""
    latencies: list[float] = []
    cold: list[float] = []
    size = 0
    with httpx.Client(headers=dict(headers), timeout=120.0, trust_env=False) as client:
        for i in range(count + 2):
            url = urls[i % len(urls)]
            began = time.perf_counter()
            answer = client.request(method, url + path, json=body)
            elapsed = (time.perf_counter() - began) * 1000
            if answer.status_code != 200:
                raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
            size = len(answer.content)
            (latencies if i >= 2 else cold).append(elapsed)
    return latencies, size, cold


def bench_read(cluster: LocalCluster, item: str, method: str, path: str, body: Any,
               clients: int, duration: float, sequential: int, extra: dict[str, Any]) -> None:
    pids = controller_pids(cluster)
    urls = [node.url for node in cluster.nodes.values()]
    leader_url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
    epoch = raft_epoch(cluster)
    latencies, size, cold = sequential_reads([leader_url], cluster.headers, method, path, body,
                                             sequential)
    epoch, elections = raft_epoch(cluster), raft_epoch(cluster) - epoch
    record({"item": item, "variant": "one client, to the leader", "clients": 1,
            "requests": len(latencies), "p50_ms": ms(latencies, 0.5),
            "p99_ms": ms(latencies, 0.99), "min_ms": round(min(latencies), 2),
            "max_ms": round(max(latencies), 2), "answer_bytes": size,
            "first_two_ms": [round(x, 1) for x in cold], "raft_elections": elections, **extra})
    kind = "get" if method == "GET" else "post-read"
    workload = Workload(kind, tuple(urls), item, path=path,
                        headers=tuple(cluster.headers.items()),
                        body=json.dumps(body) if body is not None else "", timeout=300.0)
    row = load_row(item, "clients over the 3 nodes", workload, clients, duration, pids,
                   extra={"answer_bytes": size, **extra})
    row["raft_elections"] = raft_epoch(cluster) - epoch
    record({"item": f"{item}-elections", "clients": clients,
            "raft_elections": row["raft_elections"]})


def raft_epoch(cluster: LocalCluster) -> int:
    """The quorum's Raft epoch (term) once a leader is known: each election raises it."""
    leader = cluster.wait_ready(CLUSTER_TIMEOUT)
    return int(quorum(cluster.nodes[leader].url, cluster.headers, timeout=60.0)["epoch"])


def bench_describe(cluster: LocalCluster, cluster_id: str, clients: int, duration: float,
                   sequential: int) -> None:
    url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
    status = quorum(url, cluster.headers)
    if status["partitions"] < DESCRIBE_PARTITIONS:
        build_describe_topic(url, cluster.headers)
    path = (f"/v3/clusters/{cluster_id}/topics/{DESCRIBE_TOPIC}/partitions"
            f"?include_chunks=true&page_size={DESCRIBE_PARTITIONS}")
    bench_read(cluster, "describe", "GET", path, None, clients, duration, sequential,
               {"partitions": DESCRIBE_PARTITIONS,
                "chunks": DESCRIBE_PARTITIONS * CUTS_PER_PARTITION})


def bench_metadata(cluster: LocalCluster, clients: int, duration: float,
                   sequential: int) -> None:
    url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
    have = quorum(url, cluster.headers)["partitions"]
    began = time.monotonic()
    for index in range(max(METADATA_PARTITIONS - have, 0) // 1000):
        created = post(url, cluster.headers, "create-topics", {"topics": [
            {"name": f"meta-{index}", "num_partitions": 1000, "replication_factor": 3}]})
        if created["topics"][0]["error_code"] not in (0, 36):
            raise RuntimeError(f"create-topics: {created}")
    status = quorum(url, cluster.headers)
    record({"item": "metadata-build", "partitions": status["partitions"],
            "topics": status["topics"], "chunks": status["chunks"],
            "seconds": round(time.monotonic() - began, 1)})
    bench_read(cluster, "metadata", "POST", "/controller/v1/metadata",
               {"topics": None, "include_chunks": False}, clients, duration, sequential,
               {"partitions": status["partitions"], "topics": status["topics"]})


# ------------------------------------------------------------------ report


def find(item: str, **match: Any) -> list[dict[str, Any]]:
    return [r for r in ROWS if r.get("item") == item
            and all(r.get(k) == v for k, v in match.items())]


def med(rows: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 2) if rows else 0.0


def report(clients: int) -> list[str]:
    lines = ["3 controller processes on 127.0.0.1 (LocalCluster defaults: journal, dump, Raft "
             "password, bearer-token authentication on every request), load from "
             "`_http_load.py` client processes; medians of the runs where there are several.",
             "", "| figure | measured | target |", "|---|---|---|"]
    for row in find("overhead"):
        target = "REST adds <= 2 ms p50" if row["operation"].startswith("create") else "-"
        verdict = ""
        if target != "-":
            verdict = " (met)" if row["added_p50_ms"] <= 2.0 else " (MISSED)"
        lines.append(
            f"| REST layer's added latency, {row['operation']}: RPC p50 {row['rpc_p50_ms']} "
            f"ms / v3 p50 {row['v3_p50_ms']} ms ({row['pairs']} interleaved pairs, one client, "
            f"to the leader) | {row['added_p50_ms']:+.2f} ms p50 (median of paired differences "
            f"{row['paired_diff_median_ms']:+.2f} ms){verdict} | {target} |")
    for row in find("middleware"):
        lines.append(f"| metrics middleware, in-process, per request | "
                     f"{row['us_per_request_median']} us (min {row['us_per_request_min']}) | "
                     "part of the 2 ms |")
    for variant in ("v3", "rpc"):
        rows = find("create-topics", variant=variant)
        if rows:
            lines.append(
                f"| createTopics/s, {clients} clients to the leader, {variant} "
                f"({len(rows)} runs) | {med(rows, 'ops_per_s')} ops/s (runs "
                f"{', '.join(str(r['ops_per_s']) for r in rows)}), p50 {med(rows, 'p50_ms')} "
                f"ms, p99 {med(rows, 'p99_ms')} ms, errors {sum(r['errors'] for r in rows)} "
                "| - |")
    rows = find("create-partitions")
    if rows:
        lines.append(
            f"| v3 topics:create-partitions (+1 partition of one topic), {clients} clients to "
            f"the leader ({len(rows)} runs) | p50 {med(rows, 'p50_ms')} ms, p99 "
            f"{med(rows, 'p99_ms')} ms, {med(rows, 'ops_per_s')} ops/s, errors "
            f"{sum(r['errors'] for r in rows)} | - |")
    for item, label, target in (
            ("describe", "describe of a topic of 10,000 partitions and 50,000 chunks (v3, "
             "include_chunks, one page)", "p50 <= 200 ms"),
            ("metadata", "metadata endpoint, every topic, 100,000 partitions, no chunks", "-")):
        one = find(item, clients=1)
        if one:
            row = one[0]
            verdict = ""
            if target != "-":
                verdict = " (met)" if row["p50_ms"] <= 200 else " (MISSED)"
            lines.append(f"| {label}, one client | p50 {row['p50_ms']} ms, p99 "
                         f"{row['p99_ms']} ms ({row['requests']} requests, "
                         f"{row['answer_bytes']:,} bytes, Raft elections meanwhile "
                         f"{row.get('raft_elections', '?')}; the first two reads, not "
                         f"counted: {row.get('first_two_ms', '?')} ms){verdict} | {target} |")
        many = [r for r in find(item) if r.get("clients", 1) > 1]
        elections = {r["clients"]: r["raft_elections"] for r in find(f"{item}-elections")}
        for row in many:
            lines.append(f"| {label}, {row['clients']} clients over the 3 nodes | p50 "
                         f"{row['p50_ms']} ms, p99 {row['p99_ms']} ms, {row['ops_per_s']} "
                         f"answers/s, errors {row['errors']}, Raft elections meanwhile "
                         f"{elections.get(row['clients'], '?')} | - |")
    lines.append("")
    for build in find("describe-build") + find("metadata-build"):
        lines.append(f"Build ({build['item']}): {build['partitions']:,} partitions, "
                     f"{build['chunks']:,} chunks in the image after {build['seconds']} s.")
    cpu = [r for r in ROWS if "other_cpu_cores" in r]
    if cpu:
        lines.append("CPU during the load windows (cores): " + "; ".join(
            f"{r['item']} {r.get('variant', '')}: servers {r['server_cpu_cores']}, clients "
            f"{r['client_cpu_cores']}, other {r['other_cpu_cores']}" for r in cpu) + ".")
    lines.append("")
    lines += NOTES
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="1 run of 5 s per load, 100 pairs, 10 sequential reads")
    parser.add_argument("--only", choices=ITEMS, action="append",
                        help="run only these items (repeatable)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--reads", type=int, default=30, help="sequential reads, one client")
    parser.add_argument("--no-save", action="store_true", help="do not append to RESULTS.md")
    parser.add_argument("--keep", action="store_true", help="keep logs and data dirs")
    parser.add_argument("--report-from", type=Path, nargs="+", metavar="JSONL",
                        help="write the RESULTS.md section from the JSON lines of earlier runs "
                             "of this script (their stdout) instead of measuring")
    args = parser.parse_args()
    if args.report_from:
        for path in args.report_from:
            for line in path.read_text().splitlines():
                row = json.loads(line) if line.startswith("{") else {}
                if row.get("bench") == "api":
                    (NOTES.append(row["text"]) if row.get("item") == "note"
                     else ROWS.append(row))
        append_section("REST API: 3 nodes on 127.0.0.1, authentication on",
                       report(args.clients))
        return
    items = [item for item in ITEMS if item in set(args.only or ITEMS)]
    duration = 5.0 if args.quick else args.duration
    repeats = 1 if args.quick else args.repeats
    pairs = 100 if args.quick else args.pairs
    reads = 10 if args.quick else args.reads
    # 32 concurrent reads of 20+ MB answers (10,000 partitions with their chunks, or 100,000
    # partitions) take tens of seconds each on 2 cores: they start together and end together,
    # so a window must hold a few rounds of them for a p50 to mean anything
    read_window = 40.0 if args.quick else max(duration, 90.0)
    note(f"Code measured: {code_version()}. At the start: {other_load()}. Other work on the "
         "machine is not under this script's control: `other` CPU is the machine's busy CPU "
         "during each load window minus the servers' and the clients'.")
    steps: list[tuple[str, Callable[[], None]]] = []
    with contextlib.ExitStack() as stack:
        if "middleware" in items:
            steps.append(("middleware", lambda: bench_middleware(200_000 if not args.quick
                                                                 else 50_000)))
        if set(items) - {"middleware"}:
            if args.keep:
                base = Path(tempfile.mkdtemp(prefix="chunkraft-bench-api-"))
                print(f"# logs and data dirs are kept under {base}", flush=True)
            else:
                base = Path(stack.enter_context(tempfile.TemporaryDirectory(
                    prefix="chunkraft-bench-api-")))
            cluster, leader_url = cluster_with_brokers(stack, base, "api")
            cluster_id = str(quorum(leader_url, cluster.headers)["cluster_id"])
            actions: dict[str, Callable[[], None]] = {
                "overhead": lambda: bench_overhead(cluster, cluster_id, pairs),
                "create-topics": lambda: bench_create_topics(cluster, cluster_id, args.clients,
                                                             duration, repeats),
                "create-partitions": lambda: bench_create_partitions(
                    cluster, cluster_id, args.clients, duration, repeats),
                "describe": lambda: bench_describe(cluster, cluster_id, args.clients,
                                                   read_window, reads),
                "metadata": lambda: bench_metadata(cluster, args.clients, read_window, reads),
            }
            steps += [(item, actions[item]) for item in items if item in actions]
        for name, step in steps:
            try:
                step()
            except Exception as error:  # report what was measured, and say what failed
                record({"item": "failure", "step": name, "error": repr(error)[:500]})
                note(f"The {name} step FAILED: {repr(error)[:300]}")
    if not args.no_save:
        append_section("REST API: 3 nodes on 127.0.0.1, authentication on",
                       report(args.clients))


if __name__ == "__main__":
    main()
