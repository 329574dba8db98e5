"""The story ``chunkraft demo`` tells: KIP-1114's test plan with the real Producer and Consumer.

Three acts on a running cluster (3 controllers, broker agents 0, 1 and 2), each on a topic of
its own with one partition on broker 0 only, exactly as the KIP's test plan writes them:

1. CreateChunkTest: 10 records; the active chunk cut onto broker 1; 10 more; a new consumer
   (earliest) reads the first 10 from broker 0 in one poll and the next 10 from broker 1 in the
   next.
2. CreateChunkTest, transactional: 10 records from a plain producer; a transaction sends 10
   more and stays open while the chunk is cut onto broker 1; it commits; a read_committed
   consumer reads 10 from broker 0, then the transaction's 10 from broker 1.
3. AlterChunkAssignmentsTest: 10 records, a chunk on broker 1, 10 more; the first chunk moved
   to broker 2; a new consumer reads 10 from broker 2, then 10 from broker 1.

Topic and chunk changes go through the admin REST API (:class:`AdminClient`), records through
:class:`~chunkraft.client.producer.Producer` and :class:`~chunkraft.client.consumer.Consumer`
against the brokers' URLs only. The story runs on a :class:`LocalCluster`, or on any running
cluster named by its URLs (:class:`DemoTarget`: controllers and brokers on hosts of their own,
as in ``tests/integration/test_multi_host.py``). Every poll prints which broker served its
records. Each wait is bounded (:data:`WAIT_S`); a step that does not happen raises
:class:`DemoError`.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.client.consumer import Consumer
from chunkraft.client.producer import Producer
from chunkraft.local.local_cluster import LocalCluster

__all__ = ["BROKERS", "WAIT_S", "DemoError", "DemoTarget", "ServedRange", "run_client_demo",
           "served_ranges"]

WAIT_S = 60.0
"""The longest any step waits (a leader change, a chunk copy, a poll for records)."""

BROKERS = (0, 1, 2)
POLL_MS = 1000


class DemoError(RuntimeError):
    """A step of the story did not happen within :data:`WAIT_S`."""


@dataclass(frozen=True)
class DemoTarget:
    """A running cluster as the story reaches it: the controllers' URLs, brokers 0, 1 and 2's
    URLs, the admin's token and how to verify https peers. Immutable."""

    controller_urls: Sequence[str]
    broker_urls: Mapping[int, str]
    token: str | None
    verify: ssl.SSLContext | bool = True

    @classmethod
    def of_local(cls, cluster: LocalCluster) -> DemoTarget:
        """``cluster``'s URLs and admin token; DemoError unless brokers 0..2 run."""
        missing = [b for b in BROKERS
                   if b not in cluster.broker_nodes or not cluster.broker_nodes[b].running]
        if missing:
            raise DemoError(f"the demo needs broker agents 0, 1 and 2 running; not: {missing}")
        return cls(list(cluster.urls), {b: cluster.broker_url(b) for b in BROKERS},
                   cluster.admin_token, cluster.verify)


@dataclass(frozen=True)
class ServedRange:
    """Consecutive records of one poll that one broker served."""

    broker_id: int
    first: int
    last: int
    count: int


def served_ranges(records: list[Any]) -> list[ServedRange]:
    """A poll's records grouped by the broker that served them, in order."""
    ranges: list[ServedRange] = []
    for record in records:
        if ranges and ranges[-1].broker_id == record.broker_id:
            last = ranges[-1]
            ranges[-1] = ServedRange(last.broker_id, last.first, record.offset, last.count + 1)
        else:
            ranges.append(ServedRange(record.broker_id, record.offset, record.offset, 1))
    return ranges


