"""The same admin workload through Kafka's protocol (confluent-kafka) and over HTTP, one run.

Workloads, as ``bench_controller.py`` has them: single createTopics (1 partition, RF 3) with 1
and 32 clients, and createPartitions growing a pooled 1-partition topic by 100 partitions with 1
client. Each runs through confluent-kafka's ``AdminClient`` (librdkafka) on a controller's Kafka
port (``_kafka_load``), and through the HTTP load client of ``bench_controller.py`` on the same
controller's HTTP port (``_http_load``), alternated, ``--runs`` times (a fresh quorum per run,
so that no run pays for the topics of the ones before), with the median and the ratio
Kafka/HTTP (ops/s; higher is better for Kafka). A window in which no operation completed fails
the run, as errors do.

Setup, as ``bench_controller.py``'s: 3 controllers on 127.0.0.1 (journal, fsync and password
on), and 3 brokers that are a heartbeat thread of this script, so that the partitions made are
metadata only (no broker process creates 100,000 logs). Those brokers register their Kafka
listener at the Kafka port of the quorum's leader: the node id a Kafka client sends admin
requests to (Metadata's ``controller_id``) is then the leader itself, as the HTTP load's URL is,
so both paths end in the same process and neither pays a forwarding hop.

Then ``--partitions`` (10,000) partitions in topics of 100, assigned to those brokers, and one
real broker process (broker 0, a Kafka listener, no replicas): Metadata of every topic (v12)
from its Kafka port, ``--metadata-requests`` times on one authenticated connection, p50 / p99 of
request written to answer read whole.

The steady-leader rule (``_steady``): each window is sampled at both edges, and a window whose
leader or term moved fails the run, as do errors in any row. One JSON object per row on stdout,
then a summary; ``--results`` appends the tables to ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _controller.cluster import CLUSTER_TIMEOUT, create_pool, post, quorum
from _http_load import LoadResult, Workload, percentile, run_load
from _kafka_load import KafkaWorkload, run_kafka_load
from _steady import LeadershipWindow, exit_status, failed_rows
from chunkraft.kafka.codec.messages import encode
from chunkraft.local.local_cluster import LocalCluster

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
FAKE_BROKERS = (1, 2, 3)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="each measured window")
    parser.add_argument("--runs", type=int, default=3, help="alternated runs per system")
    parser.add_argument("--quick", action="store_true", help="1 run of 3 s windows, 2,000 "
                        "partitions for Metadata")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--metadata-requests", type=int, default=300)
    parser.add_argument("--only", nargs="*", choices=("admin", "metadata"),
                        default=["admin", "metadata"])
    parser.add_argument("--results", action="store_true", help="append to bench/RESULTS.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.runs, args.partitions = 3.0, 1, min(args.partitions, 2_000)
    return args


class KafkaFrontBrokers:
    """Three registered brokers kept unfenced by a thread, whose Kafka listener is the
    leader's Kafka port (see the module docstring)."""

    def __init__(self, cluster: LocalCluster, leader: int) -> None:
        import threading

        self.cluster = cluster
        self.headers = dict(cluster.headers)
        self.url = cluster.nodes[leader].url
        self.epochs: dict[int, int] = {}
        self._stop = threading.Event()
        cluster_id = quorum(self.url, self.headers)["cluster_id"]
        port = cluster.nodes[leader].kafka_port
        for broker in FAKE_BROKERS:
            answer = post(self.url, self.headers, "broker-registration", {
                "broker_id": broker, "cluster_id": cluster_id,
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [{"name": "SASL_PLAINTEXT", "host": "127.0.0.1", "port": port,
                               "security_protocol": 2}]})
            if answer["error_code"] != 0:
                raise RuntimeError(f"broker registration: {answer}")
            self.epochs[broker] = answer["broker_epoch"]
        self.heartbeat()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def heartbeat(self) -> None:
        for broker, epoch in self.epochs.items():
            with contextlib.suppress(RuntimeError):
                post(self.url, self.headers, "broker-heartbeat", {
                    "broker_id": broker, "broker_epoch": epoch,
                    "current_metadata_offset": 2**62}, timeout=2.0, attempts=1)

    def _loop(self) -> None:
        for _ in range(100_000):
            if self._stop.wait(1.0):
                return
            self.heartbeat()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def row(system: str, load: str, clients: int, result: LoadResult, seconds: float,
        leadership: dict[str, Any]) -> dict[str, Any]:
    latencies = result.latencies_ms
    return {"bench": "kafka_admin", "system": system, "load": load, "clients": clients,
            "ops": result.ops, "errors": result.errors, "first_error": result.first_error,
            "ops_per_s": round(result.ops / seconds, 1),
            "p50_ms": round(percentile(latencies, 0.5), 2),
            "p99_ms": round(percentile(latencies, 0.99), 2),
            "client_cpu_s": round(result.client_cpu_s, 2),
            "pool_exhausted": result.pool_exhausted, "leadership": leadership}


