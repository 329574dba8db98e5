"""Stock Kafka producers that keep producing while a test acts on the cluster, and stock
consumers that read partitions from their first offset to a known last record.

A :class:`Feed` runs one stock client's idempotent acks=all producer on a thread: it hands the
records to the client a slice at a time, a short pause after each, so that a cut, a move or a
kill the test does meanwhile falls among them; ``join()`` waits for every acknowledgement and
returns each record's acknowledged (partition, offset), in send order, where the client
reports it (kcat reports nothing: its exit status says whether every record was delivered).
Producers: kafka-python, confluent-kafka, aiokafka, kcat (a process fed through its standard
input) and kafkajs (tests/kafka_clients/kafkajs/group.js's producer).

The readers (:data:`READERS`: kafka-python, confluent-kafka, aiokafka, kcat; kafkajs reads
in a new group of one, having no assign()) assign the
partitions asked, start at the beginning (ListOffsets earliest) with offset resets turned into
errors (``none`` / ``error``), at either isolation level, and read each partition until the
record with the value given as its last has arrived. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from chunkraft.local.local_cluster import LocalCluster
from tests.support.kafka_group_members import KafkajsGroup
from tests.support.kafka_stock import librdkafka_settings, python_settings

__all__ = ["PRODUCERS", "READERS", "Acked", "Feed", "Read", "Records"]

Records = list[tuple[bytes, bytes]]
"""(key, value) in send order."""
Acked = list[tuple[int, int]]
"""(partition, offset) of each record, in send order, as the producer's client reported it."""
Read = dict[tuple[str, int], list[tuple[int, bytes, bytes]]]
"""(topic, partition) -> (offset, key, value) in the order the consumer returned them."""

SLICE = 10
PAUSE_S = 0.05
DELIVERY_TIMEOUT_S = 90.0
READ_TIMEOUT_S = 60.0


def _slices(records: Records) -> Iterator[Records]:
    for first in range(0, len(records), SLICE):
        yield records[first:first + SLICE]


# ------------------------------------------------------------------ producers
# Each runs on the Feed's thread; after handing over each slice it calls ``paced(count)``
# (which counts the records and returns how long to pause) and pauses that long. It returns
# the acknowledged (partition, offset) per record (an empty list for kcat and kafkajs) and
# raises on any delivery failure.


def _kafka_python(cluster: LocalCluster, topic: str, records: Records,
                  paced: Callable[[int], float]) -> Acked:
    from kafka import KafkaProducer

    producer = KafkaProducer(**python_settings(cluster), acks="all", enable_idempotence=True,
                             linger_ms=5, request_timeout_ms=30_000)
    try:
        futures = []
        for part in _slices(records):
            futures += [producer.send(topic, key=key, value=value) for key, value in part]
            time.sleep(paced(len(part)))
        producer.flush(timeout=DELIVERY_TIMEOUT_S)
        acked = [future.get(timeout=10) for future in futures]
        return [(metadata.partition, metadata.offset) for metadata in acked]
    finally:
        producer.close(timeout=10)


