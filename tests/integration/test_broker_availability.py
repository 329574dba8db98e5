"""Broker agents stay available under load and restart at once, as real processes on
127.0.0.1 with the default 9 s broker session:

(a) a broker stopped cleanly (SIGTERM, controlled shutdown) and restarted is registered and
    unfenced within 3 s: the controller knows its previous incarnation shut down cleanly;
(b) a broker whose main event loop is kept busy (acks=all produces to an RF-3 topic plus large
    fetches) is never fenced: its heartbeats run on their own thread;
(c) offsets at the end of what a log can store are Kafka errors, never an HTTP 500.

One cluster (3 controllers, 3 brokers) for the module; every loop is bounded in count and time;
only processes this module started are stopped, by the cluster helper, by PID.
"""

from __future__ import annotations

import base64
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from crc32c import crc32c

from chunkraft.client.controller_rpc import ControllerRpcClient
from chunkraft.dataplane.record_batch import MAX_OFFSET, build_batch
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import API, broker_cluster, broker_stats, controller_view, wait_until

RESTART_TARGET_S = 3.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Default sessions and heartbeats: the targets are for the defaults.
    with broker_cluster(tmp_path_factory.mktemp("availability")) as running:
        yield running


@pytest.fixture
def brokers(cluster: LocalCluster) -> LocalCluster:
    for broker_id in cluster.broker_nodes:
        cluster.start_broker(broker_id)
    cluster.wait_brokers_ready(timeout=60)
    return cluster


def registrations(cluster: LocalCluster) -> dict[int, dict[str, Any]]:
    return {b["node_id"]: b for b in controller_view(cluster)["brokers"]}


def create_topic(cluster: LocalCluster, name: str, partitions: int, replication: int) -> None:
    with ControllerRpcClient(cluster.urls, token=cluster.admin_token) as client:
        answer = client.call(f"{API}/create-topics", {"topics": [
            {"name": name, "num_partitions": partitions, "replication_factor": replication}]})
    assert answer["topics"][0]["error_code"] == 0, answer


def leaders(cluster: LocalCluster, topic: str, count: int) -> dict[int, int]:
    """Partition -> leader broker once every partition has a leader (bounded wait)."""
    found: dict[int, int] = {}

    def all_led() -> bool:
        found.clear()
        for entry in controller_view(cluster)["topics"]:
            if entry["name"] == topic:
                found.update({p["partition_index"]: p["leader_id"] for p in entry["partitions"]
                              if p["leader_id"] >= 0})
        return len(found) == count

    wait_until(all_led, f"every partition of {topic} led", timeout=30, interval=0.2)
    return dict(found)


def produce(cluster: LocalCluster, broker_id: int, topic: str, index: int, records: bytes, *,
            count: int, acks: int = -1, http: httpx.Client | None = None) -> httpx.Response:
    body = {"acks": acks, "timeout_ms": 30_000, "topics": [{
        "name": topic, "partition_count": count,
        "partitions": [{"index": index, "records": base64.b64encode(records).decode()}]}]}
    client = http or httpx.Client(headers=cluster.headers, verify=cluster.verify, timeout=60)
    try:
        return client.post(f"{cluster.broker_url(broker_id)}/broker/v1/produce", json=body)
    finally:
        if http is None:
            client.close()


# ------------------------------------------------------------------ (a) a clean restart


def test_a_cleanly_stopped_broker_is_registered_and_unfenced_within_3_s_of_its_restart(
        brokers: LocalCluster) -> None:
    before = brokers.broker_status(2)
    assert before is not None
    assert brokers.stop_broker(2, timeout=40) == 0
    stopped = registrations(brokers)[2]
    assert stopped["fenced"], stopped
    started = time.monotonic()
    brokers.start_broker(2)
    # The broker's own status says registered (new epoch) and unfenced once the controller's
    # heartbeat answer said so; polled every 50 ms, for at most 30 s.
    wait_until(lambda: (s := brokers.broker_status(2, timeout=0.5)) is not None
               and s["broker_epoch"] > before["broker_epoch"] and not s["fenced"],
               "broker 2 registered again and unfenced", timeout=30, interval=0.05)
    took = time.monotonic() - started
    seen = registrations(brokers)[2]
    assert not seen["fenced"], seen  # the controller's view agrees
    print(f"\nclean restart: registered and unfenced {took:.2f} s after the process started")
    assert took < RESTART_TARGET_S, f"registered and unfenced only after {took:.2f} s"


