"""Consumer-group members of each stock Kafka client, started and stopped one by one, for the
tests of Kafka's group protocol on chunkraft's brokers.

A :class:`GroupClient` produces keyed records with its own client and runs named members of
one group on one topic: ``start(name)`` subscribes a new member, ``stop(name)`` closes it (a
clean close: it commits and leaves the group), ``drain()`` returns every record the members
saw since the last call, as :data:`Seen` tuples. Members commit automatically every 500 ms
and on close; sessions are 6 s with heartbeats every 500 ms, so a rebalance takes about a
second. Members run in threads (kafka-python, confluent-kafka, aiokafka), as kcat processes
(``-G``), or inside one node process (kafkajs, tests/kafka_clients/kafkajs/group.js). Every
wait is bounded; ``close()`` stops whatever is still running, by handle or PID.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from chunkraft.local.local_cluster import LocalCluster
from tests.support.kafka_stock import (
    librdkafka_settings,
    produce_aiokafka,
    produce_confluent,
    produce_kafka_python,
    produce_kcat,
    python_settings,
)
from tests.support.kafkajs import KAFKAJS_DIR

__all__ = ["CLIENTS", "GroupClient", "Seen", "group_client"]

Seen = tuple[str, int, int, bytes, bytes]
"""(member, partition, offset, key, value) of one record a member received."""

SESSION_MS = 6_000
HEARTBEAT_MS = 500
COMMIT_MS = 500
STOP_TIMEOUT_S = 30.0


class GroupClient:
    """One stock client's producer and group members (module docstring)."""

    def __init__(self, cluster: LocalCluster, topic: str, group: str) -> None:
        self.cluster = cluster
        self.topic = topic
        self.group = group
        self._seen: list[Seen] = []
        self._lock = threading.Lock()

    def produce(self, records: list[tuple[bytes, bytes]]) -> None:
        raise NotImplementedError

    def start(self, member: str) -> None:
        raise NotImplementedError

    def stop(self, member: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def saw(self, record: Seen) -> None:
        with self._lock:
            self._seen.append(record)

    def drain(self) -> list[Seen]:
        with self._lock:
            out, self._seen = self._seen, []
        return out


class _ThreadedClient(GroupClient):
    """Members as threads, each running ``member_loop(name, stopping)`` until told to stop."""

    def __init__(self, cluster: LocalCluster, topic: str, group: str) -> None:
        super().__init__(cluster, topic, group)
        self._members: dict[str, tuple[threading.Thread, threading.Event]] = {}
        self.failures: list[BaseException] = []

    def member_loop(self, name: str, stopping: threading.Event) -> None:
        raise NotImplementedError

    def start(self, member: str) -> None:
        stopping = threading.Event()

        def run() -> None:
            try:
                self.member_loop(member, stopping)
            except BaseException as failure:  # reported by stop()
                self.failures.append(failure)

        thread = threading.Thread(target=run, name=f"member-{member}", daemon=True)
        self._members[member] = (thread, stopping)
        thread.start()

    def stop(self, member: str) -> None:
        thread, stopping = self._members.pop(member)
        stopping.set()
        thread.join(STOP_TIMEOUT_S)
        assert not thread.is_alive(), f"member {member} did not close within {STOP_TIMEOUT_S} s"
        assert not self.failures, f"a member failed: {self.failures!r}"

    def close(self) -> None:
        for member in list(self._members):
            self.stop(member)


class KafkaPythonGroup(_ThreadedClient):
    def produce(self, records: list[tuple[bytes, bytes]]) -> None:
        produce_kafka_python(self.cluster, self.topic, records)

    def member_loop(self, name: str, stopping: threading.Event) -> None:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(
            self.topic, group_id=self.group, auto_offset_reset="earliest",
            enable_auto_commit=True, auto_commit_interval_ms=COMMIT_MS,
            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
            **python_settings(self.cluster))
        try:
            while not stopping.is_set():
                for batch in consumer.poll(timeout_ms=200).values():
                    for record in batch:
                        self.saw((name, record.partition, record.offset, record.key,
                                  record.value))
        finally:
            consumer.close()


class ConfluentGroup(_ThreadedClient):
    def produce(self, records: list[tuple[bytes, bytes]]) -> None:
        errors = produce_confluent(self.cluster, self.topic, records)
        assert not errors, errors

    def member_loop(self, name: str, stopping: threading.Event) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer({**librdkafka_settings(self.cluster), "group.id": self.group,
                             "auto.offset.reset": "earliest", "enable.auto.commit": True,
                             "auto.commit.interval.ms": COMMIT_MS,
                             "session.timeout.ms": SESSION_MS,
                             "heartbeat.interval.ms": HEARTBEAT_MS})
        try:
            consumer.subscribe([self.topic])
            while not stopping.is_set():
                message = consumer.poll(0.2)
                if message is None:
                    continue
                assert message.error() is None, message.error()
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                self.saw((name, partition, offset, message.key() or b"",
                          message.value() or b""))
        finally:
            consumer.close()


class AiokafkaGroup(_ThreadedClient):
    def produce(self, records: list[tuple[bytes, bytes]]) -> None:
        produce_aiokafka(self.cluster, self.topic, records)

    def member_loop(self, name: str, stopping: threading.Event) -> None:
        from aiokafka import AIOKafkaConsumer

        async def run() -> None:
            consumer = AIOKafkaConsumer(
                self.topic, group_id=self.group, auto_offset_reset="earliest",
                enable_auto_commit=True, auto_commit_interval_ms=COMMIT_MS,
                session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                **python_settings(self.cluster))
            await consumer.start()
            try:
                while not stopping.is_set():
                    for batch in (await consumer.getmany(timeout_ms=200)).values():
                        for record in batch:
                            self.saw((name, record.partition, record.offset,
                                      record.key or b"", record.value or b""))
            finally:
                await consumer.stop()

        asyncio.run(run())


class KcatGroup(GroupClient):
    """Members as ``kcat -G`` processes (librdkafka's balanced consumer); stop is SIGTERM,
    on which kcat closes its consumer (commit, leave)."""

    def __init__(self, cluster: LocalCluster, topic: str, group: str) -> None:
        super().__init__(cluster, topic, group)
        self._members: dict[str, tuple[subprocess.Popen[bytes], threading.Thread]] = {}

    def produce(self, records: list[tuple[bytes, bytes]]) -> None:
        produce_kcat(self.cluster, self.topic, records)

    def start(self, member: str) -> None:
        command = ["kcat", "-b", self.cluster.kafka_bootstrap_servers, "-G", self.group,
                   self.topic, "-q", "-u", "-f", "%p\t%o\t%k\t%s\n",
                   "-X", "auto.offset.reset=earliest", "-X", f"session.timeout.ms={SESSION_MS}",
                   "-X", f"heartbeat.interval.ms={HEARTBEAT_MS}",
                   "-X", f"auto.commit.interval.ms={COMMIT_MS}"]
        for key, value in self.cluster.kafka_client_settings().items():
            command += ["-X", f"{key}={value}"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                partition, offset, key, value = line.decode().rstrip("\n").split("\t")
                self.saw((member, int(partition), int(offset), key.encode(), value.encode()))

        reader = threading.Thread(target=read, name=f"kcat-{member}", daemon=True)
        reader.start()
        self._members[member] = (process, reader)

    def stop(self, member: str) -> None:
        process, reader = self._members.pop(member)
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
            raise AssertionError(f"kcat member {member} did not close within "
                                 f"{STOP_TIMEOUT_S} s") from None
        finally:
            reader.join(5)
            if process.stdout is not None:
                process.stdout.close()

    def close(self) -> None:
        for member in list(self._members):
            self.stop(member)


class KafkajsGroup(GroupClient):
    """Members inside one node process running tests/kafka_clients/kafkajs/group.js."""

    def __init__(self, cluster: LocalCluster, topic: str, group: str, *,
                 read_uncommitted: bool = False, live_brokers_only: bool = False) -> None:
        super().__init__(cluster, topic, group)
        self._process = subprocess.Popen(["node", "group.js"], cwd=KAFKAJS_DIR,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
        self._answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, name="kafkajs-group", daemon=True).start()
        settings = cluster.kafka_client_settings()
        # kafkajs keeps retrying a seed broker that refuses connections (its backoff grows to
        # minutes) instead of trying the next: a reader after a kill seeds with live ones.
        brokers = ([f"127.0.0.1:{b.kafka_port}" for b in cluster.broker_nodes.values()
                    if b.running and b.kafka_port] if live_brokers_only
                   else cluster.kafka_bootstrap_servers.split(","))
        self._call({"op": "connect", "brokers": brokers,
                    "sasl": {"mechanism": "plain", "username": settings["sasl.username"],
                             "password": settings["sasl.password"]},
                    "topic": topic, "group": group, "session_timeout_ms": SESSION_MS,
                    "heartbeat_interval_ms": HEARTBEAT_MS,
                    "read_uncommitted": read_uncommitted})

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._answers.put(line)

    def _call(self, command: dict[str, Any], timeout: float = 60.0) -> Any:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        try:
            answer = json.loads(self._answers.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"kafkajs {command['op']} gave no answer in {timeout} s"
                                 ) from None
        assert answer["ok"], f"kafkajs {command['op']}: {answer['error']}"
        return answer["result"]

    def produce(self, records: list[tuple[bytes, bytes]]) -> None:
        self._call({"op": "produce",
                    "records": [[k.decode(), v.decode()] for k, v in records]}, timeout=120)

    def start(self, member: str) -> None:
        self._call({"op": "start", "member": member})

    def stop(self, member: str) -> None:
        self._call({"op": "stop", "member": member})

    def drain(self) -> list[Seen]:
        for member, partition, offset, key, value in self._call({"op": "seen"}):
            self.saw((member, partition, offset, (key or "").encode(), value.encode()))
        return super().drain()

    def close(self) -> None:
        try:
            if self._process.poll() is None:
                self._call({"op": "quit"}, timeout=30)
        finally:
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(5)
            for pipe in (self._process.stdin, self._process.stdout):
                if pipe is not None:
                    pipe.close()


CLIENTS: dict[str, Callable[[LocalCluster, str, str], GroupClient]] = {
    "kafka-python": KafkaPythonGroup, "confluent-kafka": ConfluentGroup,
    "aiokafka": AiokafkaGroup, "kcat": KcatGroup, "kafkajs": KafkajsGroup}


def group_client(name: str, cluster: LocalCluster, topic: str, group: str) -> GroupClient:
    """The :class:`GroupClient` of stock client ``name`` (a key of :data:`CLIENTS`)."""
    return CLIENTS[name](cluster, topic, group)
