"""Stock Kafka clients set up against a local chunkraft cluster, for the tests that prove the
Kafka protocol with them: their settings (SASL/PLAIN as the cluster's admin), a topic created
over the wire and awaited in the brokers' metadata, keyed records, and one acks=all producer
per client (kcat, kafka-python, confluent-kafka, aiokafka), and one consumer per client that
reads a topic from the beginning with partitions assigned. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections import defaultdict
from typing import Any

from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import wait_until
from tests.support.kafka_wire import KafkaWire

__all__ = ["KEYS", "PARTITIONS", "Read", "assert_all_in_order", "consume_aiokafka",
           "consume_confluent", "consume_kafka_python", "consume_kcat", "create_topic",
           "kafka_python_partitions", "keyed",
           "librdkafka_settings", "produce_aiokafka", "produce_confluent",
           "produce_kafka_python", "produce_kcat", "python_settings"]

KEYS = 50
PARTITIONS = 3
CREATE_TOPICS = 19


def create_topic(cluster: LocalCluster, name: str, partitions: int = PARTITIONS) -> None:
    address = cluster.kafka_bootstrap_servers.split(",")[0]
    with KafkaWire(address) as wire:
        assert wire.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
        answer = wire.call(CREATE_TOPICS, 7, {"topics": [{
            "name": name, "num_partitions": partitions, "replication_factor": 3,
            "assignments": [], "configs": []}], "timeout_ms": 30_000})
    assert answer["topics"][0]["error_code"] == 0, answer
    wait_until(lambda: len(kafka_python_partitions(cluster, name)) == partitions,
               f"{name} in the brokers' metadata", timeout=30, interval=0.2)


def python_settings(cluster: LocalCluster, username: str = "admin",
                    password: str | None = None) -> dict[str, Any]:
    return {"bootstrap_servers": cluster.kafka_bootstrap_servers.split(","),
            "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": username,
            "sasl_plain_password": password or cluster.admin_token}


def kafka_python_partitions(cluster: LocalCluster, topic: str) -> set[int]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(**python_settings(cluster), request_timeout_ms=10_000)
    try:
        return set(consumer.partitions_for_topic(topic) or ())
    finally:
        consumer.close()


def keyed(count: int, tag: str) -> list[tuple[bytes, bytes]]:
    return [(f"key-{i % KEYS}".encode(), f"{tag}-{i}".encode()) for i in range(count)]


# ------------------------------------------------------------------ producers


def librdkafka_settings(cluster: LocalCluster) -> dict[str, Any]:
    """confluent-kafka's settings for the admin: the bootstrap servers and SASL/PLAIN."""
    return {"bootstrap.servers": cluster.kafka_bootstrap_servers,
            **cluster.kafka_client_settings(),
            **({"debug": os.environ["RDKAFKA_DEBUG"]} if os.environ.get("RDKAFKA_DEBUG")
               else {})}


def produce_confluent(cluster: LocalCluster, topic: str, records: list[tuple[bytes, bytes]],
                      **extra: Any) -> list[Any]:
    from confluent_kafka import Producer

    settings = {**librdkafka_settings(cluster), "acks": "all", "enable.idempotence": True,
                "linger.ms": 5, **extra}
    producer = Producer(settings)
    errors: list[Any] = []

    def report(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(error)

    for key, value in records:
        producer.produce(topic, value=value, key=key, on_delivery=report)
        producer.poll(0)
    left = producer.flush(60)
    assert left == 0, f"{left} records not delivered within 60 s"
    return errors


def produce_kafka_python(cluster: LocalCluster, topic: str,
                         records: list[tuple[bytes, bytes]], acks: Any = "all",
                         **extra: Any) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(**python_settings(cluster), acks=acks, linger_ms=5,
                             request_timeout_ms=30_000, **extra)
    try:
        futures = [producer.send(topic, key=key, value=value) for key, value in records]
        producer.flush(timeout=60)
        if acks != 0:
            for future in futures:
                future.get(timeout=30)
    finally:
        producer.close(timeout=10)


def produce_kcat(cluster: LocalCluster, topic: str, records: list[tuple[bytes, bytes]],
                 *options: str) -> None:
    """``options``: more of kcat's own arguments (``-z gzip``, say)."""
    lines = "".join(f"{k.decode()}\t{v.decode()}\n" for k, v in records)
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, "-P", "-t", topic, "-K", "\t",
               *options, "-X", "acks=all"]
    for key, value in cluster.kafka_client_settings().items():
        command += ["-X", f"{key}={value}"]
    subprocess.run(command, input=lines, text=True, timeout=60, check=True,
                   capture_output=True)