def _confluent(cluster: LocalCluster, topic: str, records: Records,
               paced: Callable[[int], float]) -> Acked:
    from confluent_kafka import Producer

    producer = Producer({**librdkafka_settings(cluster), "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    acked: dict[int, tuple[int, int]] = {}
    errors: list[Any] = []

    def report(index: int) -> Callable[[Any, Any], None]:
        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                errors.append(error)
            else:
                acked[index] = (message.partition(), message.offset())
        return delivered

    index = 0
    for part in _slices(records):
        for key, value in part:
            producer.produce(topic, value=value, key=key, on_delivery=report(index))
            index += 1
        producer.poll(0)
        time.sleep(paced(len(part)))
    left = producer.flush(DELIVERY_TIMEOUT_S)
    assert left == 0 and not errors, f"confluent-kafka: {left} undelivered, errors {errors[:3]}"
    return [acked[i] for i in range(len(records))]


def _aiokafka(cluster: LocalCluster, topic: str, records: Records,
              paced: Callable[[int], float]) -> Acked:
    from aiokafka import AIOKafkaProducer

    async def run() -> Acked:
        producer = AIOKafkaProducer(**python_settings(cluster), acks="all",
                                    enable_idempotence=True, linger_ms=5)
        await producer.start()
        try:
            futures = []
            for part in _slices(records):
                futures += [await producer.send(topic, key=key, value=value)
                            for key, value in part]
                await asyncio.sleep(paced(len(part)))  # the client's sender runs meanwhile
            acked = await asyncio.wait_for(asyncio.gather(*futures), DELIVERY_TIMEOUT_S)
            return [(metadata.partition, metadata.offset) for metadata in acked]
        finally:
            await producer.stop()

    return asyncio.run(asyncio.wait_for(run(), DELIVERY_TIMEOUT_S + 30))


def _kcat(cluster: LocalCluster, topic: str, records: Records,
          paced: Callable[[int], float]) -> Acked:
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, "-P", "-t", topic, "-K", "\t",
               "-X", "acks=all", "-X", "enable.idempotence=true", "-X", "linger.ms=5"]
    for key, value in cluster.kafka_client_settings().items():
        command += ["-X", f"{key}={value}"]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None
    try:
        for part in _slices(records):
            process.stdin.write("".join(f"{k.decode()}\t{v.decode()}\n" for k, v in part))
            process.stdin.flush()
            time.sleep(paced(len(part)))
        _, err = process.communicate(timeout=DELIVERY_TIMEOUT_S)  # closes stdin: kcat ends
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    # kcat reports each failed delivery on stderr and exits non-zero.
    assert process.returncode == 0 and "ERROR" not in err, f"kcat: {process.returncode} {err}"
    return []


def _kafkajs(cluster: LocalCluster, topic: str, records: Records,
             paced: Callable[[int], float]) -> Acked:
    client = KafkajsGroup(cluster, topic, f"unused-{uuid.uuid4().hex[:8]}")
    try:
        for part in _slices(records):
            client.produce(part)  # answered once kafkajs has the slice acknowledged
            time.sleep(paced(len(part)))
    finally:
        client.close()
    return []


PRODUCERS: dict[str, Callable[[LocalCluster, str, Records, Callable[[int], float]], Acked]] = {
    "kafka-python": _kafka_python, "confluent-kafka": _confluent, "aiokafka": _aiokafka,
    "kcat": _kcat, "kafkajs": _kafkajs}


class Feed:
    """One stock producer producing ``records`` to ``topic`` on a thread (module docstring).
    ``handed`` counts the records given to the client so far."""

    def __init__(self, client: str, cluster: LocalCluster, topic: str, records: Records,
                 pause_s: float = PAUSE_S) -> None:
        self.client, self.topic, self.records = client, topic, records
        self.handed = 0
        self._pause_s = pause_s
        self._acked: Acked | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(cluster,),
                                        name=f"feed-{client}", daemon=True)
        self._thread.start()

    def _paced(self, count: int) -> float:
        self.handed += count
        return self._pause_s

    def _run(self, cluster: LocalCluster) -> None:
        try:
            self._acked = PRODUCERS[self.client](cluster, self.topic, self.records, self._paced)
        except BaseException as failure:  # re-raised by join() on the test's thread
            self._failure = failure

    def join(self, timeout: float = DELIVERY_TIMEOUT_S + 40) -> Acked:
        """Every record's acknowledgement (see the module docstring); raises the producer's
        failure, or AssertionError if it did not finish within ``timeout``."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.client} still producing after {timeout} s"
        if self._failure is not None:
            raise AssertionError(f"{self.client} producing to {self.topic}: "
                                 f"{self._failure!r}") from self._failure
        assert self._acked is not None
        return self._acked


# ------------------------------------------------------------------ readers
# Each takes {(topic, partition): value of its last record} and the isolation level.


class _Progress:
    def __init__(self, last: dict[tuple[str, int], bytes]) -> None:
        self.last = last
        self.read: Read = {tp: [] for tp in last}
        self.done: set[tuple[str, int]] = set()
        self.deadline = time.monotonic() + READ_TIMEOUT_S

    def add(self, topic: str, partition: int, offset: int, key: bytes | None,
            value: bytes | None) -> None:
        self.read[(topic, partition)].append((offset, key or b"", value or b""))
        if value == self.last[(topic, partition)]:
            self.done.add((topic, partition))

    def more(self) -> bool:
        return len(self.done) < len(self.last) and time.monotonic() < self.deadline


def _read_kafka_python(cluster: LocalCluster, last: dict[tuple[str, int], bytes],
                       isolation: str) -> Read:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(**python_settings(cluster), enable_auto_commit=False,
                             auto_offset_reset="none", isolation_level=isolation,
                             request_timeout_ms=30_000)
    progress = _Progress(last)
    try:
        partitions = [TopicPartition(topic, partition) for topic, partition in last]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        while progress.more():
            for batch in consumer.poll(timeout_ms=500).values():
                for r in batch:
                    progress.add(r.topic, r.partition, r.offset, r.key, r.value)
    finally:
        consumer.close()
    return progress.read


def _read_confluent(cluster: LocalCluster, last: dict[tuple[str, int], bytes],
                    isolation: str) -> Read:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({**librdkafka_settings(cluster),
                         "group.id": f"unused-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "error",
                         "isolation.level": isolation})
    progress = _Progress(last)
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)
                         for topic, partition in last])
        while progress.more():
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            progress.add(topic, partition, offset, message.key(), message.value())
    finally:
        consumer.close()
    return progress.read


def _read_aiokafka(cluster: LocalCluster, last: dict[tuple[str, int], bytes],
                   isolation: str) -> Read:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    progress = _Progress(last)

    async def run() -> None:
        consumer = AIOKafkaConsumer(**python_settings(cluster), enable_auto_commit=False,
                                    auto_offset_reset="none", isolation_level=isolation)
        await consumer.start()
        try:
            partitions = [TopicPartition(topic, partition) for topic, partition in last]
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            while progress.more():
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    for r in batch:
                        progress.add(r.topic, r.partition, r.offset, r.key, r.value)
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(run(), READ_TIMEOUT_S + 30))
    return progress.read


def _read_kcat(cluster: LocalCluster, last: dict[tuple[str, int], bytes],
               isolation: str) -> Read:
    read: Read = {}
    for topic, partition in last:  # one partition per run: -e ends at its end
        command = ["kcat", "-b", cluster.kafka_bootstrap_servers, "-C", "-t", topic, "-p",
                   str(partition), "-o", "beginning", "-e", "-q", "-f", "%o\t%k\t%s\n",
                   "-X", "auto.offset.reset=error", "-X", f"isolation.level={isolation}"]
        for key, value in cluster.kafka_client_settings().items():
            command += ["-X", f"{key}={value}"]
        done = subprocess.run(command, capture_output=True, timeout=READ_TIMEOUT_S,
                              check=True)
        read[(topic, partition)] = [
            (int(offset), key.encode(), value.encode())
            for offset, key, value in (line.split("\t")
                                       for line in done.stdout.decode().splitlines())]
    return read


def _read_kafkajs(cluster: LocalCluster, last: dict[tuple[str, int], bytes],
                  isolation: str) -> Read:
    """kafkajs has no assign(): a group of one member per topic, new (so from the earliest
    offset: its ``fromBeginning``), reading until each partition's last record."""
    progress = _Progress(last)
    for topic in sorted({topic for topic, _ in last}):
        group = KafkajsGroup(cluster, topic, f"reader-{uuid.uuid4().hex[:8]}",
                             read_uncommitted=isolation == "read_uncommitted",
                             live_brokers_only=True)
        try:
            group.start("reader")
            wanted = {tp for tp in last if tp[0] == topic}
            while not wanted <= progress.done and progress.more():
                for _, partition, offset, key, value in group.drain():
                    progress.add(topic, partition, offset, key, value)
                time.sleep(0.2)
        finally:
            group.close()
    return progress.read


READERS: dict[str, Callable[[LocalCluster, dict[tuple[str, int], bytes], str], Read]] = {
    "kafka-python": _read_kafka_python, "confluent-kafka": _read_confluent,
    "aiokafka": _read_aiokafka, "kcat": _read_kcat, "kafkajs": _read_kafkajs}
