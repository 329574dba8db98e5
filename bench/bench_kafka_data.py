"""Data-plane throughput through Kafka's protocol (confluent-kafka) against chunkraft's own HTTP
clients, and stock reads across chunks, in one run on one cluster.

A LocalCluster (3 controller processes, 3 broker processes, defaults otherwise: SASL/PLAIN on
the Kafka listeners, bearer tokens on HTTP, no forced fsync) on 127.0.0.1. Every value is
``--record-bytes`` (1 KiB) of random bytes (a pool of 256, reused), no key; MB = 10^6 bytes of
record values. The clients run in this process and share the machine's 2 cores with the
servers: figures are a floor, and each row gives the client's CPU seconds (``client_cpu_s``,
every thread of this process, librdkafka's included) and the 1-minute load average read at its
end (``load_1m``).

- ``produce``: ``--records`` records (200,000; ``--quick`` 20,000) into a fresh topic of
  ``--partitions`` (4) partitions, replicas [0, 1, 2] on every one (RF 3, every partition led
  by broker 0), record i to partition i mod P. ``kafka``: a confluent-kafka ``Producer`` whose
  bootstrap is broker 0's Kafka port alone, ``acks=all``, ``enable.idempotence=true``,
  ``linger.ms`` = ``--linger-ms``, librdkafka's batching otherwise. ``http``: chunkraft's
  ``Producer`` with broker 0's HTTP URL alone, ``acks=-1``, idempotent, the same linger,
  ``batch_size`` = ``--http-batch`` records (its default, 100). Both keep at most ``--window``
  (100,000, librdkafka's own ``queue.buffering.max.messages``) records unacknowledged. Each
  producer first writes one record per partition and flushes (connections, metadata,
  producer id), then the clock starts at the first measured send and stops when ``flush``
  returns. Ack latency: the time a record's completion callback ran minus the time just
  before its ``produce()`` / ``send()`` call (confluent's ``on_delivery``, served by
  ``poll(0)`` after every produce; chunkraft's future's ``add_done_callback``, run on its
  sender thread). records/s, MB/s, p50 / p99 ms. Alternated kafka, http, kafka, http
  (``--repeats``, 2; quick 1), a fresh topic each run; then the median of each system and the
  ratio kafka / http. Targets (printed, not asserted): kafka >= 40,000 records/s and >= 1.3x
  http.
- ``fetch``: one topic like produce's, filled with ``--fetch-mb`` (1,000; quick 100) MB of
  records by confluent-kafka before any window, then read from offset 0 to its end offsets
  (each partition's high watermark, asked before the window). ``kafka``: a confluent-kafka
  ``Consumer`` (bootstrap: every broker), partitions assigned (no group: a throwaway
  ``group.id``, ``enable.auto.commit`` false), ``consume(--poll-records, 10 ms)`` (it waits
  for a full batch until its timeout: the last batch costs up to 10 ms); ``http``:
  chunkraft's ``Consumer`` (every broker's URL), ``assign`` then ``poll`` with
  ``max_poll_records`` = ``--poll-records``. Both clocks start before ``assign``; both count
  every value's bytes and check every offset (a gap or a duplicate is an error). MB/s and
  records/s from ``assign`` to the last record; also ``first_record_s`` (``assign`` to the
  first record: the client's start-up, about 0.5 s for librdkafka here) and
  ``mb_per_s_from_first`` (first record to last). Alternated per ``--repeats``; median and
  ratio kafka / http of both. Target: kafka >= 200 MB/s (``meets_target``, and
  ``meets_target_from_first`` for the rate after the start-up).
- ``chunks``: confluent-kafka's ``Consumer`` reading one partition of ``--chunks`` (10) chunks
  spread over the 3 brokers against one partition of one chunk holding the same records
  (``--chunk-mb``, 500; quick 50). The spread topic is created on broker 0 alone; a slice of
  the records is produced, then the active chunk is cut (chunkraft's AdminClient,
  ``chunks:create`` without offsets: the leader reads them) with the new active chunk on the
  next broker alone, and so on: chunk i lives on broker i mod 3 (RF 1, as the one-chunk topic
  on broker 0). Read from offset 0 (``OFFSET_BEGINNING``: ListOffsets earliest, the first
  chunk's start) to the end, as in ``fetch``; alternated per ``--repeats``; median and ratio
  spread / single of both rates. Target: >= 0.8 (the same start-up in both reads brings the
  first ratio towards 1 when it weighs, hence ``meets_target_from_first`` too).

Every measured window follows the steady-leader rule (``_steady``): each row carries
``leadership``, the controllers' quorum sampled at its edges, and a summary row the span of its
runs (first start to last end) plus ``leadership_moved_runs``. Prints one JSON line per row
(``_report.emit``); never writes bench/RESULTS.md. Exits 1 if any row had errors (a refused or
undelivered record, a consumer error, a gap or a duplicate, a window that ran out of
``--timeout``) or if the leader or term moved during a window; the reasons go to stderr. Not a
test: never run it in CI. It only signals processes it started, by PID (through LocalCluster).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from confluent_kafka import OFFSET_BEGINNING, KafkaError, Message
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from _report import emit
from _steady import LeadershipWindow, WindowLeadership, exit_status, failed_rows
from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.client.consumer import Consumer
from chunkraft.client.producer import FutureRecordMetadata, Producer, ProducerError
from chunkraft.local.local_cluster import LocalCluster

BENCH = "kafka_data"
BROKERS = (0, 1, 2)
VALUES = 256
POLL_S = 0.5
"""The chunkraft Consumer's ``poll`` timeout: it returns as soon as it holds records."""
CONSUME_S = 0.01
"""confluent-kafka's ``consume`` timeout: it waits for ``num_messages`` until the timeout, so
the last, partial batch of a read costs up to this much."""
TARGETS = {
    "produce": "kafka >= 40,000 records/s and >= 1.3x http",
    "fetch": "kafka >= 200 MB/s",
    "chunks": "spread chunks >= 0.8x one chunk",
}