def produce_aiokafka(cluster: LocalCluster, topic: str,
                     records: list[tuple[bytes, bytes]], **extra: Any) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(**python_settings(cluster), acks="all",
                                    enable_idempotence=True, **extra)
        await producer.start()
        try:
            sent = [await producer.send(topic, key=key, value=value)
                    for key, value in records]
            await asyncio.wait_for(asyncio.gather(*sent), 60)
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(run(), 120))


# ------------------------------------------------------------------ consumers
# Each returns partition -> [(offset, key, value)] read from the beginning to the end.


Read = dict[int, list[tuple[int, bytes, bytes]]]


def consume_kcat(cluster: LocalCluster, topic: str) -> Read:
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, "-C", "-t", topic, "-o",
               "beginning", "-e", "-q", "-f", "%p\t%o\t%k\t%s\n"]
    for key, value in cluster.kafka_client_settings().items():
        command += ["-X", f"{key}={value}"]
    done = subprocess.run(command, capture_output=True, timeout=120, check=True)
    read: Read = defaultdict(list)
    for line in done.stdout.decode().splitlines():
        partition, offset, key, value = line.split("\t")
        read[int(partition)].append((int(offset), key.encode(), value.encode()))
    return read


def consume_kafka_python(cluster: LocalCluster, topic: str, expected: int) -> Read:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(**python_settings(cluster), auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5_000)
    read: Read = defaultdict(list)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 120
        while sum(map(len, read.values())) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1_000).values():
                for record in batch:
                    read[record.partition].append((record.offset, record.key, record.value))
    finally:
        consumer.close()
    return read


def consume_confluent(cluster: LocalCluster, topic: str, expected: int) -> Read:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**librdkafka_settings(cluster),
                         "group.id": f"unused-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    read: Read = defaultdict(list)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 120
        while sum(map(len, read.values())) < expected and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            read[partition].append((offset, message.key() or b"", message.value() or b""))
    finally:
        consumer.close()
    return read


def consume_aiokafka(cluster: LocalCluster, topic: str, expected: int) -> Read:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    read: Read = defaultdict(list)

    async def run() -> None:
        consumer = AIOKafkaConsumer(**python_settings(cluster), auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            while sum(map(len, read.values())) < expected:
                for batch in (await consumer.getmany(timeout_ms=1_000)).values():
                    for record in batch:
                        read[record.partition].append((record.offset, record.key,
                                                       record.value))
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(run(), 120))
    return read


def assert_all_in_order(read: Read, sent: list[tuple[bytes, bytes]], who: str) -> None:
    """Every sent record read once; offsets contiguous from 0 per partition; per key, the
    values in the order they were sent."""
    total = sum(map(len, read.values()))
    assert total == len(sent), f"{who}: read {total} records, {len(sent)} were sent"
    by_key: dict[bytes, list[bytes]] = defaultdict(list)
    for partition, records in read.items():
        offsets = [offset for offset, _, _ in records]
        assert offsets == list(range(len(records))), f"{who}: partition {partition} offsets"
        for _, key, value in records:
            by_key[key].append(value)
    expected: dict[bytes, list[bytes]] = defaultdict(list)
    for key, value in sent:
        expected[key].append(value)
    assert by_key == expected, f"{who}: per-key order differs"
