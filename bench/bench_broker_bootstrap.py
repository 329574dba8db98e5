"""Bootstrap of a new broker agent from a snapshot of 1,000,000 partitions.

A LocalCluster of 3 controller processes is filled through the RPC surface, as
``bench_controller.py --only restart`` does: 1,000 createTopics of 1,000 partitions each (RF 3,
on three brokers registered by the script and kept unfenced by a heartbeat thread). The
controllers keep a 16 MiB tail (``metadata.max.retained.bytes``; 64 MiB by default could still
hold the whole log of 1M partition records), so a new broker is told ``snapshot_needed`` at
once.

Then one real broker agent (``chunkraft broker``, id 0, hosting none of those partitions) starts,
and the script polls its ``/broker/v1/status`` and ``/broker/v1/metadata-stats``: the seconds
from the process start to the image loaded (the snapshot's offset reached: download, decode,
replay, and the ReplicaManager's first delta), to registered and unfenced, the broker's peak
RSS, and whether its image hash equals the controllers' at the same offset. Target: <= 60 s.

Prints JSON lines; does not write bench/RESULTS.md. Only signals processes it started (by PID,
through LocalCluster).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from _controller.cluster import CLUSTER_TIMEOUT, Brokers, build_topics, quorum
from _report import emit
from chunkraft.local.local_cluster import LocalCluster


def vm_hwm_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def stats(cluster: LocalCluster, broker_id: int) -> dict[str, Any] | None:
    try:
        answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/metadata-stats",
                           headers=cluster.headers, timeout=30)
        return dict(answer.json()) if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def bootstrap(cluster: LocalCluster, offset: int, timeout: float) -> dict[str, Any]:
    """Starts broker 0 and times it to the image loaded and to unfenced."""
    cluster.grant_broker_acls()
    started = time.monotonic()
    cluster.start_broker(0)
    process = cluster.broker_nodes[0].process
    assert process is not None
    loaded_s = ready_s = None
    last: dict[str, Any] | None = None
    peak = 0.0
    while time.monotonic() - started < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"broker 0 exited with {process.returncode}")
        peak = max(peak, vm_hwm_mib(process.pid) or 0.0)
        last = stats(cluster, 0)
        if last is not None:
            if loaded_s is None and last["applied_offset"] >= offset:
                loaded_s = time.monotonic() - started
            if loaded_s is not None and last["broker_epoch"] >= 0 and not last["fenced"]:
                ready_s = time.monotonic() - started
                break
        time.sleep(0.2)
    return {"image_loaded_s": round(loaded_s, 1) if loaded_s is not None else None,
            "registered_and_unfenced_s": round(ready_s, 1) if ready_s is not None else None,
            "snapshots_loaded": last["snapshots_loaded"] if last else None,
            "broker_peak_rss_mib": round(peak)}


def same_hash(cluster: LocalCluster, timeout: float = 120.0) -> dict[str, Any]:
    """Samples the broker's and a controller's (offset, hash) until one offset matches."""
    deadline = time.monotonic() + timeout
    seen_controller: dict[int, str] = {}
    seen_broker: dict[int, str] = {}
    while time.monotonic() < deadline:
        status = cluster.status(1, timeout=60)
        if status is not None:
            seen_controller[int(status["metadata_offset"])] = str(status["image_hash"])
        broker = cluster.broker_status(0, with_hash=True, timeout=60)
        if broker is not None:
            seen_broker[int(broker["metadata_offset"])] = str(broker["image_hash"])
        common = set(seen_controller) & set(seen_broker)
        if common:
            at = max(common)
            return {"hash_offset": at, "hash_equal": seen_controller[at] == seen_broker[at]}
        time.sleep(0.5)
    return {"hash_offset": None, "hash_equal": None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--per-topic", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--retained-bytes", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    base = args.dir or Path(tempfile.mkdtemp(prefix="bench-bootstrap-"))
    cluster = LocalCluster(
        base, broker_count=1,
        extra_properties={"metadata.max.retained.bytes": str(args.retained_bytes)})
    brokers: Brokers | None = None
    try:
        cluster.prepare()
        cluster.start()
        leader = cluster.wait_ready(CLUSTER_TIMEOUT)
        brokers = Brokers(cluster)  # ids 1..3, RPC only: they hold the partitions
        topics = max(args.partitions // args.per_topic, 1)
        began = time.monotonic()
        retries: list[str] = []
        created = asyncio.run(build_topics(cluster.nodes[leader].url, cluster.headers, topics,
                                           args.per_topic, 9, 4, began + 900, retries))
        build_s = time.monotonic() - began
        status = quorum(cluster.nodes[cluster.wait_ready(CLUSTER_TIMEOUT)].url,
                        cluster.headers)
        offset, partitions = int(status["metadata_offset"]), int(status["partitions"])
        emit({"bench": "broker_bootstrap", "phase": "build", "topics": created,
              "partitions": partitions, "offset": offset, "seconds": round(build_s, 1)})
        row = {"bench": "broker_bootstrap", "phase": "bootstrap", "partitions": partitions,
               "offset": offset, **bootstrap(cluster, offset, args.timeout)}
        row.update(same_hash(cluster))
        emit(row)
    finally:
        if brokers is not None:
            brokers.close()
        cluster.stop_brokers(timeout=60)
        cluster.stop(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
