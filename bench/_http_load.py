"""The one HTTP load client every system in bench_controller.py is driven with.

Follows ``shared/BENCH.md``: every asyncio task has its own ``httpx.AsyncClient`` holding one
keep-alive connection, ``sniffio`` is installed, bodies are built the same way and every answer
is parsed as JSON, whatever the system. Clients run in their own processes (``spawn``), never in
the process that manages the servers, so the client CPU they report is theirs alone; with
``processes=2`` the same tasks are split over two client processes.

A :class:`Workload` says what one request is; :func:`run_load` runs ``clients`` tasks for a
warm-up and then a measured window, both bounded in time (and each task in requests), and
returns what completed inside the window.

Each system's client settings travel in its :class:`Workload` (``headers``, ``timeout``) and
nowhere else: the client processes read nothing from the environment (no token, no proxy, no
``.netrc``), so a chunkraft token can never reach etcd's or raw pysyncobj's requests.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import statistics
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

import httpx
import sniffio  # noqa: F401  (BENCH.md: without it httpcore retries the import per request)

MAX_REQUESTS_PER_TASK = 200_000
"""A hard bound on any task's loop, whatever the duration."""

_TLS = ssl.create_default_context()
VALUE_200 = base64.b64encode(b"v" * 200).decode()


@dataclass(frozen=True)
class Workload:
    """What one request of a load run is.

    ``kind``: ``create-topic`` (chunkraft createTopics of one topic with one partition),
    ``create-partitions`` (chunkraft createPartitions of one pooled 1-partition topic to
    ``1 + batch`` partitions), ``etcd-put``, ``etcd-txn`` (``batch`` puts in one txn),
    ``raw-put`` and ``raw-batch`` (raw pysyncobj front, ``batch`` values in one call);
    ``v3-create-topic`` and ``v3-create-partitions`` (the same two chunkraft operations through
    REST v3); ``get`` and ``post-read`` (the same read, ``path`` and ``body``, every time; the
    answer is checked for status 200 and not parsed, so a large body costs the client only its
    transfer). Task ``i`` sends to ``urls[i % len(urls)]``.
    """

    kind: str
    urls: tuple[str, ...]
    prefix: str
    batch: int = 1
    replication_factor: int = 3
    pool: tuple[str, ...] = ()
    cluster_id: str = ""
    """The REST v3 kinds' cluster id (its text form, as in their paths)."""
    path: str = ""
    """``get`` and ``post-read``: the path (and query) every request asks for."""
    body: str = ""
    """``post-read``: the JSON body every request sends."""
    timeout: float = 30.0
    """Seconds a request may take (large reads under load take longer than 30)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers every request of this system carries, e.g. chunkraft's ``authorization`` (as
    ``tuple(cluster.headers.items())``); etcd and raw pysyncobj carry none. The only source of
    such headers: nothing is taken from the environment."""

    @property
    def records_per_op(self) -> int:
        """Records (puts) one successful request writes, as the client counts them."""
        if self.kind in ("create-topic", "v3-create-topic"):
            return 2
        if self.kind in ("create-partitions", "v3-create-partitions"):
            return self.batch + 1  # the new partitions + one leader-epoch bump (KIP-253)
        if self.kind in READ_KINDS:
            return 0
        return self.batch


READ_KINDS = frozenset({"get", "post-read"})
"""Kinds whose answers are not parsed (see :class:`Workload`)."""


@dataclass
class Request:
    path: str
    body: bytes
    headers: dict[str, str]
    method: str = "POST"


