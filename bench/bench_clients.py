"""The clients end to end: produce -> consume latency through a chunk roll, and
consumer throughput across chunks spread over brokers.

A LocalCluster (3 controller processes, 3 broker agents, defaults otherwise: bearer tokens on,
no forced fsync) on 127.0.0.1; the real :class:`Producer` and :class:`Consumer` in this process.

- ``latency``: a topic with one partition on broker 0. A consumer thread polls it while the
  producer sends ``--latency-records`` records at ``--rate`` per second (acks=all,
  idempotent, ``linger_ms`` = ``--linger-ms``; one warm-up record first, not measured, gets
  the producer id and metadata), each carrying its send time
  (``time.perf_counter_ns``: one clock, one process). Halfway through, the active chunk is cut
  onto broker 1 (CreateChunks through the admin REST API) while the load runs: the producer
  must find the new leader, the consumer must move on at the old chunk's stop offset. Prints
  p50 / p99 / max of send -> poll-returned latency over all records, the same for the
  records sent within one second after the cut, and the worst latency of each second. The
  default rate (20/s) stays below what the machine sustains; at 100/s on a loaded 2-core
  machine the latency grew without bound (the producer, one record per batch, fell behind).
- ``throughput``: ``--records`` records of ``--record-bytes`` bytes, produced in 10 slices to
  a topic whose active chunk is cut after each slice onto the next broker (0, 1, 2, 0, ...):
  10 chunks spread over the 3 brokers; and the same records to a topic with one chunk on broker
  0. A fresh consumer reads each topic from offset 0 to the end, ``--reads`` times; prints
  records/s and MB/s (10^6 bytes of values) of each read and their median.

The controller quorum must keep its leader through every measured window (the chunk cuts move a
partition's leader among the brokers, not the controllers'): the latency window (from the first
measured send until the consumer is done) and each read follow the steady-leader rule of
``_steady``. Each row carries ``leadership`` (the quorum at the window's edges, and what moved;
a median, ``leadership_moved_runs``), and a window whose leader or term moved fails the run:
the reason, naming the counts, is printed, and the exit status is 1.

Prints one JSON line per measurement; does not touch bench/RESULTS.md. The clients share the
machine's cores with 6 server processes, so figures are a floor. Not a test: never run it in
CI. It only signals processes it started, by PID (through LocalCluster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _report import emit
from _steady import LeadershipWindow, exit_status, failed_rows, summary_fields
from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.client.consumer import Consumer
from chunkraft.client.producer import Producer
from chunkraft.local.local_cluster import LocalCluster

WAIT_S = 60.0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(latencies_ms: list[float]) -> dict[str, Any]:
    return {"records": len(latencies_ms),
            "p50_ms": round(percentile(latencies_ms, 0.50), 2),
            "p99_ms": round(percentile(latencies_ms, 0.99), 2),
            "max_ms": round(max(latencies_ms, default=float("nan")), 2)}


class Bench:
    """The cluster, its admin client, and clients built on the brokers' URLs."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
        self.admin = AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token))

    def producer(self, **options: Any) -> Producer:
        return Producer(self.urls, token=self.cluster.admin_token, verify=self.cluster.verify,
                        **options)

    def consumer(self, client_id: str) -> Consumer:
        return Consumer(self.urls, client_id=client_id, token=self.cluster.admin_token,
                        verify=self.cluster.verify, auto_offset_reset="earliest",
                        max_poll_records=2000)

    def cut(self, topic: str, broker_id: int) -> None:
        (result,) = self.admin.create_chunks(
            [{"topic": topic, "partition": 0, "replicas": [broker_id]}])
        if result["error_code"] != 0:
            raise RuntimeError(f"the cut of {topic}-0 failed: {result}")


