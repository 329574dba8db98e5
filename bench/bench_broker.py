"""Produce and fetch throughput of one broker agent over its HTTP data plane (issues 5, 17).

A LocalCluster (3 controller processes, ``--replication-factor`` broker processes, defaults
otherwise: bearer-token authentication on, no forced fsync) on 127.0.0.1; one topic with
``--partitions`` partitions, all led by broker 0 (manual assignment, replicas 0..RF-1). The
load runs in this process: ``--clients`` asyncio tasks, each with its own httpx client
(one keep-alive connection) and its own partition(s), one request in flight each.

- ``produce``: batches of ``--batch`` records of ``--record-bytes`` random bytes each (no key),
  built with ``dataplane.record_batch.build_batch`` before the clock starts, sent with
  ``acks`` = ``--acks`` until ``--records`` records are in; records/s and MB/s of record values
  (1 MB = 10^6 bytes) and the p50 / p99 latency of one produce request.
- ``fetch``: each client reads its partitions from offset 0 to the end (``partition_max_bytes``
  = ``--fetch-bytes``, read_uncommitted), counting records from the batch headers (no record
  decoding: that is the consumer's cost, measured separately as ``decode``).
- ``decode``: ``decode_partition`` of fetched answers in this process (records/s).

``--wire frame`` (the default, what chunkraft's own clients send) carries the batches raw in a
batch frame (``application/vnd.chunkraft.batches``) both ways; ``--wire json`` sends produce
bodies as JSON with base64 records and asks for JSON fetch answers (the form kept for curl),
so both can be compared in one sitting.

Prints one JSON line per measurement, each with the 1-minute load average read at its end
(``load_1m``; the machine is shared); does not touch bench/RESULTS.md. Exits 1 if any produce
or fetch was refused (a run with errors is not a measurement), or if the controllers' leader or
term moved during the produce or the fetch window (``_steady``: each row carries
``leadership``, the quorum sampled at the window's edges; the reason names the counts). The
client shares the machine's cores with the broker, so figures are a floor. Not a test: never
run it in CI. It only signals processes it started, by PID (through LocalCluster).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from _report import emit
from _steady import LeadershipWindow, exit_status, failed_rows
from chunkraft.client.broker_client import (
    AsyncBrokerClient,
    decode_partition,
    fetch_request,
)
from chunkraft.client.controller_rpc import ControllerRpcClient
from chunkraft.dataplane.record_batch import build_batch, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.protocol.batch_frame import ACCEPT_FRAME, MEDIA_TYPE, decode_answer, frame_bytes
from chunkraft.protocol.data_plane import (
    FetchResponse,
    ProducePartitionData,
    ProduceRequest,
    ProduceTopicData,
)

TOPIC = "bench"


def create_topic(cluster: LocalCluster, partitions: int, replication_factor: int) -> None:
    replicas = list(range(replication_factor))
    assignments = [{"partition_index": p, "broker_ids": replicas} for p in range(partitions)]
    with ControllerRpcClient(cluster.urls, token=cluster.admin_token,
                             verify=cluster.verify) as client:
        answer = client.call("/controller/v1/create-topics", {"topics": [
            {"name": TOPIC, "assignments": assignments}]})
    result = answer["topics"][0]
    if result["error_code"] not in (0, Errors.TOPIC_ALREADY_EXISTS.code):
        raise RuntimeError(f"create-topics failed: {result}")


def batches(count: int, batch: int, record_bytes: int) -> list[bytes]:
    """``count`` distinct batches (a few random payloads reused: building is not what is
    measured)."""
    payloads = [os.urandom(record_bytes) for _ in range(64)]
    now = int(time.time() * 1000)
    built = []
    for index in range(min(count, 32)):
        records = [(None, payloads[(index + i) % 64], now) for i in range(batch)]
        built.append(build_batch(records))
    return built


def produce_body(partition: int, partitions: int, records: bytes, acks: int, wire: str
                 ) -> bytes:
    """The body of one produce: a batch frame, or JSON with base64 records (``wire``)."""
    request = ProduceRequest(acks=acks, timeout_ms=30_000, topics=(ProduceTopicData(
        name=TOPIC, partition_count=partitions,
        partitions=(ProducePartitionData(index=partition, records=records),)),))
    if wire == "frame":
        return frame_bytes(request)
    return ProduceRequest.__pydantic_serializer__.to_json(request)


def headers_of(wire: str) -> dict[str, str]:
    if wire == "frame":
        return {"content-type": MEDIA_TYPE, "accept": ACCEPT_FRAME}
    return {"content-type": "application/json", "accept": "application/json"}


def load_1m() -> float:
    return round(os.getloadavg()[0], 2)


async def wait_leader(client: AsyncBrokerClient, partitions: int, timeout: float) -> None:
    """Until broker 0 answers a produce to each partition (metadata reached it)."""
    warm = build_batch([(None, b"warm-up", int(time.time() * 1000))])
    deadline = time.monotonic() + timeout
    for partition in range(partitions):
        while True:
            response = await client.produce(ProduceRequest(acks=1, topics=(ProduceTopicData(
                name=TOPIC, partition_count=partitions,
                partitions=(ProducePartitionData(index=partition, records=warm),)),)))
            outcome = response.topics[0].partitions[0]
            if outcome.error_code == 0:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"partition {partition}: {outcome}")
            await asyncio.sleep(0.2)


async def produce_phase(url: str, token: str, args: argparse.Namespace) -> dict[str, Any]:
    bodies_by_client = []
    encoded = batches(32, args.batch, args.record_bytes)
    for client_index in range(args.clients):
        mine = [p for p in range(args.partitions) if p % args.clients == client_index]
        bodies_by_client.append([produce_body(p, args.partitions, encoded[i % len(encoded)],
                                              args.acks, args.wire)
                                 for i, p in enumerate(mine * len(encoded))])
    total_batches = args.records // args.batch
    next_batch = 0
    latencies: list[float] = []
    errors: dict[str, int] = {}

    async def run(bodies: list[bytes]) -> None:
        nonlocal next_batch
        # The bodies are prebuilt: post them as they are.
        async with httpx.AsyncClient(base_url=url, timeout=60.0,
                                     headers={"authorization": f"Bearer {token}"}) as http:
            turn = 0
            while next_batch < total_batches:
                next_batch += 1
                body = bodies[turn % len(bodies)]
                turn += 1
                started = time.perf_counter()
                answer = await http.post("/broker/v1/produce", content=body,
                                         headers=headers_of(args.wire))
                if answer.status_code != 200:
                    name = f"HTTP {answer.status_code}"
                    errors[name] = errors.get(name, 0) + 1
                    continue
                latencies.append(time.perf_counter() - started)
                for topic in answer.json()["topics"]:
                    for partition in topic["partitions"]:
                        if partition["error_code"]:
                            name = Errors.for_code(partition["error_code"]).name
                            errors[name] = errors.get(name, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(run(bodies) for bodies in bodies_by_client))
    elapsed = time.perf_counter() - started
    records = total_batches * args.batch
    ordered = sorted(latencies)
    return {"item": "produce", "records": records, "seconds": round(elapsed, 3),
            "records_per_s": round(records / elapsed),
            "mb_per_s": round(records * args.record_bytes / elapsed / 1e6, 1),
            "p50_ms": round(1000 * statistics.median(ordered), 2),
            "p99_ms": round(1000 * ordered[int(0.99 * (len(ordered) - 1))], 2),
            "errors": errors, "acks": args.acks, "clients": args.clients,
            "partitions": args.partitions, "replication_factor": args.replication_factor,
            "batch": args.batch, "record_bytes": args.record_bytes, "wire": args.wire,
            "load_1m": load_1m()}


async def fetch_phase(url: str, token: str, args: argparse.Namespace
                      ) -> tuple[dict[str, Any], list[Any]]:
    counted = 0
    wire_bytes = 0
    kept: list[Any] = []

    async def run(partitions: list[int]) -> None:
        nonlocal counted, wire_bytes
        # Raw httpx rather than AsyncBrokerClient, so that --wire json can ask for JSON.
        async with httpx.AsyncClient(base_url=url, timeout=60.0,
                                     headers={"authorization": f"Bearer {token}"}) as http:
            for partition in partitions:
                offset = 0
                while True:
                    request = fetch_request(TOPIC, partition, offset,
                                            max_bytes=args.fetch_bytes, max_wait_ms=0)
                    reply = await http.post(
                        "/broker/v1/fetch", headers=headers_of(args.wire) | {
                            "content-type": "application/json"},
                        content=type(request).__pydantic_serializer__.to_json(request))
                    if reply.status_code != 200:
                        raise RuntimeError(f"fetch {partition}@{offset}: HTTP "
                                           f"{reply.status_code} {reply.text[:200]}")
                    wire_bytes += len(reply.content)
                    answer = decode_answer(reply.content, reply.headers.get("content-type"),
                                           FetchResponse)
                    part = answer.responses[0].partitions[0]
                    if part.error_code:
                        raise RuntimeError(f"fetch {partition}@{offset}: {part}")
                    if not part.records:
                        break
                    for header, _ in iter_batches(part.records):
                        if header.base_offset >= offset:
                            counted += header.record_count
                        offset = header.next_offset
                    if len(kept) < 20:
                        kept.append(part)
                    if offset >= part.high_watermark:
                        break

    mine = [[p for p in range(args.partitions) if p % args.clients == c]
            for c in range(args.clients)]
    started = time.perf_counter()
    await asyncio.gather(*(run(partitions) for partitions in mine))
    elapsed = time.perf_counter() - started
    return ({"item": "fetch", "records": counted, "seconds": round(elapsed, 3),
             "records_per_s": round(counted / elapsed),
             "mb_per_s": round(counted * args.record_bytes / elapsed / 1e6, 1),
             "wire_mb_per_s": round(wire_bytes / elapsed / 1e6, 1),
             "fetch_bytes": args.fetch_bytes, "clients": args.clients, "wire": args.wire,
             "replication_factor": args.replication_factor, "load_1m": load_1m()}, kept)


def decode_item(kept: list[Any]) -> dict[str, Any]:
    started = time.perf_counter()
    records = sum(len(decode_partition(part)) for part in kept)
    elapsed = time.perf_counter() - started
    return {"item": "decode", "records": records, "seconds": round(elapsed, 3),
            "records_per_s": round(records / elapsed) if elapsed else None}


async def measure(cluster: LocalCluster, args: argparse.Namespace) -> list[str]:
    """Produces, fetches and decodes, printing each row; returns why the run fails, if it
    does (produce errors, a window whose controllers' leader moved)."""
    url = cluster.broker_url(0)
    token = cluster.admin_token
    async with AsyncBrokerClient(url, token=token) as client:
        await wait_leader(client, args.partitions, 60.0)
    with LeadershipWindow(cluster.leadership) as window:
        produced = await produce_phase(url, token, args)
    produced.update(window.result().fields())
    emit(produced)
    with LeadershipWindow(cluster.leadership) as window:
        fetched, kept = await fetch_phase(url, token, args)
    fetched.update(window.result().fields())
    emit(fetched)
    emit(decode_item(kept))
    return problems([produced, fetched])


def problems(rows: list[dict[str, Any]]) -> list[str]:
    """Why the produce and fetch rows are not a measurement: produce errors, and each
    window whose controllers' leader moved."""
    errors = [f"produce errors {row['errors']}: not a measurement" for row in rows
              if row["item"] == "produce" and row["errors"]]
    return [*errors, *failed_rows(rows, lambda row: f"the {row['item']} window")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--replication-factor", type=int, default=1)
    parser.add_argument("--acks", type=int, default=1, choices=(-1, 0, 1))
    parser.add_argument("--fetch-bytes", type=int, default=1024 * 1024)
    parser.add_argument("--wire", choices=("frame", "json"), default="frame",
                        help="batch frames (default) or JSON with base64 records")
    parser.add_argument("--base-dir", type=Path, default=None,
                        help="cluster directory (default: a fresh temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_broker_") as temporary:
        base = args.base_dir or Path(temporary)
        cluster = LocalCluster(base, broker_count=max(args.replication_factor, 1))
        with cluster:
            cluster.wait_ready(60.0)
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=60.0)
            create_topic(cluster, args.partitions, args.replication_factor)
            found = asyncio.run(measure(cluster, args))
    return exit_status(found)


if __name__ == "__main__":
    raise SystemExit(main())
