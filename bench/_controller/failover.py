"""Item 5: failover. kill -9 of the leader while one client writes to a follower (a survivor,
for etcd); the time from the kill to the first successful write sent after it.

The errors after the kill are what this item measures: they never fail the run. Each system's
writer carries its own headers (chunkraft's admin token; none for etcd).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from _controller.cluster import CLUSTER_TIMEOUT, Brokers, Headers
from _controller.results import Results
from _etcd import EtcdCluster
from _http_load import new_client, summary
from chunkraft.local.local_cluster import LocalCluster


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


def _summary_row(results: Results, system: str, runs: int, times: list[float]) -> None:
    s = summary(times)
    results.record({"item": "failover", "system": system, "runs": runs,
                    "succeeded": len(times), "median_s": s["median"], "min_s": s["min"],
                    "max_s": s["max"], "summary": True})


def chunkraft_failover(results: Results, base: Path, runs: int) -> None:
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
                    functools.partial(cluster.kill, leader), cluster.nodes[follower].url,
                    cluster.headers, "/controller/v1/create-topics", body, ok))
                result["new_leader"] = cluster.leader_id()
                results.record({"item": "failover", "system": "chunkraft", "run": run,
                                "killed": leader, "written_to": follower, **result})
                if result["failover_s"] is not None:
                    times.append(result["failover_s"])
                cluster.start(leader)
                cluster.wait_ready(CLUSTER_TIMEOUT)
                time.sleep(2.0)  # the restarted node catches up before the next kill
            _summary_row(results, "chunkraft", runs, times)
        finally:
            brokers.close()


def etcd_failover(results: Results, base: Path, binary: str, runs: int) -> None:
    with EtcdCluster(base / "etcd-failover", binary=binary) as etcd:
        times = []
        for run in range(runs):
            leader = etcd.leader_index(CLUSTER_TIMEOUT)
            survivor = (leader + 1) % 3

            def put(seq: int, run: int = run) -> dict[str, Any]:
                return {"key": "Zm8=", "value": base64.b64encode(f"{run}-{seq}".encode()).decode()}

            result = asyncio.run(_failover_once(
                functools.partial(etcd.kill, leader), etcd.urls[survivor], {}, "/v3/kv/put",
                put, lambda status, answer: status == 200))
            results.record({"item": "failover", "system": "etcd", "run": run, **result})
            if result["failover_s"] is not None:
                times.append(result["failover_s"])
            etcd.start(leader)
            etcd.leader_index(CLUSTER_TIMEOUT)
            time.sleep(2.0)
        _summary_row(results, "etcd", runs, times)


def bench_failover(results: Results, base: Path, etcd_binary: str | None, runs: int) -> None:
    chunkraft_failover(results, base, runs)
    if etcd_binary is not None:
        etcd_failover(results, base, etcd_binary, runs)
