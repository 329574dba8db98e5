"""Stock consumers read a partition whose older chunks live on brokers that are not its leader
(KIP-1114 with KIP-392's preferred read replica): kafka-python, confluent-kafka (librdkafka
2.16), kcat (librdkafka 2.0.2) and aiokafka, with and without ``client_rack``, each read every
record from offset 0, in order, none skipped, none twice, with partitions assigned (no group).

Two topics of one partition each, produced by one stock producer (kafka-python, idempotent,
acks=all) across the cuts:

- ``reads-cut``: offsets 0..19 in a chunk on broker 0, 20..39 in a chunk on broker 1, the active
  chunk (40..59) led by broker 2. Metadata lists [2, 0, 1] as the replicas.
- ``reads-moved``: 0..19 in a chunk moved from broker 0 to broker 1 and back to broker 0, the
  active chunk (20..39) led by broker 2.

From offset 0 each client asks ListOffsets for the earliest offset, the first chunk's start.
Also: a fetch of a high offset (in the active chunk) reads as usual; raw Fetch requests show
the answers per version: v10 gets the records from the leader itself, v11 the holder's id,
then the records when the client asks the same offset again; a holder past its chunk names the
next chunk's holder, then the leader.

Real processes: 3 controllers and 3 brokers with SASL_PLAINTEXT Kafka listeners on 127.0.0.1.
The chunks are cut and moved with the private Kafka requests CreateChunks and
AlterChunkAssignments. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from chunkraft.dataplane.record_batch import decode_records, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import broker_cluster, kafka_address, wait_until
from tests.support.kafka_wire import KafkaWire

FETCH, METADATA, CREATE_TOPICS = 1, 3, 19
CREATE_CHUNKS, ALTER_CHUNK_ASSIGNMENTS = 17000, 17001
PER_CHUNK = 20
CUT, MOVED = "reads-cut", "reads-moved"
ZERO = uuid.UUID(int=0)

Read = list[tuple[int, bytes]]
"""(offset, value) in the order a consumer returned them."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-chunk-reads")) as running:
        yield running


# ------------------------------------------------------------------ the cluster's side


def admin_wire(cluster: LocalCluster, broker_id: int = 0) -> KafkaWire:
    wire = KafkaWire(kafka_address(cluster, broker_id))
    assert wire.sasl_plain("admin", cluster.admin_token, private_apis=True)["error_code"] == 0
    return wire


def partition_of(wire: KafkaWire, topic: str) -> dict[str, Any]:
    answer = wire.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": ZERO}],
                                      "include_chunks": True})
    (found,) = answer["topics"]
    assert found["error_code"] == 0, found
    (partition,) = found["partitions"]
    return dict(partition)


def create_topic(wire: KafkaWire, topic: str, broker_id: int) -> None:
    created = wire.call(CREATE_TOPICS, 7, {"topics": [{
        "name": topic, "num_partitions": -1, "replication_factor": -1,
        "assignments": [{"partition_index": 0, "broker_ids": [broker_id]}], "configs": []}],
        "timeout_ms": 30_000, "validate_only": False})
    assert created["topics"][0]["error_code"] == 0, created
    wait_until(lambda: leader_of(wire, topic) == broker_id, f"{topic} led by broker {broker_id}")