# ------------------------------------------------------------------ (b) busy, never fenced


FLOOD_SECONDS = 25.0  # well over the 9 s session
FLOOD_MAX_REQUESTS = 4_000  # per producer thread, a backstop to the time bound


def test_a_broker_with_a_busy_event_loop_is_never_fenced(brokers: LocalCluster) -> None:
    topic = f"flood-{time.monotonic_ns()}"
    count = 3
    create_topic(brokers, topic, count, 3)
    led = leaders(brokers, topic, count)
    before = {b: broker_stats(brokers, b) for b in brokers.broker_nodes}
    assert all(s is not None for s in before.values())
    # 128 records of 1 KiB per batch: base64, JSON, CRC and the append all on the main loop.
    payload = build_batch([(b"k%d" % i, b"v" * 1024, 1_000 + i) for i in range(128)])
    ends = time.monotonic() + FLOOD_SECONDS
    results: dict[str, list[int]] = {"produced": [], "refused": [], "fetched": []}
    fenced_seen: list[dict[str, Any]] = []
    status_ms: list[float] = []
    lock = threading.Lock()

    def producer(index: int) -> None:
        with httpx.Client(headers=brokers.headers, verify=brokers.verify, timeout=60) as http:
            for _ in range(FLOOD_MAX_REQUESTS):
                if time.monotonic() >= ends:
                    return
                try:
                    answer = produce(brokers, led[index], topic, index, payload, count=count,
                                     http=http)
                except httpx.HTTPError:
                    continue
                assert answer.status_code == 200, answer.text
                code = answer.json()["topics"][0]["partitions"][0]["error_code"]
                with lock:
                    results["produced" if code == 0 else "refused"].append(code)

    def fetcher(index: int) -> None:
        offset = 0
        with httpx.Client(headers=brokers.headers, verify=brokers.verify, timeout=60) as http:
            for _ in range(FLOOD_MAX_REQUESTS):
                if time.monotonic() >= ends:
                    return
                body = {"max_wait_ms": 100, "max_bytes": 8 * 1024 * 1024, "topics": [{
                    "topic": topic, "partitions": [{"partition": index, "fetch_offset": offset,
                                                    "partition_max_bytes": 4 * 1024 * 1024}]}]}
                try:
                    answer = http.post(f"{brokers.broker_url(led[index])}/broker/v1/fetch",
                                       json=body)
                except httpx.HTTPError:
                    continue
                assert answer.status_code == 200, answer.text
                part = answer.json()["responses"][0]["partitions"][0]
                with lock:
                    results["fetched"].append(len(part["records"]))
                # Read the same window again and again: the point is the work, not progress.
                offset = 0 if part["high_watermark"] < 0 else offset

    def watcher() -> None:
        for _ in range(int(FLOOD_SECONDS) + 5):
            if time.monotonic() >= ends:
                return
            try:
                seen = registrations(brokers)
            except Exception:  # a busy controller: the next poll tells
                seen = {}
            fenced_seen.extend(b for b in seen.values() if b["fenced"])
            started = time.monotonic()
            brokers.broker_status(led[0], timeout=30)
            status_ms.append((time.monotonic() - started) * 1000)
            time.sleep(1.0)

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(count)]
    threads += [threading.Thread(target=fetcher, args=(i,)) for i in range(count)]
    threads.append(threading.Thread(target=watcher))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=FLOOD_SECONDS + 90)
    assert not any(thread.is_alive() for thread in threads)
    after = {b: broker_stats(brokers, b) for b in brokers.broker_nodes}
    print(f"\nflood: {len(results['produced'])} produces ok, {len(results['refused'])} refused, "
          f"{len(results['fetched'])} fetches; /status of broker {led[0]} "
          f"max {max(status_ms, default=0):.0f} ms over {len(status_ms)} samples")
    assert fenced_seen == [], fenced_seen
    assert results["produced"], results
    for broker_id, old in before.items():
        new = after[broker_id]
        assert old is not None and new is not None
        assert new["registrations"] == old["registrations"], (broker_id, old, new)
        assert not new["fenced"], new
        # a 1 s interval (the default) gives about 25 heartbeats in 25 s; a quarter of that
        # (one every 4 s, well inside the 9 s session) proves they went on
        assert new["heartbeats"] - old["heartbeats"] >= FLOOD_SECONDS / 4, (old, new)


