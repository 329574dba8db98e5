"""The demo's data-plane part: KIP-1114's AlterChunkAssignmentsTest on the real broker agents.

A topic with one partition on broker 0 only; 10 records produced to broker 0; its active chunk
cut onto broker 1 through the admin REST API (broker 0 reads its own LSO and HW); 10 more
records to broker 1; the first chunk moved to broker 2, which copies it from broker 0 while
broker 0 deletes its copy once the move completes; then a reader walks the partition chunk by
chunk, from broker 2 and then broker 1, as KIP-1114's consumer does. What each broker holds on
disk is shown after each step (``GET /broker/v1/local-replicas``).

Needs broker agents 0, 1 and 2 running; every wait is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.local.local_cluster import LocalCluster

__all__ = ["run_data_plane_demo"]

WAIT_S = 30.0
BROKERS = (0, 1, 2)


def _say(step: str) -> None:
    print(f"\n== {step}")


def _wait(condition: Callable[[], bool], what: str) -> None:
    ends = time.monotonic() + WAIT_S
    while time.monotonic() < ends:
        if condition():
            return
        time.sleep(0.1)
    raise RuntimeError(f"the demo waited {WAIT_S:.0f} s for {what}")


def _holdings(cluster: LocalCluster, broker_id: int, topic: str) -> list[dict[str, Any]] | None:
    answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/local-replicas",
                       headers=cluster.headers, timeout=10, verify=cluster.verify)
    answer.raise_for_status()
    for row in answer.json()["partitions"]:
        if row["topic"] == topic and row["partition"] == 0:
            return [c for c in row["chunks"] if c["first_offset_held"] >= 0]
    return None


def _show_disks(cluster: LocalCluster, topic: str) -> None:
    for broker_id in BROKERS:
        held = _holdings(cluster, broker_id, topic)
        if held is None:
            print(f"  broker {broker_id} disk: nothing of {topic}-0")
            continue
        parts = [f"{'active' if c['active'] else 'inactive'} chunk {c['start_offset']}: "
                 f"offsets {c['first_offset_held']}..{c['last_offset_held']} "
                 f"({c['bytes_held']} bytes)" for c in held]
        print(f"  broker {broker_id} disk: " + "; ".join(parts))


def _show_chunks(admin: AdminClient, topic: str) -> None:
    for chunk in admin.list_chunks(topic, 0):
        if chunk["is_active"]:
            print(f"  active chunk   start {chunk['start_offset']}: leader "
                  f"{chunk['leader_id']}, replicas {chunk['replica_ids']}")
        else:
            print(f"  inactive chunk start {chunk['start_offset']} stop "
                  f"{chunk['stop_offset']} end {chunk['end_offset']}: replicas "
                  f"{chunk['replica_ids']}, epoch {chunk['chunk_epoch']}")


def _produce(broker: BrokerClient, topic: str, prefix: str) -> int:
    now = int(time.time() * 1000)
    batch = [(f"{prefix}-{i}".encode(), f"{prefix} record {i}".encode(), now)
             for i in range(10)]
    answer = None
    for _ in range(50):  # the leader may still be taking over the partition
        answer = broker.produce_records(topic, 0, 1, batch, acks=-1)
        if answer.error_code == 0:
            return answer.base_offset
        time.sleep(0.2)
    raise RuntimeError(f"produce to {topic}-0 failed: {answer}")


def run_data_plane_demo(cluster: LocalCluster) -> None:
    """Runs the story on ``cluster`` (controllers ready, broker agents 0..2 unfenced)."""
    if any(b not in cluster.broker_nodes or not cluster.broker_nodes[b].running
           for b in BROKERS):
        print("\n(brokers 0, 1 and 2 are not all running: the data-plane part is skipped)")
        return
    config = CommandConfig(token=cluster.admin_token)
    with AdminClient(cluster.urls, config) as admin:
        names = {t["topic_name"] for t in admin.list_topics()}
        topic = next(n for n in ("kip", *(f"kip-{i}" for i in range(2, 10_000)))
                     if n not in names)
        brokers = {b: BrokerClient(cluster.broker_url(b), token=cluster.admin_token,
                                   verify=cluster.verify) for b in BROKERS}
        try:
            _say(f"KIP-1114 on the broker agents: topic {topic}, one partition on broker 0 "
                 "only; 10 records to broker 0")
            admin.create_topic(topic, None, None, [[0]])
            first = _produce(brokers[0], topic, "first")
            print(f"broker 0 appended offsets {first}..{first + 9} (acks=all)")
            _show_disks(cluster, topic)

            _say("Cut the active chunk onto broker 1 (chunks:create without offsets: broker 0 "
                 "pauses appends and reads its LSO and HW)")
            (cut,) = admin.create_chunks([{"topic": topic, "partition": 0, "replicas": [1]}])
            if cut["error_code"] != 0:
                raise RuntimeError(f"the cut failed: {cut}")
            _show_chunks(admin, topic)
            _wait(lambda: _holdings(cluster, 1, topic) is not None,
                  "broker 1 to create the new active chunk")
            second = _produce(brokers[1], topic, "second")
            print(f"broker 1 appended offsets {second}..{second + 9}")
            _show_disks(cluster, topic)

            _say("Move the inactive chunk [0..9] to broker 2 (chunks:alter-assignments)")
            (moved,) = admin.alter_chunk_assignments(
                [{"topic": topic, "partition": 0, "start_offset": 0, "replicas": [2]}])
            if moved["error_code"] != 0:
                raise RuntimeError(f"the move failed: {moved}")
            _wait(lambda: admin.get_chunk(topic, 0, 0)["replica_ids"] == [2]
                  and _holdings(cluster, 0, topic) is None,
                  "broker 2 to copy the chunk and broker 0 to delete it")
            print("broker 2 copied offsets 0..9 from broker 0 and reported its copy in sync; "
                  "the controller completed the move and broker 0 deleted its copy")
            _show_chunks(admin, topic)
            _show_disks(cluster, topic)

            _say("A reader walks the partition chunk by chunk")
            part, records = brokers[2].fetch_records(topic, 0, 0)
            print(f"broker 2 served offsets {records[0].offset}..{records[-1].offset} "
                  f"(inactive chunk, stop offset {part.chunk_stop_offset}): "
                  f"{records[0].value.decode() if records[0].value else ''} ...")
            part, records = brokers[1].fetch_records(topic, 0, part.chunk_stop_offset + 1)
            print(f"broker 1 served offsets {records[0].offset}..{records[-1].offset} "
                  f"(active chunk, high watermark {part.high_watermark}): "
                  f"{records[0].value.decode() if records[0].value else ''} ...")
            refused, _ = brokers[0].fetch_records(topic, 0, 0)
            print(f"broker 0 no longer holds the partition: error {refused.error_code} "
                  "(NOT_LEADER_OR_FOLLOWER)")
        finally:
            for broker in brokers.values():
                broker.close()