def leader_of(wire: KafkaWire, topic: str) -> int | None:
    """The partition's leader as this broker sees it; None while the broker has not yet applied
    the topic's records (CreateTopics answers once the controller committed them, as Kafka's does,
    so the broker may still answer UNKNOWN_TOPIC_OR_PARTITION for a moment)."""
    answer = wire.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": ZERO}]})
    (found,) = answer["topics"]
    if found["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code:
        return None
    assert found["error_code"] == 0, found
    return int(found["partitions"][0]["leader_id"])


def cut(wire: KafkaWire, topic: str, broker_id: int) -> None:
    """The active chunk cut (the operator's form: the leader reads the offsets), the new one
    on ``broker_id`` alone."""
    answer = wire.call(CREATE_CHUNKS, 0, {"topics": [{"name": topic, "partitions": [{
        "partition_index": 0, "broker_ids": [broker_id], "start_timestamp": -1}]}]})
    assert [p["error_code"] for p in answer["topics"][0]["partitions"]] == [0], answer
    wait_until(lambda: partition_of(wire, topic)["leader_id"] == broker_id,
               f"{topic}'s active chunk led by broker {broker_id}")


def move(wire: KafkaWire, topic: str, start: int, broker_id: int) -> None:
    """The chunk starting at ``start`` moved to ``broker_id`` alone, its copy complete."""
    (chunk,) = [c for c in partition_of(wire, topic)["chunks"] if c["start_offset"] == start]
    answer = wire.call(ALTER_CHUNK_ASSIGNMENTS, 0, {"chunks": [{
        "topic_name": topic, "partition_id": 0, "start_offset": start,
        "chunk_epoch": chunk["chunk_epoch"], "broker_ids": [broker_id]}],
        "validate_only": False})
    assert [c["error_code"] for c in answer["results"]] == [0], answer

    def there() -> bool:
        (now,) = [c for c in partition_of(wire, topic)["chunks"] if c["start_offset"] == start]
        return bool(now["replicas"] == now["isr"] == [broker_id])

    wait_until(there, f"{topic}'s chunk at {start} on broker {broker_id} alone", timeout=60)


# ------------------------------------------------------------------ the stock clients


def python_settings(cluster: LocalCluster) -> dict[str, Any]:
    return {"bootstrap_servers": cluster.kafka_bootstrap_servers.split(","),
            "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "admin", "sasl_plain_password": cluster.admin_token}


def values(topic: str, first: int, count: int) -> list[bytes]:
    return [f"{topic}-{i}".encode() for i in range(first, first + count)]


class StockProducer:
    """One kafka-python producer (idempotent, acks=all) kept across the cuts: it finds each new
    leader itself (NOT_LEADER_OR_FOLLOWER, then Metadata)."""

    def __init__(self, cluster: LocalCluster) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(**python_settings(cluster), acks="all", linger_ms=5,
                                      request_timeout_ms=30_000)

    def send(self, topic: str, first: int, count: int) -> None:
        futures = [self.producer.send(topic, key=f"k{i % 5}".encode(), value=value)
                   for i, value in enumerate(values(topic, first, count))]
        self.producer.flush(timeout=60)
        offsets = [future.get(timeout=30).offset for future in futures]
        assert offsets == list(range(first, first + count)), offsets

    def close(self) -> None:
        self.producer.close(timeout=10)


def consume_kafka_python(cluster: LocalCluster, topic: str, start: int, until: int) -> Read:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(**python_settings(cluster), enable_auto_commit=False,
                             auto_offset_reset="none", request_timeout_ms=30_000)
    read: Read = []
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        if start == 0:
            consumer.seek_to_beginning(partition)  # ListOffsets earliest: the first chunk
        else:
            consumer.seek(partition, start)
        deadline = time.monotonic() + 60
        while (not read or read[-1][0] < until - 1) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                read.extend((record.offset, record.value) for record in batch)
    finally:
        consumer.close()
    return read


def librdkafka_debug() -> dict[str, str]:
    """``RDKAFKA_DEBUG=fetch,consumer`` shows librdkafka's own account of where it fetched."""
    return {"debug": os.environ["RDKAFKA_DEBUG"]} if os.environ.get("RDKAFKA_DEBUG") else {}


def consume_confluent(cluster: LocalCluster, topic: str, start: int, until: int) -> Read:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.kafka_bootstrap_servers,
                         **cluster.kafka_client_settings(), **librdkafka_debug(),
                         "group.id": f"unused-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "error"})
    read: Read = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING if start == 0 else start)])
        deadline = time.monotonic() + 60
        while (not read or read[-1][0] < until - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            offset = message.offset()
            assert offset is not None
            read.append((offset, message.value() or b""))
    finally:
        consumer.close()
    return read


def consume_kcat(cluster: LocalCluster, topic: str, start: int, until: int) -> Read:
    # -e: exit at the end of the partition; librdkafka reports that end only from a fetch
    # answer whose high watermark is the fetch offset, so a redirect never ends it early.
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, "-C", "-t", topic, "-p", "0",
               "-o", "beginning" if start == 0 else str(start), "-e", "-q", "-f", "%o\t%s\n",
               "-X", "auto.offset.reset=error"]
    for key, value in cluster.kafka_client_settings().items():
        command += ["-X", f"{key}={value}"]
    debug = librdkafka_debug()
    if debug:
        command += ["-d", debug["debug"]]
    done = subprocess.run(command, capture_output=True, timeout=90, check=True)
    if debug:
        print(done.stderr.decode())
    read: Read = []
    for line in done.stdout.decode().splitlines():
        offset, value = line.split("\t")
        read.append((int(offset), value.encode()))
    return read


