"""Items 2-4: throughput of chunkraft, raw pysyncobj and etcd 3.4 behind the same client.

Batched records/s (chunkraft: createPartitions adding 100 partitions to a pooled 1-partition
topic, 101 records per op counted from the quorum's metadata offset; raw: a call of 100 values;
etcd: a txn of 100 puts) and single ops/s (createTopics of one topic RF 3, 2 records; one value;
one put), with 1 and 32 clients, then 32 clients from two client processes and to a follower.

Each system's workloads carry that system's own client settings: chunkraft's carry its admin
token, etcd's and raw pysyncobj's carry no header of ours. ``broken=True`` (a test-only switch)
sends a reference's load to a port where nothing listens, to prove that the run then fails.

Every window (and the ceiling's call) samples its own system's quorum at its edges
(``LocalCluster.leadership``, ``RawCluster.leadership``, ``EtcdCluster.leadership``): a row
whose leader moved fails the run, a reference's as much as ours.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx

from _controller.cluster import (
    CLUSTER_TIMEOUT,
    controller_pids,
    create_pool,
    delete_names,
    delete_prefixed,
)
from _controller.load import medians, run_config
from _controller.results import Results
from _etcd import EtcdCluster
from _http_load import Workload
from _pysyncobj_front import RawCluster
from _steady import LeadershipWindow, Sampler
from chunkraft.local.local_cluster import LocalCluster, free_ports

EXTRA_RUNS = ("two client processes", "to a follower")
"""The variants of the 32-client single-op run; the first runs from 2 client processes."""


def nowhere() -> str:
    """A URL where nothing listens (for ``broken`` runs)."""
    return f"http://127.0.0.1:{free_ports(1)[0]}"


def chunkraft_throughput(results: Results, cluster: LocalCluster, duration: float,
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
            rows.append(run_config(results, "chunkraft", "batched", workload, clients,
                                   duration, pids, run=run, offset_url=leader_url,
                                   leadership=cluster.leadership))
            delete_names(leader_url, headers, pool)
        medians(results, rows)
    for clients in (1, 32):
        rows = []
        for run in range(repeats):
            leader_url = cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url
            prefix = f"s{clients}r{run}"
            workload = Workload("create-topic", (leader_url,), prefix, headers=own)
            rows.append(run_config(results, "chunkraft", "single", workload, clients,
                                   duration, pids, run=run, offset_url=leader_url,
                                   leadership=cluster.leadership))
            delete_prefixed(leader_url, headers, prefix)
        medians(results, rows)
    leader = cluster.wait_ready(CLUSTER_TIMEOUT)
    leader_url = cluster.nodes[leader].url
    follower = next(n for n in cluster.nodes if n != leader)
    extra_runs = [(EXTRA_RUNS[0], (leader_url,), 2),
                  (EXTRA_RUNS[1], (cluster.nodes[follower].url,), 1)]
    for label, urls, processes in extra_runs:
        prefix = f"x{processes}{len(label)}"
        workload = Workload("create-topic", urls, prefix, headers=own)
        row = run_config(results, "chunkraft", "single", workload, 32, duration, pids,
                         processes=processes, offset_url=leader_url, variant=label,
                         leadership=cluster.leadership)
        medians(results, [row], label)
        delete_prefixed(leader_url, headers, prefix)


def _reference_runs(results: Results, system: str, kinds: tuple[tuple[str, int], ...],
                    url: str, follower: str, pids: list[int], duration: float,
                    repeats: int, prefix: str, leadership: Sampler) -> None:
    """The rows of a reference system: no headers of ours (``Workload.headers`` empty);
    ``leadership`` samples its quorum at each window's edges."""
    for kind, batch in kinds:
        for clients in (1, 32):
            rows = [run_config(results, system, "batched" if batch > 1 else "single",
                               Workload(kind, (url,), f"{prefix}{clients}-{run}", batch=batch),
                               clients, duration, pids, run=run, leadership=leadership)
                    for run in range(repeats)]
            medians(results, rows)
    single = kinds[-1][0]
    for label, urls, processes in ((EXTRA_RUNS[0], (url,), 2),
                                   (EXTRA_RUNS[1], (follower,), 1)):
        row = run_config(results, system, "single",
                         Workload(single, urls, f"{prefix}x{processes}"), 32, duration, pids,
                         processes=processes, variant=label, leadership=leadership)
        medians(results, [row], label)


def raw_throughput(results: Results, base: Path, duration: float, repeats: int,
                   broken: bool = False) -> None:
    with RawCluster(base / "raw", password=os.urandom(18).hex()) as raw:
        leader = raw.leader_index(CLUSTER_TIMEOUT)
        url = raw.urls[leader]
        follower = raw.urls[(leader + 1) % 3]
        pids = [p for p in (raw.pid(i) for i in range(3)) if p is not None]
        load_url, load_follower = (nowhere(), nowhere()) if broken else (url, follower)
        _reference_runs(results, "pysyncobj", (("raw-batch", 100), ("raw-put", 1)), load_url,
                        load_follower, pids, duration, repeats, "r", raw.leadership)
        for mode, batch in (("sync", 1), ("async", 100)):
            with LeadershipWindow(raw.leadership) as window:
                answer: dict[str, Any] = httpx.post(f"{url}/ceiling", json={
                    "mode": mode, "seconds": min(duration, 10), "batch": batch,
                    "window": 100}, timeout=120, trust_env=False).json()
            results.record({"item": "ceiling", "system": "pysyncobj", **answer,
                            **window.result().fields()})


def etcd_throughput(results: Results, base: Path, binary: str, duration: float, repeats: int,
                    broken: bool = False) -> None:
    with EtcdCluster(base / "etcd", binary=binary) as etcd:
        leader = etcd.leader_index(CLUSTER_TIMEOUT)
        url = etcd.urls[leader]
        follower = etcd.urls[(leader + 1) % 3]
        pids = [p for p in (etcd.pid(i) for i in range(3)) if p is not None]
        load_url, load_follower = (nowhere(), nowhere()) if broken else (url, follower)
        _reference_runs(results, "etcd", (("etcd-txn", 100), ("etcd-put", 1)), load_url,
                        load_follower, pids, duration, repeats, "e", etcd.leadership)
