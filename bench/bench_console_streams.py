"""The controller's event loop while consoles follow the log: open event streams and a large batch.

A LocalCluster of 3 controller processes on 127.0.0.1 (authentication on), three registered
brokers kept unfenced by heartbeats (no broker processes). For each ``--streams`` count (the
reference is 0 streams, in the same run), ``--rounds`` times:

- that many console event streams (``GET /ui/api/events``, the admin's bearer token) are open
  on the leader, each in a thread of this process;
- a probe asks the leader's ``GET /readyz`` every ``--probe-ms`` (answered on the same event
  loop as every other request), from just before the write until every stream has its event;
- one createTopics of ``--partitions`` partitions (RF 3) commits: one batch of a TopicRecord and
  a PartitionRecord per partition (10,000 records by default), which every stream's page must
  hear about.

Measured per round: the createTopics answer's latency as its client saw it, the probe's
slowest and 99th-percentile answer in that window (how long the event loop was not serving),
and when the last stream got the batch's event (from the write's answer).

Prints one JSON line per measurement and appends a dated section to bench/RESULTS.md (unless
--no-save). Not a test: never run it in CI. It only signals processes it started, by PID.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from _controller.cluster import cluster_with_brokers, post
from _controller.machine import code_version, other_load
from _report import append_section, emit

ROWS: list[dict[str, Any]] = []
NOTES: list[str] = []


def record(row: dict[str, Any]) -> None:
    row = {"bench": "console-streams", **row}
    ROWS.append(row)
    emit(row)


class Stream(threading.Thread):
    """One console event stream: remembers when it first saw an event at or past
    :attr:`target` (set by the main thread once the write answered its offset)."""

    def __init__(self, url: str, headers: dict[str, str], stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.headers = headers
        self.stop = stop
        self.target: int | None = None
        self.offsets: list[tuple[float, int]] = []
        self.opened = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with httpx.stream("GET", f"{self.url}/ui/api/events", headers=self.headers,
                                  timeout=httpx.Timeout(10.0, read=40.0),
                                  trust_env=False) as answer:
                    if answer.status_code != 200:
                        self.error = f"HTTP {answer.status_code}"
                        return
                    for line in answer.iter_lines():
                        if line.startswith("data: "):
                            self.offsets.append((time.monotonic(),
                                                 int(json.loads(line[6:])["offset"])))
                            self.opened.set()
                        if self.stop.is_set():
                            return
            except httpx.HTTPError as error:
                self.error = f"{type(error).__name__}: {error}"
                return

    def seen_at(self, offset: int) -> float | None:
        return next((when for when, seen in self.offsets if seen >= offset), None)


class Probe(threading.Thread):
    """``GET /readyz`` every ``period`` seconds; the latency of each answer."""

    def __init__(self, url: str, period: float) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.period = period
        self.stop = threading.Event()
        self.latencies: list[float] = []

    def run(self) -> None:
        with httpx.Client(timeout=30, trust_env=False) as client:
            while not self.stop.is_set():
                began = time.monotonic()
                client.get(f"{self.url}/readyz")
                self.latencies.append(time.monotonic() - began)
                self.stop.wait(max(self.period - (time.monotonic() - began), 0))


def one_round(url: str, headers: dict[str, str], streams: int, partitions: int, name: str,
              probe_period: float) -> dict[str, Any]:
    stop = threading.Event()
    open_streams = [Stream(url, headers, stop) for _ in range(streams)]
    for stream in open_streams:
        stream.start()
    try:
        for stream in open_streams:
            if not stream.opened.wait(30):
                raise RuntimeError(f"a stream did not open: {stream.error}")
        probe = Probe(url, probe_period)
        probe.start()
        time.sleep(0.2)  # the probe's quiet answers, before the write
        began = time.monotonic()
        answer = httpx.post(f"{url}/v3/clusters/{cluster_id(url, headers)}/topics",
                            json={"topic_name": name, "partitions_count": partitions,
                                  "replication_factor": 3},
                            headers=headers, timeout=120, trust_env=False)
        answered = time.monotonic()
        if answer.status_code != 201:
            raise RuntimeError(f"createTopics: HTTP {answer.status_code} {answer.text[:300]}")
        offset = int(answer.headers["x-metadata-offset"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = [stream.seen_at(offset) for stream in open_streams]
            if all(when is not None for when in seen):
                break
            time.sleep(0.01)
        else:
            raise RuntimeError("not every stream heard of the batch within 60 s")
        probe.stop.set()
        probe.join(30)
        latencies = sorted(probe.latencies)
        last_seen = max((when for when in seen if when is not None), default=answered)
        return {"streams": streams, "partitions": partitions,
                "create_ms": round((answered - began) * 1000, 1),
                "probe_max_ms": round(latencies[-1] * 1000, 1),
                "probe_p99_ms": round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 1),
                "probes": len(latencies),
                "last_stream_ms": round((last_seen - answered) * 1000, 1)}
    finally:
        stop.set()
        # A stream notices the stop at its next line (an idle line at least every 5 s). Wait
        # for every one to close: one left open would decode the next round's batch too.
        for stream in open_streams:
            stream.join(15)
        if any(stream.is_alive() for stream in open_streams):
            raise RuntimeError("a stream did not close within 15 s of the round's end")


_CLUSTER_IDS: dict[str, str] = {}


def cluster_id(url: str, headers: dict[str, str]) -> str:
    if url not in _CLUSTER_IDS:
        answer = httpx.get(f"{url}/v3/clusters", headers=headers, timeout=30, trust_env=False)
        _CLUSTER_IDS[url] = str(answer.json()["data"][0]["cluster_id"])
    return _CLUSTER_IDS[url]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, nargs="+", default=[0, 50])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=9_999)
    parser.add_argument("--probe-ms", type=float, default=5.0)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    NOTES.append(f"Code measured: {code_version()}. At the start: {other_load()}.")
    with contextlib.ExitStack() as stack:
        base = Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="chunkraft-bench-console-streams-")))
        cluster, leader_url = cluster_with_brokers(stack, base, "streams")
        headers = dict(cluster.headers)
        post(leader_url, headers, "create-topics", {"topics": [
            {"name": "warm-up", "num_partitions": 1, "replication_factor": 3}]})
        for round_index in range(args.rounds):
            for streams in args.streams:  # alternated, so a drift of the machine hits both
                row = one_round(leader_url, headers, streams, args.partitions,
                                f"big-{streams}-{round_index}", args.probe_ms / 1000)
                record({"item": "round", "round": round_index, **row})
    by_streams: dict[int, list[dict[str, Any]]] = {}
    for row in ROWS:
        if row.get("item") == "round":
            by_streams.setdefault(row["streams"], []).append(row)
    for streams, rows in sorted(by_streams.items()):
        record({"item": "median", "streams": streams, "rounds": len(rows), **{
            key: round(statistics.median(r[key] for r in rows), 1)
            for key in ("create_ms", "probe_max_ms", "probe_p99_ms", "last_stream_ms")}})
    if not args.no_save:
        lines = [*NOTES, "", "| open streams | rounds | createTopics ms | /readyz slowest ms "
                 "| /readyz p99 ms | last stream's event after the answer, ms |",
                 "|---|---|---|---|---|---|"]
        for row in ROWS:
            if row.get("item") == "median":
                lines.append(f"| {row['streams']} | {row['rounds']} | {row['create_ms']} | "
                             f"{row['probe_max_ms']} | {row['probe_p99_ms']} | "
                             f"{row['last_stream_ms']} |")
        lines.append(f"\nMedians of the rounds; one createTopics of {args.partitions} "
                     "partitions (RF 3) per round.")
        append_section("Console event streams and a large batch: the leader's event loop",
                       lines)


if __name__ == "__main__":
    main()