def build_request(workload: Workload, task: int, tasks: int, seq: int) -> Request | None:
    """The ``seq``-th request of task ``task`` (of ``tasks``); None when its pool is used up."""
    name = f"{workload.prefix}-{task}-{seq}"
    headers = {"content-type": "application/json"}
    kind = workload.kind
    body: dict[str, Any]
    if kind == "create-topic":
        path = "/controller/v1/create-topics"
        body = {"topics": [{"name": name, "num_partitions": 1,
                            "replication_factor": workload.replication_factor}]}
        headers["Idempotency-Key"] = os.urandom(16).hex()
    elif kind == "create-partitions":
        index = task + seq * tasks
        if index >= len(workload.pool):
            return None
        path = "/controller/v1/create-partitions"
        body = {"topics": [{"name": workload.pool[index], "count": 1 + workload.batch,
                            "assignments": None}], "timeout_ms": 30_000,
                "validate_only": False}
        headers["Idempotency-Key"] = os.urandom(16).hex()
    elif kind == "v3-create-topic":
        path = f"/v3/clusters/{workload.cluster_id}/topics"
        body = {"topic_name": name, "partitions_count": 1,
                "replication_factor": workload.replication_factor}
        headers["Idempotency-Key"] = os.urandom(16).hex()
    elif kind == "v3-create-partitions":
        index = task + seq * tasks
        if index >= len(workload.pool):
            return None
        path = f"/v3/clusters/{workload.cluster_id}/topics:create-partitions"
        body = {"topics": [{"topic_name": workload.pool[index],
                            "partitions_count": 1 + workload.batch}], "timeout_ms": 30_000}
        headers["Idempotency-Key"] = os.urandom(16).hex()
    elif kind == "get":
        return Request(workload.path, b"", {}, "GET")
    elif kind == "post-read":
        return Request(workload.path, workload.body.encode(), headers)
    elif kind == "etcd-put":
        path = "/v3/kv/put"
        body = {"key": base64.b64encode(name.encode()).decode(), "value": VALUE_200}
    elif kind == "etcd-txn":
        path = "/v3/kv/txn"
        body = {"success": [
            {"requestPut": {"key": base64.b64encode(f"{name}-{i}".encode()).decode(),
                            "value": VALUE_200}} for i in range(workload.batch)]}
    elif kind == "raw-put":
        path = "/put"
        body = {"key": name, "value": VALUE_200}
    elif kind == "raw-batch":
        path = "/put-batch"
        body = {"items": [[f"{name}-{i}", VALUE_200] for i in range(workload.batch)]}
    else:
        raise ValueError(f"unknown workload kind {kind!r}")
    return Request(path, json.dumps(body).encode(), headers)


def _all_ok(results: Any) -> bool:
    """Whether a chunkraft answer's list of per-item results is non-empty and all succeeded
    (an answer of another shape is a failure, not an exception)."""
    return isinstance(results, list) and bool(results) and all(
        isinstance(t, dict) and t.get("error_code") == 0 for t in results)


def answer_ok(kind: str, status: int, answer: Any) -> bool:
    """Whether a parsed answer is a success (chunkraft errors travel in the body)."""
    if kind in READ_KINDS:
        return status == 200
    if kind == "v3-create-topic":
        return status == 201
    if status != 200 or not isinstance(answer, dict):
        return False
    if kind == "v3-create-partitions":
        return _all_ok(answer.get("data"))
    if kind == "create-topic":
        return _all_ok(answer.get("topics"))
    if kind == "create-partitions":
        return _all_ok(answer.get("results"))
    if kind == "etcd-txn":
        return bool(answer.get("succeeded"))
    return True


@dataclass
class LoadResult:
    """What completed inside the measured window."""

    ops: int = 0
    errors: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    client_cpu_s: float = 0.0
    window_s: float = 0.0
    pool_exhausted: bool = False
    first_error: str = ""

    def merge(self, other: LoadResult) -> None:
        self.ops += other.ops
        self.errors += other.errors
        self.latencies_ms.extend(other.latencies_ms)
        self.client_cpu_s += other.client_cpu_s
        self.window_s = max(self.window_s, other.window_s)
        self.pool_exhausted = self.pool_exhausted or other.pool_exhausted
        self.first_error = self.first_error or other.first_error