def consume_aiokafka(cluster: LocalCluster, topic: str, start: int, until: int,
                     **extra: Any) -> Read:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    read: Read = []

    async def run() -> None:
        consumer = AIOKafkaConsumer(**python_settings(cluster), enable_auto_commit=False,
                                    auto_offset_reset="none", **extra)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            if start == 0:
                await consumer.seek_to_beginning(partition)
            else:
                consumer.seek(partition, start)
            while not read or read[-1][0] < until - 1:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    read.extend((record.offset, record.value) for record in batch)
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(run(), 60))
    return read


def consume_aiokafka_with_rack(cluster: LocalCluster, topic: str, start: int,
                               until: int) -> Read:
    # With client_rack aiokafka reads preferred_read_replica and follows it.
    return consume_aiokafka(cluster, topic, start, until, client_rack="rack-a")


CONSUMERS = {"kafka-python": consume_kafka_python, "confluent-kafka": consume_confluent,
             "kcat": consume_kcat, "aiokafka": consume_aiokafka,
             "aiokafka-rack": consume_aiokafka_with_rack}


def assert_exactly(read: Read, topic: str, start: int, until: int, who: str) -> None:
    """Every offset of ``start .. until - 1`` once, in order, with the value produced there."""
    offsets = [offset for offset, _ in read]
    assert offsets == list(range(start, until)), f"{who}: offsets {offsets}"
    assert [value for _, value in read] == values(topic, start, until - start), who


# ------------------------------------------------------------------ the topics


@pytest.fixture(scope="module")
def topics(cluster: LocalCluster) -> Iterator[None]:
    """Both topics, produced and cut as the module docstring says."""
    producer = StockProducer(cluster)
    try:
        with admin_wire(cluster) as wire:
            create_topic(wire, CUT, 0)
            producer.send(CUT, 0, PER_CHUNK)
            cut(wire, CUT, 1)
            producer.send(CUT, PER_CHUNK, PER_CHUNK)
            cut(wire, CUT, 2)
            producer.send(CUT, 2 * PER_CHUNK, PER_CHUNK)

            create_topic(wire, MOVED, 0)
            producer.send(MOVED, 0, PER_CHUNK)
            cut(wire, MOVED, 2)
            producer.send(MOVED, PER_CHUNK, PER_CHUNK)
            move(wire, MOVED, 0, 1)
            move(wire, MOVED, 0, 0)
        yield
    finally:
        producer.close()