def admin_rows(base: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every admin window, a fresh quorum per run: each run starts from an empty image, so
    the runs compare (and no window pays for the topics of the ones before)."""
    rows: list[dict[str, Any]] = []
    for run in range(args.runs):
        with contextlib.ExitStack() as stack:
            cluster, leader = _cluster(stack, base / f"admin-{run}")
            rows += run_rows(cluster, leader, args, run)
    return rows


def run_rows(cluster: LocalCluster, leader: int, args: argparse.Namespace, run: int
             ) -> list[dict[str, Any]]:
    node = cluster.nodes[leader]
    settings = {"bootstrap.servers": f"127.0.0.1:{node.kafka_port}",
                **cluster.kafka_client_settings()}
    kafka_settings = tuple(settings.items())
    headers = tuple(cluster.headers.items())
    rows: list[dict[str, Any]] = []
    loads = (("createTopics 1 partition RF 3", "create-topic", 1, 0),
             ("createTopics 1 partition RF 3", "create-topic", 32, 0),
             ("createPartitions +100", "create-partitions", 1, 100))
    pool_size = int(400 * args.seconds) + 200
    for load, kind, clients, batch in loads:
        # Alternate which system goes first, run by run (BENCH.md: no order bias).
        systems = ("kafka", "http") if run % 2 == 0 else ("http", "kafka")
        for system in systems:
            prefix = f"{system}-{kind}-{clients}-{run}"
            pool: tuple[str, ...] = ()
            if kind == "create-partitions":
                pool = tuple(create_pool(node.url, cluster.headers, prefix, pool_size))
            processes = 2 if clients > 1 else 1
            with LeadershipWindow(cluster.leadership) as window:
                if system == "kafka":
                    result = run_kafka_load(KafkaWorkload(
                        kind, kafka_settings, prefix, batch=batch, pool=pool),
                        clients=clients, duration=args.seconds, processes=processes)
                else:
                    result = run_load(Workload(
                        kind, (node.url,), prefix, batch=batch, pool=pool,
                        headers=headers), clients=clients, duration=args.seconds,
                        processes=processes)
            entry = row(system, load, clients, result, args.seconds,
                        window.result().as_json())
            entry["run"] = run
            print(json.dumps(entry), flush=True)
            rows.append(entry)
    return rows


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = sock.recv(min(count - len(data), 1 << 20))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return bytes(data)

    return exactly(struct.unpack(">i", exactly(4))[0])


def _request(api_key: int, version: int, correlation: int, name: str, body: dict[str, Any]
             ) -> bytes:
    header = encode("RequestHeader", 2 if (api_key, version) != (17, 1) else 1, {
        "request_api_key": api_key, "request_api_version": version,
        "correlation_id": correlation, "client_id": "bench"})
    payload = header + encode(name, version, body)
    return struct.pack(">i", len(payload)) + payload


def metadata_row(cluster: LocalCluster, leader: int, args: argparse.Namespace
                 ) -> dict[str, Any]:
    url = cluster.nodes[leader].url
    per_topic = 100
    topics = max(1, args.partitions // per_topic)
    for start in range(0, topics, 10):
        answer = post(url, cluster.headers, "create-topics", {"topics": [{
            "name": f"meta-{i}", "num_partitions": -1, "replication_factor": -1,
            "assignments": [{"partition_index": p, "broker_ids": [FAKE_BROKERS[p % 3]]}
                            for p in range(per_topic)]} for i in range(start, min(
                                start + 10, topics))]}, timeout=120)
        bad = [t for t in answer["topics"] if t["error_code"] != 0]
        if bad:
            raise RuntimeError(f"metadata topics: {bad[0]}")
    cluster.grant_broker_acls()
    cluster.start_broker(0)
    cluster.wait_brokers_ready([0], timeout=120)
    broker = cluster.broker_nodes[0]
    latencies: list[float] = []
    size = 0
    with LeadershipWindow(cluster.leadership) as window:
        sock = socket.create_connection(("127.0.0.1", broker.kafka_port), timeout=30)
        with sock:
            sock.sendall(_request(18, 3, 1, "ApiVersionsRequest", {
                "client_software_name": "bench", "client_software_version": "1"}))
            _read_frame(sock)
            sock.sendall(_request(17, 1, 2, "SaslHandshakeRequest", {"mechanism": "PLAIN"}))
            _read_frame(sock)
            sock.sendall(_request(36, 2, 3, "SaslAuthenticateRequest", {
                "auth_bytes": f"\0admin\0{cluster.admin_token}".encode()}))
            _read_frame(sock)
            request = _request(3, 12, 4, "MetadataRequest", {"topics": None})
            for _ in range(args.metadata_requests + 5):
                began = time.perf_counter()
                sock.sendall(request)
                size = len(_read_frame(sock))
                latencies.append((time.perf_counter() - began) * 1000)
    latencies = latencies[5:]  # the first answers build the broker's caches
    entry = {"bench": "kafka_admin", "system": "kafka", "load": "Metadata v12, all topics",
             "partitions": topics * per_topic, "requests": len(latencies),
             "answer_bytes": size, "errors": 0,
             "p50_ms": round(percentile(latencies, 0.5), 2),
             "p99_ms": round(percentile(latencies, 0.99), 2),
             "max_ms": round(max(latencies), 2), "leadership": window.result().as_json()}
    print(json.dumps(entry), flush=True)
    return entry


def medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    grouped: dict[tuple[str, int], dict[str, list[dict[str, Any]]]] = {}
    for entry in rows:
        if "clients" in entry:
            grouped.setdefault((entry["load"], entry["clients"]), {}).setdefault(
                entry["system"], []).append(entry)
    out = []
    for (load, clients), systems in grouped.items():
        kafka = statistics.median(r["ops_per_s"] for r in systems.get("kafka", []))
        http = statistics.median(r["ops_per_s"] for r in systems.get("http", []))
        out.append({"load": load, "clients": clients, "kafka_ops_per_s": kafka,
                    "http_ops_per_s": http,
                    "kafka_p50_ms": statistics.median(r["p50_ms"] for r in systems["kafka"]),
                    "http_p50_ms": statistics.median(r["p50_ms"] for r in systems["http"]),
                    "ratio": round(kafka / http, 2) if http else None})
    return out


def write_results(rows: list[dict[str, Any]], summary: list[dict[str, Any]],
                  args: argparse.Namespace) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    lines = [f"\n## Admin over Kafka's protocol vs HTTP ({datetime.date.today()})\n",
             f"Command: `python bench/bench_kafka_admin.py{' --quick' if args.quick else ''}`"
             f", commit {commit}, {args.runs} alternated run(s) of {args.seconds:g} s "
             "windows; confluent-kafka AdminClient on the leader's Kafka port vs the HTTP load "
             "client on the leader's HTTP port.\n",
             "| load | clients | Kafka ops/s | HTTP ops/s | Kafka/HTTP | Kafka p50 ms | "
             "HTTP p50 ms |", "|---|---|---|---|---|---|---|"]
    for item in summary:
        lines.append(f"| {item['load']} | {item['clients']} | {item['kafka_ops_per_s']:,} | "
                     f"{item['http_ops_per_s']:,} | {item['ratio']} | {item['kafka_p50_ms']} | "
                     f"{item['http_p50_ms']} |")
    for entry in rows:
        if entry.get("load", "").startswith("Metadata"):
            lines.append(f"\nMetadata v12 of every topic ({entry['partitions']:,} partitions, "
                         f"{entry['answer_bytes']:,} bytes) from a broker's Kafka port, "
                         f"{entry['requests']} requests on one connection: p50 "
                         f"{entry['p50_ms']} ms, p99 {entry['p99_ms']} ms, max "
                         f"{entry['max_ms']} ms.")
    with RESULTS.open("a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")


def _cluster(stack: contextlib.ExitStack, base: Path) -> tuple[LocalCluster, int]:
    """A started quorum with :class:`KafkaFrontBrokers`; stopped when ``stack`` closes."""
    cluster = LocalCluster(base, broker_count=1)
    cluster.prepare()
    stack.callback(cluster.stop)
    stack.callback(cluster.stop_brokers)
    cluster.start()
    leader = cluster.wait_ready(CLUSTER_TIMEOUT)
    stack.callback(KafkaFrontBrokers(cluster, leader).close)
    return cluster, leader


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-kafka-admin-") as base:
        # A quorum per phase: the Metadata answer must hold the partitions it names, not
        # every topic the admin windows made.
        if "admin" in args.only:
            rows += admin_rows(Path(base), args)
        if "metadata" in args.only:
            with contextlib.ExitStack() as stack:
                rows.append(metadata_row(*_cluster(stack, Path(base) / "metadata"), args))
    summary = medians(rows)
    for item in summary:
        print(json.dumps({"bench": "kafka_admin", "summary": item}), flush=True)
    problems = [f"{r['system']} {r['load']} x{r.get('clients', 1)}: {r['errors']} errors "
                f"({r.get('first_error', '')})" for r in rows if r.get("errors")]
    problems += [f"{r['system']} {r['load']} x{r['clients']} run {r['run']}: no operation "
                 "completed in the window" for r in rows if "clients" in r and not r["ops"]]
    if args.results and not problems:
        write_results(rows, summary, args)
    return exit_status(problems + failed_rows(rows, lambda r: f"{r['system']} {r['load']}"))


if __name__ == "__main__":
    raise SystemExit(main())