# ------------------------------------------------------------------ (c) the end of the offsets


def _widest_batch() -> bytes:
    """A one-record batch whose header claims the widest range a batch can have (2^31 - 1
    records, lastOffsetDelta 2^31 - 2), CRC recomputed: it would take 2^31 offsets if the
    broker believed the count."""
    data = bytearray(build_batch([(b"k", b"v", 1)]))
    struct.pack_into(">i", data, 23, 2**31 - 2)  # lastOffsetDelta
    struct.pack_into(">i", data, 57, 2**31 - 1)  # records count
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def test_offsets_at_the_end_of_the_log_are_kafka_errors_never_a_500(brokers: LocalCluster
                                                                     ) -> None:
    topic = f"far-{time.monotonic_ns()}"
    create_topic(brokers, topic, 1, 1)
    leader = leaders(brokers, topic, 1)[0]

    def cut(start: int) -> int:
        with ControllerRpcClient(brokers.urls, token=brokers.admin_token) as client:
            answer = client.call(f"{API}/create-chunks", {"topics": [{
                "name": topic, "partitions": [{
                    "partition_index": 0, "broker_ids": [leader], "prev_stop_offset": start - 1,
                    "prev_end_offset": start - 1, "start_offset": start,
                    "start_timestamp": int(time.time() * 1000)}]}]})
        return int(answer["topics"][0]["partitions"][0]["error_code"])

    one = build_batch([(b"k", b"v", 1)])
    codes: list[int] = []
    if cut(MAX_OFFSET) == 0:
        # A controller that accepts the cut: the broker's log starts at 2^63 - 1, past the last
        # offset it can store, so the next produce is OFFSET_OUT_OF_RANGE.
        start = MAX_OFFSET
    else:
        # The controller refuses a cut no log could append at (its own Kafka error); the last
        # cut it allows leaves room for 2^31 offsets, more than honest batches fill in a test.
        start = MAX_OFFSET - 2**31
        assert cut(start) == 0
    wait_until(lambda: (s := brokers.broker_status(leader)) is not None
               and s["leaders"] >= 1, "the leader took the cut", timeout=30)

    def answer(records: bytes) -> int:
        for _ in range(100):  # the new active chunk's leader may still be applying the cut
            response = produce(brokers, leader, topic, 0, records, count=1, acks=1)
            assert response.status_code == 200, response.text  # never a 500
            code = int(response.json()["topics"][0]["partitions"][0]["error_code"])
            if code != Errors.NOT_LEADER_OR_FOLLOWER.code:
                return code
            time.sleep(0.1)
        raise AssertionError("the leader never took appends")

    if start < MAX_OFFSET:
        codes.append(answer(one))
        assert codes[-1] == 0, codes
        # The broker checks the claimed count against the batch's bytes: the lying batch is
        # INVALID_RECORD (the log's own OFFSET_OUT_OF_RANGE at 2^63 - 2 is unit-tested in
        # tests/unit/broker_agent/storage/test_offset_bounds.py), and honest ones still go in.
        codes.append(answer(_widest_batch()))
        assert codes[-1] == Errors.INVALID_RECORD.code, codes
        codes.append(answer(one))
        print(f"\nend of the offsets: cut at {start}, produce answers {codes}")
        assert codes[-1] == 0, codes
        assert brokers.broker_status(leader) is not None  # the broker still serves
        return
    codes.append(answer(one))
    print(f"\nend of the offsets: cut at {start}, produce answers {codes}")
    assert codes[-1] == Errors.OFFSET_OUT_OF_RANGE.code, codes
    status = brokers.broker_status(leader)
    assert status is not None  # the broker still serves