Row = dict[str, Any]
READ_FIGURES = ("mb_per_s", "mb_per_s_from_first", "first_record_s", "records_per_s",
                "client_cpu_s")


# ------------------------------------------------------------------ helpers


def load_1m() -> float:
    return round(os.getloadavg()[0], 2)


def percentile(ordered: Sequence[float], fraction: float) -> float | None:
    if not ordered:
        return None
    return round(1000 * ordered[int(fraction * (len(ordered) - 1))], 2)


def count(errors: dict[str, int], name: str, by: int = 1) -> None:
    errors[name] = errors.get(name, 0) + by


def random_values(record_bytes: int) -> list[bytes]:
    return [os.urandom(record_bytes) for _ in range(VALUES)]


def kafka_address(cluster: LocalCluster, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker_nodes[broker_id].kafka_port}"


def kafka_settings(cluster: LocalCluster, bootstrap: str | None = None) -> dict[str, Any]:
    """confluent-kafka's settings for the admin (SASL/PLAIN), nothing of HTTP's."""
    return {"bootstrap.servers": bootstrap or cluster.kafka_bootstrap_servers,
            **cluster.kafka_client_settings()}


class Setup:
    """Topics, cuts and fills: chunkraft's AdminClient (REST v3) and a stock producer. Every
    wait is bounded; a setup failure raises (the run fails with its traceback)."""

    def __init__(self, cluster: LocalCluster, args: argparse.Namespace) -> None:
        self.cluster = cluster
        self.args = args
        self.admin = AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token))

    def close(self) -> None:
        self.admin.close()

    def create_topic(self, name: str, assignments: list[list[int]]) -> None:
        self.admin.create_topic(name, None, None, assignments)
        leaders = [brokers[0] for brokers in assignments]
        self.wait(lambda: [self.admin.get_partition(name, p)["leader_id"]
                           for p in range(len(assignments))] == leaders,
                  f"{name}'s partitions led by {leaders}")
        self.wait_images()

    def wait_images(self) -> None:
        """Until every broker's metadata image holds the admin's last write."""
        offset = self.admin.last_offset

        def caught_up() -> bool:
            statuses = [self.cluster.broker_status(b) for b in BROKERS]
            return all(s is not None and int(s["metadata_offset"]) >= offset
                       for s in statuses)

        self.wait(caught_up, f"every broker's image at offset {offset}")

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for _ in range(10_000):
            if condition():
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        raise TimeoutError(f"not within {timeout} s: {what}")

    def cut(self, topic: str, broker_id: int) -> None:
        """The active chunk of ``topic``-0 cut, the new one on ``broker_id`` alone."""
        (result,) = self.admin.create_chunks([{"topic": topic, "partition": 0,
                                               "replicas": [broker_id]}])
        if result["error_code"] != 0:
            raise RuntimeError(f"the cut of {topic}-0 failed: {result}")
        self.wait(lambda: self.admin.get_partition(topic, 0)["leader_id"] == broker_id,
                  f"{topic}-0's active chunk led by broker {broker_id}")
        self.wait_images()

    def chunks(self, topic: str) -> list[dict[str, Any]]:
        return [{"start_offset": c["start_offset"], "stop_offset": c["stop_offset"],
                 "replica_ids": c["replica_ids"], "is_active": c["is_active"]}
                for c in self.admin.list_chunks(topic, 0)]

    def fill(self, topic: str, partitions: Sequence[int], records: int, values: list[bytes]
             ) -> float:
        """``records`` records round-robin over ``partitions``, acks=all (not measured);
        the seconds it took. A fresh producer each call: after a cut it learns the new
        leader from its first Metadata."""
        settings = {**kafka_settings(self.cluster), "acks": "all",
                    "enable.idempotence": True, "linger.ms": 5}
        producer = KafkaProducer(settings)
        errors: dict[str, int] = {}

        def delivered(started: float, error: KafkaError | None, message: Message) -> None:
            if error is not None:
                count(errors, error.name())

        started = time.perf_counter()
        deadline = time.monotonic() + self.args.timeout
        for index in range(records):
            produce_bounded(producer, deadline, topic, values[index % VALUES],
                            partitions[index % len(partitions)], delivered)
        left = producer.flush(max(deadline - time.monotonic(), 1.0))
        if left or errors:
            raise RuntimeError(f"filling {topic}: {left} records undelivered, errors {errors}")
        return time.perf_counter() - started