def new_client(url: str, timeout: float = 30.0, headers: Mapping[str, str] | None = None,
               transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """An AsyncClient with one keep-alive connection, sending ``headers`` (and no others of
    ours) with every request. ``trust_env=False``: no proxy, ``.netrc`` or certificate setting
    comes from the environment either. The TLS context (never used: plain HTTP) is built once
    and shared: httpx builds one per client otherwise, ~0.1 s each here. ``transport`` is for
    tests (an ``httpx.MockTransport``)."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout, verify=_TLS,
                             headers=dict(headers or {}), trust_env=False,
                             transport=transport)


async def _task(workload: Workload, task: int, tasks: int, start: float, end: float,
                result: LoadResult, stop_at: float, client: httpx.AsyncClient) -> None:
    async with client:
        for seq in range(MAX_REQUESTS_PER_TASK):
            now = time.time()
            if now >= stop_at:
                return
            request = build_request(workload, task, tasks, seq)
            if request is None:
                result.pool_exhausted = True
                return
            began = time.perf_counter()
            try:
                response = await client.request(request.method, request.path,
                                                content=request.body or None,
                                                headers=request.headers)
                parsed = None if workload.kind in READ_KINDS else response.json()
                ok = answer_ok(workload.kind, response.status_code, parsed)
                if not ok and not result.first_error:
                    result.first_error = f"{response.status_code} {response.text[:300]}"
            except (httpx.HTTPError, ValueError) as error:
                ok = False
                if not result.first_error:
                    result.first_error = repr(error)
                await asyncio.sleep(0.01)
            finished = time.time()
            if start <= finished <= end:
                if ok:
                    result.ops += 1
                    result.latencies_ms.append((time.perf_counter() - began) * 1000)
                else:
                    result.errors += 1


async def _run_tasks(workload: Workload, task_ids: list[int], tasks: int, start: float,
                     end: float, transport: httpx.AsyncBaseTransport | None = None
                     ) -> LoadResult:
    result = LoadResult()
    clients = [new_client(workload.urls[t % len(workload.urls)], workload.timeout,
                          dict(workload.headers), transport)
               for t in task_ids]
    await asyncio.sleep(max(start - 1.0 - time.time(), 0))  # warm-up starts 1 s before
    cpu_before: float | None = None

    async def sample_cpu() -> None:
        nonlocal cpu_before
        await asyncio.sleep(max(start - time.time(), 0))
        cpu_before = time.process_time()

    sampler = asyncio.ensure_future(sample_cpu())
    await asyncio.gather(*(_task(workload, t, tasks, start, end, result, end, client)
                           for t, client in zip(task_ids, clients, strict=True)))
    await sampler
    result.client_cpu_s = time.process_time() - (cpu_before or 0.0)
    result.window_s = end - start
    return result


def worker(workload: Workload, task_ids: list[int], tasks: int, start: float,
           end: float) -> LoadResult:
    """One client process: runs its tasks and returns their result (picklable)."""
    return asyncio.run(_run_tasks(workload, task_ids, tasks, start, end))


def run_load(workload: Workload, *, clients: int, duration: float, processes: int = 1,
             on_window: Any = None) -> LoadResult:
    """Runs ``clients`` tasks over ``processes`` client processes: 1 s of warm-up, then a
    measured window of ``duration`` seconds. ``on_window(start, end)``, if given, is called in
    this process (e.g. to sample the server's offset at the window's edges) while they run."""
    context = get_context("spawn")
    lead = 3.0  # time for the spawned processes to import and connect
    start = time.time() + lead + 1.0
    end = start + duration
    merged = LoadResult()
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        futures = [pool.submit(worker, workload, list(range(p, clients, processes)), clients,
                               start, end) for p in range(processes)]
        if on_window is not None:
            on_window(start, end)
        for future in futures:
            merged.merge(future.result(timeout=duration + 120))
    return merged


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(min(round(fraction * len(ordered) + 0.5) - 1, len(ordered) - 1), 0)
    return ordered[rank]


def summary(values: list[float]) -> dict[str, float]:
    """Median, min and max of a few runs' figures (the spread)."""
    if not values:
        return {"median": 0.0, "min": 0.0, "max": 0.0}
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}
