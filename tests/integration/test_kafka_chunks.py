"""KIP-1114 over Kafka's protocol: a chunk cut with the Kafka request moves the active leader
that kcat shows, the chunks travel in Metadata only when asked, and the private API keys are
listed only to a client that asks for them.

Real processes: 3 controllers and 3 brokers with SASL_PLAINTEXT Kafka listeners; the requests
are framed with chunkraft's codec (``tests/support/kafka_wire.py``), the leader is read with
kcat, a stock client.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from chunkraft.client.producer import Producer
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import broker_cluster, wait_until
from tests.support.kafka_wire import KafkaWire

CREATE_CHUNKS, ALTER_CHUNK_ASSIGNMENTS, METADATA, CREATE_TOPICS = 17000, 17001, 3, 19
ZERO = uuid.UUID(int=0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-chunks")) as running:
        yield running


def connect(cluster: LocalCluster, address: str, *, private_apis: bool = True) -> KafkaWire:
    wire = KafkaWire(address)
    answer = wire.sasl_plain("admin", cluster.admin_token, private_apis=private_apis)
    assert answer["error_code"] == 0, answer
    return wire


def kcat_leaders(cluster: LocalCluster, topic: str) -> dict[int, int]:
    """Partition -> leader, as kcat (librdkafka) reads it from the brokers' Metadata."""
    settings = cluster.kafka_client_settings()
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, "-L", "-J", "-t", topic,
               "-m", "10"]
    for key, value in settings.items():
        command += ["-X", f"{key}={value}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    listing = json.loads(done.stdout)
    (found,) = [t for t in listing["topics"] if t["topic"] == topic]
    return {p["partition"]: p["leader"] for p in found["partitions"]}


def partition_of(wire: KafkaWire, topic: str, *, chunks: bool) -> dict[str, Any]:
    answer = wire.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": ZERO}],
                                      "include_chunks": chunks})
    (found,) = answer["topics"]
    assert found["error_code"] == 0, found
    (partition,) = found["partitions"]
    return partition


def test_private_keys_are_listed_only_when_asked(cluster: LocalCluster) -> None:
    address = cluster.kafka_bootstrap_servers.split(",")[0]
    with connect(cluster, address, private_apis=False) as plain:
        keys = {entry["api_key"] for entry in plain.api_versions["api_keys"]}
    assert CREATE_CHUNKS not in keys and ALTER_CHUNK_ASSIGNMENTS not in keys
    assert {3, 18, 19, 37, 60} <= keys
    with connect(cluster, address) as asking:
        keys = {entry["api_key"] for entry in asking.api_versions["api_keys"]}
    assert {CREATE_CHUNKS, ALTER_CHUNK_ASSIGNMENTS} <= keys


def test_a_cut_over_kafka_moves_the_leader_kcat_shows(cluster: LocalCluster) -> None:
    topic = "kafka-cut"
    broker = cluster.kafka_bootstrap_servers.split(",")[1]
    with connect(cluster, broker) as wire:
        created = wire.call(CREATE_TOPICS, 7, {"topics": [{
            "name": topic, "num_partitions": -1, "replication_factor": -1,
            "assignments": [{"partition_index": 0, "broker_ids": [0]}], "configs": []}],
            "timeout_ms": 30_000, "validate_only": False})
        assert created["topics"][0]["error_code"] == 0, created
        wait_until(lambda: kcat_leaders(cluster, topic) == {0: 0}, "kcat sees leader 0")
        before = partition_of(wire, topic, chunks=False)
        assert "chunks" not in before or before["chunks"] == []  # not asked: not sent
        # A chunk holds records: 10 of them, produced with the project's own client.
        urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
        with Producer(urls, token=cluster.admin_token, verify=cluster.verify) as producer:
            sent = [producer.send(topic, f"record {i}") for i in range(10)]
            producer.flush()
        assert [future.get(0).offset for future in sent] == list(range(10))
        # The operator's form: offsets -1, the leader broker (0) reads them and cuts.
        cut = wire.call(CREATE_CHUNKS, 0, {"topics": [{"name": topic, "partitions": [{
            "partition_index": 0, "broker_ids": [1], "start_timestamp": -1}]}]})
        assert [p["error_code"] for p in cut["topics"][0]["partitions"]] == [0], cut
        wait_until(lambda: kcat_leaders(cluster, topic) == {0: 1},
                   "kcat sees the new active chunk's leader, broker 1")
        after = partition_of(wire, topic, chunks=True)
        # The active chunk's replicas, then the inactive chunk's holder (a stock consumer may
        # be sent there); the ISR stays the active chunk's.
        assert after["leader_id"] == 1 and after["replica_nodes"] == [1, 0]
        assert after["isr_nodes"] == [1]
        (chunk,) = after["chunks"]
        assert chunk["replicas"] == [0] and chunk["start_offset"] == 0
        assert chunk["stop_offset"] == chunk["end_offset"] == 9
        assert after["active_chunk_start_offset"] == chunk["end_offset"] + 1
        # Move the inactive chunk to broker 2, by its start offset and epoch.
        moved = wire.call(ALTER_CHUNK_ASSIGNMENTS, 0, {"chunks": [{
            "topic_name": topic, "partition_id": 0, "start_offset": chunk["start_offset"],
            "chunk_epoch": chunk["chunk_epoch"], "broker_ids": [2]}], "validate_only": False})
        assert [c["error_code"] for c in moved["results"]] == [0], moved
        wait_until(lambda: partition_of(wire, topic, chunks=True)["chunks"][0]["replicas"]
                   == [2], "the chunk held by broker 2 alone", timeout=60)
        wait_until(lambda: partition_of(wire, topic, chunks=False)["replica_nodes"] == [1, 2],
                   "Metadata's replicas follow the move", timeout=30)


def test_the_operators_form_and_offsets_cannot_be_mixed(cluster: LocalCluster) -> None:
    controller = cluster.kafka_bootstrap_controllers.split(",")[0]
    with connect(cluster, controller) as wire:
        answer = wire.call(CREATE_CHUNKS, 0, {"topics": [{"name": "kafka-cut", "partitions": [
            {"partition_index": 0, "broker_ids": [0], "start_timestamp": -1},
            {"partition_index": 0, "broker_ids": [0], "prev_stop_offset": 0,
             "prev_end_offset": 0, "start_offset": 1, "start_timestamp": -1}]}]})
    assert {p["error_code"] for p in answer["topics"][0]["partitions"]} == {42}  # INVALID_REQUEST