def test_metadata_lists_the_holders_after_the_active_replicas(
        cluster: LocalCluster, topics: None) -> None:
    with admin_wire(cluster) as wire:
        cut_partition = partition_of(wire, CUT)
        moved_partition = partition_of(wire, MOVED)
    assert (cut_partition["leader_id"], cut_partition["replica_nodes"],
            cut_partition["isr_nodes"]) == (2, [2, 0, 1], [2])
    assert [(c["start_offset"], c["stop_offset"], c["isr"])
            for c in cut_partition["chunks"]] == [(0, 19, [0]), (20, 39, [1])]
    assert (moved_partition["replica_nodes"], moved_partition["chunks"][0]["isr"]) == (
        [2, 0], [0])


@pytest.mark.parametrize("client", sorted(CONSUMERS))
def test_a_stock_consumer_reads_every_chunk_from_offset_0(
        cluster: LocalCluster, topics: None, client: str) -> None:
    consume = CONSUMERS[client]
    assert_exactly(consume(cluster, CUT, 0, 3 * PER_CHUNK), CUT, 0, 3 * PER_CHUNK,
                   f"{client} on {CUT}")
    assert_exactly(consume(cluster, MOVED, 0, 2 * PER_CHUNK), MOVED, 0, 2 * PER_CHUNK,
                   f"{client} on {MOVED}")


@pytest.mark.parametrize("client", sorted(CONSUMERS))
def test_a_fetch_of_a_high_offset_reads_the_active_chunk_as_usual(
        cluster: LocalCluster, topics: None, client: str) -> None:
    start = 2 * PER_CHUNK + 5
    assert_exactly(CONSUMERS[client](cluster, CUT, start, 3 * PER_CHUNK), CUT, start,
                   3 * PER_CHUNK, f"{client} from {start}")


# ------------------------------------------------------------------ the answers, raw


def fetch(wire: KafkaWire, version: int, offset: int, topic: str = CUT) -> dict[str, Any]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    answer = wire.call(FETCH, version, body)
    assert answer["error_code"] == 0, answer
    (partition,) = answer["responses"][0]["partitions"]
    return dict(partition)


def offsets_in(partition: dict[str, Any]) -> list[int]:
    return [record.offset for _, view in iter_batches(partition["records"] or b"")
            for record in decode_records(view)]


def test_fetch_v10_gets_the_records_from_the_leader_itself(
        cluster: LocalCluster, topics: None) -> None:
    with admin_wire(cluster, 2) as leader:
        for offset, chunk in ((0, range(0, 20)), (20, range(20, 40))):
            got = fetch(leader, 10, offset)
            assert (got["error_code"], got["high_watermark"]) == (0, 60), got
            assert offsets_in(got) == list(chunk)


def test_fetch_v11_names_the_holder_once_then_reads_for_a_client_that_came_back(
        cluster: LocalCluster, topics: None) -> None:
    with admin_wire(cluster, 2) as leader:
        sent = fetch(leader, 11, 3)
        assert (sent["error_code"], sent["preferred_read_replica"]) == (0, 0)
        assert not sent["records"]
        again = fetch(leader, 11, 3)
        assert again["preferred_read_replica"] == -1
        got = offsets_in(again)  # whole batches: the one holding offset 3 on, to the stop
        assert 3 in got and got == list(range(got[0], 20)), got
        # The chunk moved twice is found on the broker that holds it now.
        assert fetch(leader, 12, 0, MOVED)["preferred_read_replica"] == 0


def test_a_holder_past_its_chunk_names_the_next_holder_then_the_leader(
        cluster: LocalCluster, topics: None) -> None:
    with admin_wire(cluster, 0) as first, admin_wire(cluster, 1) as second:
        assert offsets_in(fetch(first, 11, 0)) == list(range(20))
        on = fetch(first, 11, 20)
        assert (on["error_code"], on["preferred_read_replica"]) == (0, 1) and not on["records"]
        assert offsets_in(fetch(second, 11, 20)) == list(range(20, 40))
        assert fetch(second, 11, 40)["preferred_read_replica"] == 2
        # Below v11 the client believes broker 1 leads: it must ask the metadata again.
        assert fetch(second, 10, 40)["error_code"] == 6  # NOT_LEADER_OR_FOLLOWER
