"""Item 1: createPartitions adding 1,000 partitions to a fresh 1-partition topic (RF 3).

One client, to the current leader; a 421/503 answer (leader change) is retried with the same
idempotency key and counted in the latency, as a client would see it. Target: p50 <= 150 ms.
The row is one window over all the operations: it carries the quorum's leadership at the first
operation and after the last, and fails the run if the leader moved (``_steady``).
"""

from __future__ import annotations

import statistics
import time

from _controller.cluster import CLUSTER_TIMEOUT, post, quorum
from _controller.results import Results
from _http_load import percentile
from _steady import LeadershipWindow
from chunkraft.local.local_cluster import LocalCluster


def bench_partitions(results: Results, cluster: LocalCluster, ops: int) -> None:
    """Records the item's summary row, its window's leadership included."""
    latencies: list[float] = []
    epochs = []
    with LeadershipWindow(cluster.leadership) as window:
        _create_and_expand(results, cluster, ops, latencies, epochs)
    results.record({
        "item": "partitions", "system": "chunkraft", "ops": ops,
        "added_partitions": 1000, "p50_ms": round(percentile(latencies, 0.5), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "min_ms": round(min(latencies), 1), "max_ms": round(max(latencies), 1),
        "mean_ms": round(statistics.fmean(latencies), 1),
        "leader_changes": sum(epochs), "latencies_ms": [round(x) for x in latencies],
        **window.result().fields(), "summary": True})


def _create_and_expand(results: Results, cluster: LocalCluster, ops: int,
                       latencies: list[float], epochs: list[int]) -> None:
    """``ops`` times: a fresh 1-partition topic (not timed), then createPartitions to 1,001
    (timed, appended to ``latencies``; the epochs it spanned to ``epochs``)."""
    headers = cluster.headers
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
            results.record({"item": "partitions",
                            "first_op_records": status["metadata_offset"] - before})