class _Story:
    """The cluster's clients and the printing of steps."""

    def __init__(self, target: DemoTarget, admin: AdminClient, out: TextIO) -> None:
        self.admin = admin
        self.out = out
        self.urls = [target.broker_urls[b] for b in BROKERS]
        self.token = target.token
        self.verify = target.verify

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def step(self, title: str) -> None:
        self.say(f"\n== {title}")

    def fresh_topic(self, stem: str) -> str:
        """``stem``, or ``stem-2``, ``stem-3``... on a cluster that ran the demo before."""
        names = {str(t["topic_name"]) for t in self.admin.list_topics()}
        return next(n for n in (stem, *(f"{stem}-{i}" for i in range(2, 10_000)))
                    if n not in names)

    @contextmanager
    def producer(self, **options: Any) -> Iterator[Producer]:
        producer = Producer(self.urls, token=self.token, verify=self.verify, **options)
        try:
            yield producer
        finally:
            producer.close()

    @contextmanager
    def consumer(self, client_id: str, **options: Any) -> Iterator[Consumer]:
        consumer = Consumer(self.urls, client_id=client_id, token=self.token,
                            verify=self.verify, auto_offset_reset="earliest", **options)
        try:
            yield consumer
        finally:
            consumer.close()

    def create_topic(self, stem: str) -> str:
        topic = self.fresh_topic(stem)
        self.admin.create_topic(topic, None, None, [[0]])
        self.say(f"created topic {topic}: 1 partition, replicas [0]")
        return topic

    def send(self, producer: Producer, topic: str, prefix: str, *, flush: bool = True
             ) -> list[Any]:
        """10 keyed records; their futures (settled when ``flush``)."""
        futures = [producer.send(topic, f"{prefix} record {i}".encode(),
                                 key=f"{prefix}-{i}".encode()) for i in range(10)]
        if flush:
            producer.flush()
            offsets = [f.result(timeout=WAIT_S).offset for f in futures]
            self.say(f"produced offsets {offsets[0]}..{offsets[-1]} of {topic}-0 (acks=all, "
                     f"idempotent)")
        return futures

    def cut(self, topic: str, broker_id: int) -> None:
        (result,) = self.admin.create_chunks(
            [{"topic": topic, "partition": 0, "replicas": [broker_id]}])
        if result["error_code"] != 0:
            raise DemoError(f"the cut of {topic}-0 failed: {result}")
        self.show_chunks(topic)

    def move(self, topic: str, start_offset: int, broker_id: int) -> None:
        (result,) = self.admin.alter_chunk_assignments([{
            "topic": topic, "partition": 0, "start_offset": start_offset,
            "replicas": [broker_id]}])
        if result["error_code"] != 0:
            raise DemoError(f"the move of {topic}-0's chunk {start_offset} failed: {result}")
        self._wait(lambda: self.admin.get_chunk(topic, 0, start_offset)["replica_ids"]
                   == [broker_id], f"the chunk {start_offset} of {topic}-0 to reach "
                   f"broker {broker_id}")
        self.say(f"broker {broker_id} copied the chunk and reported it in sync: the move "
                 "completed")
        self.show_chunks(topic)

    def show_chunks(self, topic: str) -> None:
        for chunk in self.admin.list_chunks(topic, 0):
            if chunk["is_active"]:
                self.say(f"  active chunk   start {chunk['start_offset']}: leader "
                         f"{chunk['leader_id']}, replicas {chunk['replica_ids']}")
            else:
                self.say(f"  inactive chunk start {chunk['start_offset']} stop "
                         f"{chunk['stop_offset']} end {chunk['end_offset']}: replicas "
                         f"{chunk['replica_ids']}, epoch {chunk['chunk_epoch']}")

    def read(self, consumer: Consumer, topic: str, want: int) -> list[list[ServedRange]]:
        """Polls until ``want`` records arrived; prints and returns each non-empty poll's
        served ranges."""
        consumer.assign([(topic, 0)])
        polls: list[list[ServedRange]] = []
        got = 0
        ends = time.monotonic() + WAIT_S
        while got < want and time.monotonic() < ends:
            records = consumer.poll(POLL_MS)
            if not records:
                continue
            got += len(records)
            ranges = served_ranges(records)
            polls.append(ranges)
            text = "; ".join(f"broker {r.broker_id} served offsets {r.first}..{r.last}"
                             for r in ranges)
            self.say(f"  poll {len(polls)}: {text} ({len(records)} records, first "
                     f"{_text(records[0].value)!r})")
        if got < want:
            raise DemoError(f"read {got} of {want} records of {topic}-0 in {WAIT_S:.0f} s")
        return polls

    def _wait(self, condition: Callable[[], bool], what: str) -> None:
        ends = time.monotonic() + WAIT_S
        while time.monotonic() < ends:
            if condition():
                return
            time.sleep(0.2)
        raise DemoError(f"the demo waited {WAIT_S:.0f} s for {what}")


