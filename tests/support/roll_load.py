"""Client load through a rolling restart, and the count after it.

:class:`RollLoad` runs, against a LocalCluster with brokers, until :meth:`RollLoad.stop`:

- ``producers`` idempotent acks=all :class:`~chunkraft.client.producer.Producer` threads, each
  sending ``rate`` records a second, round-robin over ``topics``, every value unique
  (``p<k>-<n>``) and keyed by it. A record is *acknowledged* when its future succeeded and
  *failed* when it reported an error after the producer's own retries (within
  ``delivery_timeout_ms``); a ``send`` that raised counts as failed too;
- ``consumers`` :class:`~chunkraft.client.consumer.Consumer` threads of one group, subscribed
  to ``topics`` with auto commit; what they read is counted (an error they raise is counted
  and the consumer made anew);
- one admin thread looping through :class:`~chunkraft.client.admin.AdminClient`: create a topic
  (``admin-<n>``, 1 partition, RF 2 so that it can be placed while one broker is out, as
  Kafka needs as many unfenced brokers as the replication factor), add a partition to it,
  describe it (the topic and its partitions); each call is one op, an AdminError a failed one.

:func:`drain` then reads every partition of ``topics`` from its first offset to its end with a
fresh consumer (no group) and counts, per acknowledged value, how often it was read: *lost* if
never, *duplicated* if more than once. Every loop is bounded by time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chunkraft.client.admin import AdminClient, AdminError
from chunkraft.client.command_config import CommandConfig
from chunkraft.client.consumer import Consumer
from chunkraft.client.producer import Producer
from chunkraft.local.local_cluster import LocalCluster

__all__ = ["DrainResult", "RollLoad", "RollLoadResult", "drain"]

EXAMPLES = 10
"""Errors or values kept as examples per kind."""


@dataclass
class RollLoadResult:
    """What the clients of one :class:`RollLoad` saw."""

    acked: set[bytes] = field(default_factory=set)
    failed: list[str] = field(default_factory=list)
    """One line per failed record: its value and the error."""
    admin_ops: int = 0
    admin_failed: list[str] = field(default_factory=list)
    group_consumed: int = 0
    group_errors: list[str] = field(default_factory=list)


@dataclass
class DrainResult:
    """The count of :func:`drain`."""

    read: int
    lost: list[bytes]
    duplicated: dict[bytes, int]
    seconds: float

    def as_json(self) -> dict[str, Any]:
        return {"read": self.read, "lost": len(self.lost), "duplicated": len(self.duplicated),
                "lost_examples": [v.decode() for v in self.lost[:EXAMPLES]],
                "duplicated_examples": {v.decode(): n for v, n in
                                        list(self.duplicated.items())[:EXAMPLES]},
                "seconds": round(self.seconds, 2)}


class RollLoad:
    """The load of the module docstring. Start and stop from one thread."""

    def __init__(self, cluster: LocalCluster, topics: list[str], *, producers: int = 1,
                 rate: float = 50.0, consumers: int = 1, group: str = "roll-group",
                 admin_pause: float = 0.2, delivery_timeout_ms: int = 120_000) -> None:
        self.cluster = cluster
        self.topics = topics
        self.producers = producers
        self.rate = rate
        self.consumers = consumers
        self.group = group
        self.admin_pause = admin_pause
        self.delivery_timeout_ms = delivery_timeout_ms
        self.urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
        self.result = RollLoadResult()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        targets = [(f"producer-{k}", self._produce, (k,)) for k in range(self.producers)]
        targets += [(f"consumer-{k}", self._consume, (k,)) for k in range(self.consumers)]
        targets.append(("admin", self._admin, ()))
        for name, target, args in targets:
            thread = threading.Thread(target=target, args=args, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 180.0) -> RollLoadResult:
        """Stops every thread (a producer flushes first: every record it sent is then
        acknowledged or failed) and waits for them."""
        self._stop.set()
        ends = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, ends - time.monotonic()))
        alive = [thread.name for thread in self._threads if thread.is_alive()]
        if alive:
            raise TimeoutError(f"load threads {alive} did not stop within {timeout} s")
        return self.result

    def _produce(self, index: int) -> None:
        producer = Producer(self.urls, token=self.cluster.admin_token,
                            verify=self.cluster.verify, acks=-1, enable_idempotence=True,
                            linger_ms=5, delivery_timeout_ms=self.delivery_timeout_ms,
                            client_id=f"roll-producer-{index}")
        futures = []
        try:
            started = time.monotonic()
            sent = 0
            while not self._stop.is_set():
                pause = started + sent / self.rate - time.monotonic()
                if pause > 0:
                    time.sleep(min(pause, 0.5))
                    continue
                value = f"p{index}-{sent}".encode()
                topic = self.topics[sent % len(self.topics)]
                sent += 1
                try:
                    futures.append((value, producer.send(topic, value, key=value)))
                except Exception as error:  # a send refused at once is a failed record
                    with self._lock:
                        self.result.failed.append(f"{value.decode()}: send raised {error!r}")
            producer.flush(timeout=self.delivery_timeout_ms / 1000 + 30)
        finally:
            producer.close(timeout=30)
        for value, future in futures:
            error = future.exception(timeout=1) if future.done() else TimeoutError("not done")
            with self._lock:
                if error is None:
                    self.result.acked.add(value)
                else:
                    self.result.failed.append(f"{value.decode()}: {error!r}")

    def _consume(self, index: int) -> None:
        consumer: Consumer | None = None
        while not self._stop.is_set():
            try:
                if consumer is None:
                    consumer = Consumer(self.urls, group_id=self.group,
                                        client_id=f"roll-consumer-{index}",
                                        token=self.cluster.admin_token,
                                        verify=self.cluster.verify, enable_auto_commit=True,
                                        auto_commit_interval_ms=1000)
                    consumer.subscribe(self.topics)
                records = consumer.poll(500)
                with self._lock:
                    self.result.group_consumed += len(records)
            except Exception as error:
                with self._lock:
                    self.result.group_errors.append(f"consumer {index}: {error!r}")
                if consumer is not None:
                    _close_quietly(consumer)
                consumer = None
                time.sleep(0.5)
        if consumer is not None:
            _close_quietly(consumer)

    def _admin(self) -> None:
        config = CommandConfig(token=self.cluster.admin_token)
        with AdminClient(self.cluster.urls, config, retry_for=60.0) as admin:
            number = 0
            while not self._stop.is_set():
                name = f"admin-{number}"
                number += 1
                calls = [lambda n=name: admin.create_topic(n, 1, 2),
                         lambda n=name: admin.alter_topic_partitions(n, 2),
                         lambda n=name: (admin.get_topic(n), admin.list_partitions(n))]
                for call in calls:
                    try:
                        call()
                    except AdminError as error:
                        with self._lock:
                            self.result.admin_failed.append(f"{name}: {error}")
                        break
                    finally:
                        with self._lock:
                            self.result.admin_ops += 1
                self._stop.wait(self.admin_pause)


def _close_quietly(consumer: Consumer) -> None:
    # leaving a group that is rebalancing may fail: what was read is what counts
    with contextlib.suppress(Exception):
        consumer.close()


def drain(cluster: LocalCluster, topics: list[str], acked: set[bytes],
          timeout: float = 120.0) -> DrainResult:
    """Reads every partition of ``topics`` from its start to its end (see the module doc)."""
    urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
    started = time.monotonic()
    counts: Counter[bytes] = Counter()
    read = 0
    with Consumer(urls, client_id="roll-drain", token=cluster.admin_token,
                  verify=cluster.verify, max_poll_records=5000) as consumer:
        partitions = [(t, p) for t in topics for p in consumer.partitions_for(t)]
        consumer.assign(partitions)
        consumer.seek_to_end()
        ends = {tp: consumer.position(tp) for tp in partitions}
        consumer.seek_to_beginning()
        deadline = started + timeout
        while time.monotonic() < deadline and any(
                consumer.position(tp) < end for tp, end in ends.items()):
            for record in consumer.poll(500):
                read += 1
                if record.value is not None:
                    counts[record.value] += 1
        short = {f"{t}-{p}": (consumer.position((t, p)), end) for (t, p), end in ends.items()
                 if consumer.position((t, p)) < end}
        if short:
            raise TimeoutError(f"the drain did not reach the end of {short} (position, end) "
                               f"within {timeout} s")
    lost = sorted(value for value in acked if counts[value] == 0)
    duplicated = {value: n for value, n in counts.items() if n > 1}
    return DrainResult(read, lost, duplicated, time.monotonic() - started)