def produce_bounded(producer: KafkaProducer, deadline: float, topic: str, value: bytes,
                    partition: int,
                    callback: Callable[[float, KafkaError | None, Message], None]) -> None:
    """One ``produce`` (then ``poll(0)``), serving delivery reports while the queue is full
    (BufferError); TimeoutError past ``deadline``. The delivery report calls
    ``callback(perf_counter() just before the produce() call that took the record, error,
    message)``."""
    for _ in range(1_000_000):
        try:
            producer.produce(topic, value, partition=partition,
                             on_delivery=functools.partial(callback, time.perf_counter()))
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.01)
        if time.monotonic() > deadline:
            break
    raise TimeoutError(f"the producer's queue stayed full until the deadline ({topic})")


def summarise(item: str, runs: list[Row], windows: list[WindowLeadership],
              figures: Sequence[str], systems: tuple[str, str], ratio_figure: str,
              verdict: Callable[[float | None, float | None], dict[str, Any]],
              also: Sequence[str] = ()) -> list[Row]:
    """One median row per system and one ratio row (the first system's median of
    ``ratio_figure`` over the second's, and of each figure of ``also`` as ``ratio_<figure>``),
    each with the leadership of the span of every run of ``item`` and how many of those runs
    moved; ``verdict(ratio, the first system's median)`` gives the ratio row's
    ``meets_target``."""
    span = WindowLeadership(windows[0].start, windows[-1].end).as_json()
    moved = sum(1 for w in windows if w.moved)
    rows: list[Row] = []
    for system in systems:
        mine = [r for r in runs if r["system"] == system]
        row: Row = {"bench": BENCH, "item": item, "summary": "median", "system": system,
                    "runs": len(mine), "errors": merged_errors(mine)}
        for figure in figures:
            found = [r[figure] for r in mine if r.get(figure) is not None]
            row[figure] = round(statistics.median(found), 2) if found else None
            if figure == ratio_figure and found:
                row["spread"] = [min(found), max(found)]
        row.update({"leadership": span, "leadership_moved_runs": moved, "load_1m": load_1m()})
        rows.append(row)

    def ratio_of(figure: str) -> float | None:
        top, bottom = (row[figure] for row in rows)
        return round(top / bottom, 3) if top is not None and bottom else None

    first, second = systems
    top = rows[0][ratio_figure]
    ratio = ratio_of(ratio_figure)
    rows.append({"bench": BENCH, "item": item, "summary": "ratio",
                 "of": f"{first} / {second} {ratio_figure}",
                 f"{first}_{ratio_figure}": top,
                 f"{second}_{ratio_figure}": rows[1][ratio_figure], "ratio": ratio,
                 **{f"ratio_{figure}": ratio_of(figure) for figure in also},
                 "target": TARGETS[item], **verdict(ratio, top),
                 "errors": merged_errors(runs), "leadership": span,
                 "leadership_moved_runs": moved, "load_1m": load_1m()})
    return rows


