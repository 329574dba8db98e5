"""Stock Kafka clients set up against a local chunkraft cluster, for the tests that prove the
Kafka protocol with them: their settings (SASL/PLAIN as the cluster's admin), a topic created
over the wire and awaited in the brokers' metadata, keyed records, and one acks=all producer
per client (kcat, kafka-python, confluent-kafka, aiokafka). Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from typing import Any

from chunkraft.deploy.local_cluster import LocalCluster
from tests.support.brokers import wait_until
from tests.support.kafka_wire import KafkaWire

__all__ = ["KEYS", "PARTITIONS", "create_topic", "kafka_python_partitions", "keyed",
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
                         records: list[tuple[bytes, bytes]], acks: Any = "all") -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(**python_settings(cluster), acks=acks, linger_ms=5,
                             request_timeout_ms=30_000)
    try:
        futures = [producer.send(topic, key=key, value=value) for key, value in records]
        producer.flush(timeout=60)
        if acks != 0:
            for future in futures:
                future.get(timeout=30)
    finally:
        producer.close(timeout=10)


def produce_kcat(cluster: LocalCluster, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    lines = "".join(f"{k.decode()}\t{v.decode()}\n" for k, v in records)
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, "-P", "-t", topic, "-K", "\t",
               "-X", "acks=all"]
    for key, value in cluster.kafka_client_settings().items():
        command += ["-X", f"{key}={value}"]
    subprocess.run(command, input=lines, text=True, timeout=60, check=True,
                   capture_output=True)


def produce_aiokafka(cluster: LocalCluster, topic: str,
                     records: list[tuple[bytes, bytes]]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(**python_settings(cluster), acks="all",
                                    enable_idempotence=True)
        await producer.start()
        try:
            sent = [await producer.send(topic, key=key, value=value)
                    for key, value in records]
            await asyncio.wait_for(asyncio.gather(*sent), 60)
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(run(), 120))