def latency_phase(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    """Prints and returns the latency row."""
    with LeadershipWindow(bench.cluster.leadership) as window:
        row = _latency_window(bench, args)
    row.update(window.result().fields())
    emit(row)
    return row


def _latency_window(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    """The latency measure itself (see the module doc), as a row."""
    topic = "latency"
    bench.admin.create_topic(topic, None, None, [[0]])
    received: dict[int, float] = {}  # sequence -> ms from send to poll
    sent_at: dict[int, int] = {}
    done = threading.Event()
    failures: list[BaseException] = []

    def consume() -> None:
        consumer = bench.consumer("bench-latency")
        try:
            consumer.assign([(topic, 0)])
            ends = time.monotonic() + WAIT_S + args.latency_records / args.rate
            while len(received) < args.latency_records and time.monotonic() < ends:
                for record in consumer.poll(200):
                    now = time.perf_counter_ns()
                    sequence, stamp = (int(x) for x in (record.value or b"").split(b":")[:2])
                    if sequence >= 0:  # not the warm-up record
                        received.setdefault(sequence, (now - stamp) / 1e6)
        except BaseException as error:
            failures.append(error)
        finally:
            consumer.close()
            done.set()

    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(1.0)  # the consumer's first polls find the partition
    producer = bench.producer(linger_ms=args.linger_ms)
    # One record first, outside the measure: the producer id and the metadata are fetched once.
    producer.send(topic, b"-1:0:", partition=0).result(timeout=WAIT_S)
    interval = 1.0 / args.rate
    cut_at_ns = 0
    try:
        started = time.perf_counter()
        for sequence in range(args.latency_records):
            target = started + sequence * interval
            pause = target - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            if sequence == args.latency_records // 2:
                cut_at_ns = time.perf_counter_ns()
                threading.Thread(target=bench.cut, args=(topic, 1)).start()
            stamp = time.perf_counter_ns()
            sent_at[sequence] = stamp
            producer.send(topic, f"{sequence}:{stamp}:".encode() + b"x" * 100, partition=0)
        producer.flush()
    finally:
        producer.close()
    done.wait(WAIT_S)
    reader.join(WAIT_S)
    if failures:
        raise failures[0]
    by_second: dict[int, list[float]] = {}
    for seq, ms in received.items():
        by_second.setdefault(int(seq / args.rate), []).append(ms)
    timeline = {second: round(max(values)) for second, values in sorted(by_second.items())}
    after_cut = [ms for seq, ms in received.items()
                 if 0 <= sent_at[seq] - cut_at_ns <= 1_000_000_000]
    return {"bench": "clients", "measure": "produce_consume_latency", "rate": args.rate,
            "linger_ms": args.linger_ms, "sent": args.latency_records,
            **summary(list(received.values())),
            "after_cut": summary(after_cut), "cut_at_s": args.latency_records // 2 / args.rate,
            "max_ms_by_second": timeline}


def fill(bench: Bench, topic: str, args: argparse.Namespace, spread: bool) -> None:
    """``args.records`` records in 10 slices, every record's acknowledgement checked; with
    ``spread``, the active chunk cut after each slice onto the next broker (0, 1, 2, 0, ...).

    The fill's speed is not what is measured."""
    bench.admin.create_topic(topic, None, None, [[0]])
    payload = os.urandom(args.record_bytes)
    per_slice = args.records // 10
    producer = bench.producer(linger_ms=20, batch_size=500)
    try:
        for index in range(10):
            futures = [producer.send(topic, payload, partition=0) for _ in range(per_slice)]
            producer.flush()
            for future in futures:
                future.result(timeout=WAIT_S)  # raises a record's failure, if any
            if spread and index < 9:
                bench.cut(topic, (index + 1) % 3)
    finally:
        producer.close()


def read_all(bench: Bench, topic: str, want: int, client_id: str) -> tuple[float, int, set[int]]:
    consumer = bench.consumer(client_id)
    got, value_bytes, brokers, last_offset = 0, 0, set(), -1
    try:
        consumer.assign([(topic, 0)])
        started = time.perf_counter()
        ends = time.monotonic() + WAIT_S
        while got < want and time.monotonic() < ends:
            for record in consumer.poll(500):
                got += 1
                value_bytes += len(record.value or b"")
                brokers.add(record.broker_id)
                last_offset = record.offset
        elapsed = time.perf_counter() - started
    finally:
        consumer.close()
    if got < want:
        chunks = [(c["start_offset"], c.get("stop_offset"), c["replica_ids"])
                  for c in bench.admin.list_chunks(topic, 0)]
        raise RuntimeError(f"read {got} of {want} records of {topic} in {WAIT_S} s, last "
                           f"offset {last_offset}; chunks {chunks}")
    return elapsed, value_bytes, brokers


def throughput_phase(bench: Bench, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Prints and returns every read's row and each layout's median."""
    want = args.records // 10 * 10
    out: list[dict[str, Any]] = []
    for topic, spread in (("spread", True), ("single", False)):
        fill(bench, topic, args, spread)
        chunks = len(bench.admin.list_chunks(topic, 0))
        reads: list[dict[str, Any]] = []
        rates: list[float] = []
        for attempt in range(args.reads):
            with LeadershipWindow(bench.cluster.leadership) as window:
                elapsed, value_bytes, brokers = read_all(bench, topic, want,
                                                         f"{topic}-{attempt}")
            rates.append(want / elapsed)
            reads.append({"bench": "clients", "measure": "consumer_throughput",
                          "layout": topic, "read": attempt, "chunks": chunks,
                          "served_by": sorted(brokers), "records": want,
                          "record_bytes": args.record_bytes, "seconds": round(elapsed, 3),
                          "records_per_s": round(want / elapsed),
                          "mb_per_s": round(value_bytes / elapsed / 1e6, 2),
                          **window.result().fields()})
            emit(reads[-1])
        median = {"bench": "clients", "measure": "consumer_throughput_median", "layout": topic,
                  "chunks": chunks, "runs": len(reads),
                  "records_per_s": round(statistics.median(rates)),
                  "mb_per_s": round(statistics.median(rates) * args.record_bytes / 1e6, 2),
                  **summary_fields(reads)}
        emit(median)
        out += [*reads, median]
    return out


def describe(row: dict[str, Any]) -> str:
    """A row's place in the run, in words."""
    if row["measure"] == "consumer_throughput":
        return f"consumer throughput, {row['layout']} layout, read {row['read']}"
    return str(row["measure"]).replace("_", " ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phase", choices=("latency", "throughput", "all"), default="all")
    parser.add_argument("--latency-records", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20.0, help="records/s of the latency "
                        "phase")
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--record-bytes", type=int, default=512)
    parser.add_argument("--reads", type=int, default=3)
    parser.add_argument("--base-dir", type=Path, default=None,
                        help="cluster directory (default: a fresh temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_clients_") as temporary:
        base = args.base_dir or Path(temporary)
        cluster = LocalCluster(base, broker_count=3)
        with cluster:
            cluster.wait_ready(60.0)
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=60.0)
            bench = Bench(cluster)
            rows: list[dict[str, Any]] = []
            try:
                if args.phase in ("latency", "all"):
                    rows.append(latency_phase(bench, args))
                if args.phase in ("throughput", "all"):
                    rows += throughput_phase(bench, args)
            finally:
                bench.admin.close()
    return exit_status(failed_rows(rows, describe))


if __name__ == "__main__":
    raise SystemExit(main())