def merged_errors(rows: Sequence[Row]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for row in rows:
        for name, times in row["errors"].items():
            count(merged, name, times)
    return merged


# ------------------------------------------------------------------ produce


def produce_kafka(cluster: LocalCluster, topic: str, args: argparse.Namespace,
                  values: list[bytes]) -> Row:
    settings = {**kafka_settings(cluster, kafka_address(cluster, 0)), "acks": "all",
                "enable.idempotence": True, "linger.ms": args.linger_ms,
                "queue.buffering.max.messages": args.window}
    producer = KafkaProducer(settings)
    errors: dict[str, int] = {}
    latencies: list[float] = []

    def delivered(started: float, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            count(errors, error.name())
        else:
            latencies.append(time.perf_counter() - started)

    deadline = time.monotonic() + args.timeout
    for partition in range(args.partitions):  # connections, metadata, the producer id
        produce_bounded(producer, deadline, topic, values[partition], partition, delivered)
    if producer.flush(30.0) or errors:
        raise RuntimeError(f"kafka warm-up of {topic}: errors {errors}")
    latencies.clear()
    cpu = time.process_time()
    began = time.perf_counter()
    for index in range(args.records):
        produce_bounded(producer, deadline, topic, values[index % VALUES],
                        index % args.partitions, delivered)
    left = producer.flush(max(deadline - time.monotonic(), 1.0))
    elapsed = time.perf_counter() - began
    cpu = time.process_time() - cpu
    if left:
        count(errors, "not delivered within --timeout", left)
    return produce_row("kafka", topic, args, elapsed, cpu, latencies, errors,
                       {"linger_ms": args.linger_ms, "idempotent": True,
                        "bootstrap": "broker 0's Kafka port"})


def produce_http(cluster: LocalCluster, topic: str, args: argparse.Namespace,
                 values: list[bytes]) -> Row:
    producer = Producer([cluster.broker_url(0)], token=cluster.admin_token,
                        verify=cluster.verify, acks=-1, enable_idempotence=True,
                        linger_ms=args.linger_ms, batch_size=args.http_batch,
                        delivery_timeout_ms=int(args.timeout * 1000))
    errors: dict[str, int] = {}
    latencies: list[float] = []
    fired = [0]
    window = threading.Semaphore(args.window)

    # The sender thread runs the callbacks, and so does this one for a record already done
    # when its callback is added.
    lock = threading.Lock()

    def delivered(started: float, record: FutureRecordMetadata) -> None:
        now = time.perf_counter()
        error = record.exception(0)
        with lock:
            if error is not None:
                count(errors, type(error).__name__ + f": {error}"[:120])
            else:
                latencies.append(now - started)
            fired[0] += 1
        window.release()

    try:
        warm = [producer.send(topic, values[p], partition=p) for p in range(args.partitions)]
        producer.flush(30.0)
        for future in warm:
            future.get(1.0)
        deadline = time.monotonic() + args.timeout
        cpu = time.process_time()
        began = time.perf_counter()
        sent = 0
        for index in range(args.records):
            if not window.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
                count(errors, "window not freed within --timeout")
                break
            started = time.perf_counter()
            future = producer.send(topic, values[index % VALUES],
                                   partition=index % args.partitions)
            future.add_done_callback(functools.partial(delivered, started))
            sent += 1
        try:
            producer.flush(max(deadline - time.monotonic(), 1.0))
        except ProducerError as error:  # a row with errors, not a crash
            count(errors, f"flush: {error}"[:120])
        elapsed = time.perf_counter() - began
        cpu = time.process_time() - cpu
        # Callbacks run before flush counts a batch finished; a short count is a lost one.
        for _ in range(50):
            if fired[0] >= sent:
                break
            time.sleep(0.1)
        if fired[0] < sent:
            count(errors, "completion callbacks that never ran", sent - fired[0])
    finally:
        producer.close(10.0)
    return produce_row("http", topic, args, elapsed, cpu, latencies, errors,
                       {"linger_ms": args.linger_ms, "batch_size": args.http_batch,
                        "idempotent": producer.idempotent,
                        "bootstrap": "broker 0's HTTP URL"})


def produce_row(system: str, topic: str, args: argparse.Namespace, elapsed: float,
                cpu: float, latencies: list[float], errors: dict[str, int],
                settings: dict[str, Any]) -> Row:
    ordered = sorted(latencies)
    return {"bench": BENCH, "item": "produce", "system": system, "topic": topic,
            "records": args.records, "acked": len(latencies), "seconds": round(elapsed, 3),
            "records_per_s": round(len(latencies) / elapsed),
            "mb_per_s": round(len(latencies) * args.record_bytes / elapsed / 1e6, 1),
            "p50_ms": percentile(ordered, 0.5), "p99_ms": percentile(ordered, 0.99),
            "client_cpu_s": round(cpu, 2), "errors": errors, "partitions": args.partitions,
            "replication_factor": 3, "acks": "all", "record_bytes": args.record_bytes,
            "window": args.window, **settings}


def produce_section(cluster: LocalCluster, setup: Setup, args: argparse.Namespace,
                    values: list[bytes]) -> list[Row]:
    runs: list[Row] = []
    windows: list[WindowLeadership] = []
    measure = {"kafka": produce_kafka, "http": produce_http}
    for run in range(args.repeats):
        for system in ("kafka", "http"):
            topic = f"produce-{system}-{run}"
            setup.create_topic(topic, [list(BROKERS)] * args.partitions)
            with LeadershipWindow(cluster.leadership) as window:
                row = measure[system](cluster, topic, args, values)
            windows.append(window.result())
            row.update({"run": run, "load_1m": load_1m(), **window.result().fields()})
            emit(row)
            runs.append(row)

    def targets(ratio: float | None, kafka: float | None) -> dict[str, Any]:
        return {"meets_target": ratio is not None and kafka is not None
                and kafka >= 40_000 and ratio >= 1.3}

    summary = summarise("produce", runs, windows, ("records_per_s", "mb_per_s", "p50_ms",
                                                   "p99_ms", "client_cpu_s"),
                        ("kafka", "http"), "records_per_s", targets, also=("p50_ms",))
    for row in summary:
        emit(row)
    return runs + summary


# ------------------------------------------------------------------ reads


def end_offsets(cluster: LocalCluster, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's high watermark, as confluent-kafka's ListOffsets gives it."""
    consumer = KafkaConsumer({**kafka_settings(cluster), "group.id": f"ends-{uuid.uuid4()}",
                              "enable.auto.commit": False})
    try:
        ends: dict[int, int] = {}
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(
                KafkaTopicPartition(topic, partition), timeout=30.0)
            if low != 0:
                raise RuntimeError(f"{topic}-{partition} starts at {low}, not 0")
            ends[partition] = high
        return ends
    finally:
        consumer.close()


class Tally:
    """What a reader got: records, value bytes, offsets checked per partition."""

    def __init__(self, ends: Mapping[int, int]) -> None:
        self.ends = dict(ends)
        self.next = dict.fromkeys(ends, 0)
        self.records = 0
        self.value_bytes = 0
        self.began = time.perf_counter()
        self.first: float | None = None
        """perf_counter() when the first record came (the client's start-up cost)."""
        self.errors: dict[str, int] = {}

    def take(self, partition: int, offset: int, value: bytes | None) -> None:
        expected = self.next.get(partition)
        if expected is None:
            count(self.errors, f"a record of partition {partition}, not assigned")
            return
        if offset < expected:
            count(self.errors, "duplicates")
            return
        if offset > expected:
            count(self.errors, "gaps")
        self.next[partition] = offset + 1
        if self.first is None:
            self.first = time.perf_counter()
        self.records += 1
        self.value_bytes += len(value) if value is not None else 0

    def done(self) -> bool:
        return all(self.next[p] >= end for p, end in self.ends.items())

    def finish(self) -> None:
        short = sum(max(end - self.next[p], 0) for p, end in self.ends.items())
        if short:
            count(self.errors, "records not read within --timeout", short)


def read_kafka(cluster: LocalCluster, topic: str, ends: Mapping[int, int],
               args: argparse.Namespace) -> tuple[Tally, float, float]:
    consumer = KafkaConsumer({**kafka_settings(cluster),
                              "group.id": f"bench-unused-{uuid.uuid4().hex[:8]}",
                              "enable.auto.commit": False, "auto.offset.reset": "error"})
    tally = Tally(ends)
    try:
        deadline = time.monotonic() + args.timeout
        cpu = time.process_time()
        began = tally.began = time.perf_counter()
        consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        while not tally.done() and time.monotonic() < deadline:
            for message in consumer.consume(args.poll_records, CONSUME_S):
                error = message.error()
                if error is not None:
                    count(tally.errors, error.name())
                    continue
                tally.take(message.partition() or 0, message.offset() or 0, message.value())
        elapsed = time.perf_counter() - began
        cpu = time.process_time() - cpu
    finally:
        consumer.close()
    tally.finish()
    return tally, elapsed, cpu


def read_http(cluster: LocalCluster, topic: str, ends: Mapping[int, int],
              args: argparse.Namespace) -> tuple[Tally, float, float]:
    consumer = Consumer([cluster.broker_url(b) for b in BROKERS], token=cluster.admin_token,
                        verify=cluster.verify, auto_offset_reset="earliest",
                        enable_auto_commit=False, max_poll_records=args.poll_records)
    tally = Tally(ends)
    try:
        deadline = time.monotonic() + args.timeout
        cpu = time.process_time()
        began = tally.began = time.perf_counter()
        consumer.assign([(topic, p) for p in ends])
        while not tally.done() and time.monotonic() < deadline:
            for record in consumer.poll(int(POLL_S * 1000)):
                tally.take(record.partition, record.offset, record.value)
        elapsed = time.perf_counter() - began
        cpu = time.process_time() - cpu
    finally:
        consumer.close()
    tally.finish()
    return tally, elapsed, cpu


def read_row(item: str, system: str, topic: str, tally: Tally, elapsed: float, cpu: float,
             extra: Mapping[str, Any]) -> Row:
    return {"bench": BENCH, "item": item, "system": system, "topic": topic,
            "records": tally.records, "value_mb": round(tally.value_bytes / 1e6, 1),
            "seconds": round(elapsed, 3),
            "first_record_s": None if tally.first is None else round(
                tally.first - tally.began, 3),
            "mb_per_s": round(tally.value_bytes / elapsed / 1e6, 1),
            "mb_per_s_from_first": None if tally.first is None else round(
                tally.value_bytes / (tally.began + elapsed - tally.first) / 1e6, 1),
            "records_per_s": round(tally.records / elapsed),
            "client_cpu_s": round(cpu, 2), "errors": tally.errors, **extra}


def fetch_section(cluster: LocalCluster, setup: Setup, args: argparse.Namespace,
                  values: list[bytes]) -> list[Row]:
    topic = "fetch"
    setup.create_topic(topic, [list(BROKERS)] * args.partitions)
    records = int(args.fetch_mb * 1e6) // args.record_bytes
    seconds = setup.fill(topic, range(args.partitions), records, values)
    ends = end_offsets(cluster, topic, args.partitions)
    emit({"bench": BENCH, "item": "fetch", "setup": "fill", "topic": topic,
          "records": sum(ends.values()), "seconds": round(seconds, 1),
          "partitions": args.partitions, "replication_factor": 3, "load_1m": load_1m()})
    runs: list[Row] = []
    windows: list[WindowLeadership] = []
    readers = {"kafka": read_kafka, "http": read_http}
    for run in range(args.repeats):
        for system in ("kafka", "http"):
            with LeadershipWindow(cluster.leadership) as window:
                tally, elapsed, cpu = readers[system](cluster, topic, ends, args)
            windows.append(window.result())
            row = read_row("fetch", system, topic, tally, elapsed, cpu, {
                "run": run, "partitions": args.partitions, "replication_factor": 3,
                "poll_records": args.poll_records, "load_1m": load_1m(),
                **window.result().fields()})
            emit(row)
            runs.append(row)

    def targets(ratio: float | None, kafka: float | None) -> dict[str, Any]:
        return {"meets_target": kafka is not None and kafka >= 200}

    summary = summarise("fetch", runs, windows, READ_FIGURES, ("kafka", "http"), "mb_per_s",
                        targets, also=("mb_per_s_from_first",))
    from_first = summary[0]["mb_per_s_from_first"]
    summary[-1]["meets_target_from_first"] = from_first is not None and from_first >= 200
    for row in summary:
        emit(row)
    return runs + summary


def chunks_section(cluster: LocalCluster, setup: Setup, args: argparse.Namespace,
                   values: list[bytes]) -> list[Row]:
    records = int(args.chunk_mb * 1e6) // args.record_bytes
    per_chunk = records // args.chunks
    records = per_chunk * args.chunks
    spread, single = "chunks-spread", "chunks-single"
    setup.create_topic(spread, [[0]])
    began = time.perf_counter()
    for index in range(args.chunks):
        if index:
            setup.cut(spread, BROKERS[index % len(BROKERS)])
        setup.fill(spread, [0], per_chunk, values)
    seconds = {spread: time.perf_counter() - began}
    setup.create_topic(single, [[0]])
    seconds[single] = setup.fill(single, [0], records, values)
    layouts = {spread: setup.chunks(spread), single: setup.chunks(single)}
    for topic, layout in layouts.items():
        emit({"bench": BENCH, "item": "chunks", "setup": "fill", "topic": topic,
              "records": records, "chunks": layout, "seconds": round(seconds[topic], 1),
              "load_1m": load_1m()})
    holders = {tuple(c["replica_ids"]) for c in layouts[spread]}
    if len(layouts[spread]) != args.chunks or len(holders) < min(args.chunks, 3):
        raise RuntimeError(f"{spread} is not {args.chunks} chunks over 3 brokers: "
                           f"{layouts[spread]}")
    ends = {topic: end_offsets(cluster, topic, 1) for topic in (spread, single)}
    for topic, found in ends.items():
        if found[0] != records:
            raise RuntimeError(f"{topic} ends at {found[0]}, not {records}")
    runs: list[Row] = []
    windows: list[WindowLeadership] = []
    for run in range(args.repeats):
        for system, topic in (("spread", spread), ("single", single)):
            with LeadershipWindow(cluster.leadership) as window:
                tally, elapsed, cpu = read_kafka(cluster, topic, ends[topic], args)
            windows.append(window.result())
            row = read_row("chunks", system, topic, tally, elapsed, cpu, {
                "run": run, "client": "confluent-kafka",
                "chunks": len(layouts[topic]),
                "chunk_brokers": [c["replica_ids"] for c in layouts[topic]],
                "load_1m": load_1m(), **window.result().fields()})
            emit(row)
            runs.append(row)

    def targets(ratio: float | None, top: float | None) -> dict[str, Any]:
        return {"meets_target": ratio is not None and ratio >= 0.8}

    summary = summarise("chunks", runs, windows, READ_FIGURES, ("spread", "single"),
                        "mb_per_s", targets, also=("mb_per_s_from_first",))
    from_first = summary[-1]["ratio_mb_per_s_from_first"]
    summary[-1]["meets_target_from_first"] = from_first is not None and from_first >= 0.8
    for row in summary:
        emit(row)
    return runs + summary


# ------------------------------------------------------------------ main


def problems(rows: list[Row]) -> list[str]:
    """Why the run is not a measurement: a run row with errors, a window that moved."""
    def where(row: Mapping[str, Any]) -> str:
        if "summary" in row:
            return f"the {row['item']} {row['summary']} span of {row.get('system', 'both')}"
        return f"the {row['item']} window of {row['system']} run {row['run']}"

    found = [f"{where(row)}: errors {row['errors']}" for row in rows
             if "summary" not in row and row["errors"]]
    return found + failed_rows(rows, where)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="20,000 records, 100 MB to fetch, 50 MB of chunks, 1 repeat")
    parser.add_argument("--only", nargs="*", choices=("produce", "fetch", "chunks"),
                        default=["produce", "fetch", "chunks"])
    parser.add_argument("--records", type=int, default=None, help="produce (200,000)")
    parser.add_argument("--repeats", type=int, default=None, help="alternated runs (2)")
    parser.add_argument("--fetch-mb", type=float, default=None, help="fetch topic (1,000)")
    parser.add_argument("--chunk-mb", type=float, default=None, help="chunk topics (500)")
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--linger-ms", type=float, default=5.0)
    parser.add_argument("--http-batch", type=int, default=100,
                        help="chunkraft Producer's batch_size, in records")
    parser.add_argument("--window", type=int, default=100_000,
                        help="records unacknowledged at most, each producer")
    parser.add_argument("--poll-records", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=900.0, help="each window, seconds")
    parser.add_argument("--base-dir", type=Path, default=None,
                        help="cluster directory (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {"records": (200_000, 20_000), "repeats": (2, 1), "fetch_mb": (1000.0, 100.0),
                "chunk_mb": (500.0, 50.0)}
    for name, (full, short) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, short if quick else full)
    if args.repeats < 1 or args.records < 1 or args.chunks < 2 or args.partitions < 1:
        parser.error("--repeats, --records and --partitions must be >= 1, --chunks >= 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    values = random_values(args.record_bytes)
    sections = {"produce": produce_section, "fetch": fetch_section, "chunks": chunks_section}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench_kafka_data_") as temporary:
        base = args.base_dir or Path(temporary)
        cluster = LocalCluster(base, broker_count=len(BROKERS))
        with cluster:
            cluster.wait_ready(60.0)
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=60.0)
            setup = Setup(cluster, args)
            try:
                for name in ("produce", "fetch", "chunks"):
                    if name in args.only:
                        rows += sections[name](cluster, setup, args, values)
            finally:
                setup.close()
    return exit_status(problems(rows))


if __name__ == "__main__":
    raise SystemExit(main())