def _text(value: bytes | None) -> str:
    return value.decode("utf-8", errors="replace") if value is not None else "null"


def run_client_demo(cluster: LocalCluster | DemoTarget, out: TextIO) -> str:
    """Tells the three acts on ``cluster`` (controllers ready, brokers 0..2 unfenced); returns
    the first act's topic (for the hints printed after the demo). A :class:`DemoTarget` names
    a cluster by its URLs (any hosts); DemoError if a broker of 0..2 is missing."""
    target = cluster if isinstance(cluster, DemoTarget) else DemoTarget.of_local(cluster)
    missing = [b for b in BROKERS if b not in target.broker_urls]
    if missing:
        raise DemoError(f"the demo needs brokers 0, 1 and 2; no URL for: {missing}")
    with AdminClient(list(target.controller_urls), CommandConfig(token=target.token)) as admin:
        story = _Story(target, admin, out)
        topic = _create_chunk_test(story)
        _transactional_create_chunk_test(story)
        _alter_chunk_assignments_test(story)
    story.say("\n== Done: every read above came from the broker that holds the chunk")
    return topic


def _create_chunk_test(story: _Story) -> str:
    story.step("KIP-1114 CreateChunkTest: a topic on broker 0 only; 10 records")
    topic = story.create_topic("kip1114-create")
    with story.producer(client_id="demo-producer") as producer:
        story.send(producer, topic, "first")
        story.step("Cut the active chunk onto broker 1 (CreateChunks); 10 more records")
        story.cut(topic, 1)
        story.send(producer, topic, "second")
    story.step("A new consumer (auto.offset.reset=earliest) reads chunk by chunk")
    with story.consumer("demo-reader-1") as consumer:
        story.read(consumer, topic, 20)
    return topic


def _transactional_create_chunk_test(story: _Story) -> None:
    story.step("KIP-1114 CreateChunkTest, transactional: 10 records from a plain producer")
    topic = story.create_topic("kip1114-txn")
    with story.producer(client_id="demo-producer") as producer:
        story.send(producer, topic, "plain")
    story.step("A transaction sends 10 records and stays open while the chunk is cut onto "
               "broker 1")
    with story.producer(client_id="demo-txn", transactional_id=f"demo-{topic}") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        futures = story.send(producer, topic, "txn", flush=False)
        producer.flush()
        offsets = [f.result(timeout=WAIT_S).offset for f in futures]
        story.say(f"the open transaction wrote offsets {offsets[0]}..{offsets[-1]} "
                  "(not committed: the LSO stays at 10)")
        story.cut(topic, 1)
        producer.commit_transaction()
        story.say("committed: the COMMIT marker went to the partition's new leader, broker 1")
    story.step("A read_committed consumer reads chunk by chunk")
    with story.consumer("demo-reader-2", isolation_level="read_committed") as consumer:
        story.read(consumer, topic, 20)


def _alter_chunk_assignments_test(story: _Story) -> None:
    story.step("KIP-1114 AlterChunkAssignmentsTest: 10 records, a chunk on broker 1, 10 more")
    topic = story.create_topic("kip1114-move")
    with story.producer(client_id="demo-producer") as producer:
        story.send(producer, topic, "first")
        story.cut(topic, 1)
        story.send(producer, topic, "second")
    story.step("Move the first chunk to broker 2 (AlterChunkAssignments)")
    story.move(topic, 0, 2)
    story.step("A new consumer reads the moved chunk from broker 2, then the active one")
    with story.consumer("demo-reader-3") as consumer:
        story.read(consumer, topic, 20)
