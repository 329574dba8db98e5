"""Chunk copy throughput: how fast a broker copies an inactive chunk it is assigned.

A LocalCluster (3 controller processes, 3 broker processes, defaults otherwise: bearer-token
authentication on) on 127.0.0.1. One topic with one partition on broker 0 only; ``--mb`` MB of
1 KiB records produced in batches of 100 (acks=1); the active chunk is cut to broker 1, so the
data becomes an inactive chunk on broker 0; then AlterChunkAssignments moves that chunk to
broker 2. Broker 2 copies it from broker 0 (replica fetches of ``replica.fetch.max.bytes``,
throttled by ``chunk.copy.throttle.bytes.per.second`` = ``--throttle``, -1 unlimited), reports
IN_SYNC, and the controller completes the move.

Measured: from the AlterChunkAssignments answer until the chunk's replicas are [2] in the
controller's image (the whole move: copy, report, commit), in MB/s of log bytes (the chunk's
size on broker 0's disk, 1 MB = 10^6 bytes). Prints one JSON line; does not touch
bench/RESULTS.md. Not a test: never run it in CI. It only signals processes it started.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from _report import emit
from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.local.local_cluster import LocalCluster

BATCH = 100
RECORD_BYTES = 1024
POLL_S = 0.02


def _local(cluster: LocalCluster, broker_id: int, topic: str) -> dict[str, Any] | None:
    answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/local-replicas",
                       headers=cluster.headers, timeout=30)
    answer.raise_for_status()
    for row in answer.json()["partitions"]:
        if row["topic"] == topic:
            return dict(row)
    return None


def _wait(condition: Any, what: str, timeout: float) -> None:
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        if condition():
            return
        time.sleep(POLL_S)
    raise TimeoutError(what)


def measure(cluster: LocalCluster, args: argparse.Namespace) -> dict[str, Any]:
    topic = "copy"
    with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as admin, \
            BrokerClient(cluster.broker_url(0), token=cluster.admin_token) as b0:
        admin.create_topic(topic, None, None, [[0]])
        payload = os.urandom(RECORD_BYTES)
        batches = max(1, int(args.mb * 1e6) // (BATCH * RECORD_BYTES))
        for _batch in range(batches):
            now = int(time.time() * 1000)
            for _ in range(100):
                answer = b0.produce_records(topic, 0, 1, [(None, payload, now)] * BATCH, acks=1)
                if answer.error_code == 0:
                    break
                time.sleep(0.1)  # the leader is not elected yet
            else:
                raise RuntimeError(f"produce failed: {answer}")
        (cut,) = admin.create_chunks([{"topic": topic, "partition": 0, "replicas": [1]}])
        assert cut["error_code"] == 0, cut
        held = _local(cluster, 0, topic)
        assert held is not None
        chunk_bytes = held["chunks"][0]["bytes_held"]
        started = time.perf_counter()
        (moved,) = admin.alter_chunk_assignments(
            [{"topic": topic, "partition": 0, "start_offset": 0, "replicas": [2]}])
        assert moved["error_code"] == 0, moved

        def done() -> bool:
            chunk = admin.get_chunk(topic, 0, 0)
            return bool(chunk["replica_ids"] == [2] and not chunk["adding_replica_ids"])

        _wait(done, "the move did not complete", args.timeout)
        seconds = time.perf_counter() - started
    return {"bench": "chunk_copy", "records": batches * BATCH, "chunk_bytes": chunk_bytes,
            "throttle_bytes_per_s": args.throttle, "seconds": round(seconds, 3),
            "mb_per_s": round(chunk_bytes / 1e6 / seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="MB of records to copy")
    parser.add_argument("--throttle", type=int, default=-1,
                        help="chunk.copy.throttle.bytes.per.second of the brokers")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--base-dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_chunk_copy_") as scratch:
        base = args.base_dir or Path(scratch)
        cluster = LocalCluster(base, broker_properties={
            "chunk.copy.throttle.bytes.per.second": str(args.throttle)})
        cluster.prepare()
        try:
            cluster.start()
            cluster.wait_ready(timeout=60)
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=60)
            emit(measure(cluster, args))
        finally:
            cluster.stop_brokers(timeout=20)
            cluster.stop(timeout=15)


if __name__ == "__main__":
    main()
