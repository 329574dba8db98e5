"""Item 6: restart to ready with a large image.

Builds an image of ``partitions`` partitions (topics of 1,000), restarts once with a compaction
due 15 s after the start so that every node writes its Raft dump, then kills -9 all three and
times until all are ready and agree on the image hash. The brokers keep heartbeating throughout,
as real brokers would through a controller restart: without them the new leader fences each
broker, one record per partition it holds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import time
from pathlib import Path
from typing import Any

from _controller.cluster import CLUSTER_TIMEOUT, Brokers, build_topics, quorum
from _controller.machine import vm_hwm_mib
from _controller.results import Results
from chunkraft.local.local_cluster import LocalCluster

DUMP_LINE = re.compile(r"Raft dump written at offset (\d+) in ([0-9.]+) s")
NEVER = {"raft.log.compaction.min.entries": "100000000",
         "raft.log.compaction.min.time.ms": "86400000"}
"""Compaction settings under which no dump is written during the measured restart."""
PER_TOPIC = 1000


def dumps_in_logs(cluster: LocalCluster) -> dict[int, list[tuple[int, float]]]:
    """Each node's Raft dumps so far, from its log: (offset, seconds the write took)."""
    found: dict[int, list[tuple[int, float]]] = {}
    for node_id, node in cluster.nodes.items():
        text = node.log_path.read_text(errors="replace") if node.log_path.exists() else ""
        found[node_id] = [(int(m[1]), float(m[2])) for m in DUMP_LINE.finditer(text)]
    return found


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


def _peak_rss(cluster: LocalCluster) -> dict[int, int]:
    return {n: round(vm_hwm_mib(node.process.pid))
            for n, node in cluster.nodes.items() if node.process}


def bench_restart(results: Results, base: Path, partitions: int, build_timeout: float) -> None:
    topics = max(partitions // PER_TOPIC, 1)
    with LocalCluster(base / "restart", extra_properties=dict(NEVER)) as cluster:
        brokers = Brokers(cluster)
        try:
            _restart_phases(results, cluster, topics, build_timeout)
        finally:
            brokers.close()


def _restart_phases(results: Results, cluster: LocalCluster, topics: int,
                    build_timeout: float) -> None:
    headers = cluster.headers
    leader = cluster.wait_ready(CLUSTER_TIMEOUT)
    url = cluster.nodes[leader].url
    epoch = quorum(url, headers)["epoch"]
    began = time.monotonic()
    retries: list[str] = []
    created = asyncio.run(build_topics(url, headers, topics, PER_TOPIC, 9, 4,
                                       began + build_timeout, retries))
    build_s = time.monotonic() - began
    # Ask the leader of now (leadership moves during the build; a follower may lag).
    status = quorum(cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url, headers)
    offset, partitions = status["metadata_offset"], status["partitions"]
    results.record({"item": "restart", "phase": "build", "topics": created,
                    "partitions": partitions, "offset": offset, "seconds": round(build_s, 1),
                    "records_per_s": round(partitions / build_s),
                    "raft_epochs": [epoch, status["epoch"]], "retries": len(retries),
                    "retry_reasons": sorted(set(retries))[:5],
                    "vm_hwm_mib": _peak_rss(cluster)})
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
    results.record({"item": "restart", "phase": "restart from the journal, then dump",
                    "journal_restart_ready_s": round(journal_ready_s, 1),
                    "dump_s": {n: d[1] for n, d in dumps.items()},
                    "dump_offset": {n: d[0] for n, d in dumps.items()},
                    "dump_bytes": {n: node.data_dir.joinpath("raft", "dump").stat().st_size
                                   for n, node in cluster.nodes.items()},
                    "epoch_before_dump": epoch_before, "epoch_after_dump": epoch_after,
                    "vm_hwm_mib": _peak_rss(cluster)})
    cluster.extra_properties = dict(NEVER)
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
        offsets = {int((h or {}).get("metadata_offset") or 0) for h in hashes.values()}
        if len(values) == 1 and None not in values and min(offsets) >= offset:
            break
        time.sleep(0.2)
    hash_s = time.monotonic() - began
    partitions = max(int((h or {}).get("partitions") or 0) for h in hashes.values())
    epoch = quorum(cluster.nodes[cluster.wait_ready(900)].url, headers)["epoch"]
    results.record({"item": "restart", "phase": "kill -9 all, restart", "partitions": partitions,
                    "ready_s": round(ready_s, 1), "ready_same_hash_s": round(hash_s, 1),
                    "offsets": {n: (h or {}).get("metadata_offset") for n, h in hashes.items()},
                    "hash": next(iter({(h or {}).get("image_hash") for h in hashes.values()})),
                    "epoch_after_restart": epoch,
                    "vm_hwm_mib": _peak_rss(cluster),
                    "summary": True})
