"""KIP-1114's test plan with stock Kafka producers and consumers, and KIP-253's ordering as a
stock producer gets it.

KIP-1114 says an old producer sees a chunk cut "as like the server did a partition
reassignment": the old leader answers NOT_LEADER_OR_FOLLOWER, the producer refreshes its
Metadata and sends again to the new leader. Here idempotent acks=all stock producers keep
producing keyed records while it happens, and stock consumers then read from offset 0:

- CreateChunkTest: kafka-python, confluent-kafka, aiokafka, kcat and kafkajs each produce to
  a topic of one partition on broker 0 while its active chunk is cut onto broker 1
  (CreateChunks over Kafka): every send acknowledged at offsets 0, 1, 2 ... in send order, and
  each stock consumer reads every record once, in send order.
- Its transactional variant: confluent-kafka's and kafka-python's transactional producers
  keep a transaction open across each of two cuts (0 -> 1, committed; 1 -> 2, aborted), with
  records written on both sides of the cut; read_committed consumers read exactly the
  committed records in order, read_uncommitted ones every data record.
- AlterChunkAssignmentsTest: the inactive chunk moved 0 -> 2, then 2 -> 1 (the active chunk's
  leader), while a stock producer keeps producing into the active chunk.
- kill -9 of the broker leading an RF-3 active chunk, behind two inactive chunks: idempotent
  producers (confluent-kafka, kafka-python) go on to the new leader, none of their records
  lost or duplicated, and each stock consumer reads every record in order while the killed
  broker is still down.
- KIP-253 for stock producers (which pick partitions by murmur2(key) % the count of their last
  Metadata and send no count): across a cut each key stays in its partition, in send order;
  across a createPartitions 2 -> 4 a producer that has not refreshed its Metadata is still
  accepted on the old partitions, past the KIP-253 threshold of the old leader epoch, and a
  fresh one is accepted on the new partitions at once (docs/clients.md, "Stock Kafka clients").

Real processes: 3 controllers and 3 brokers with SASL_PLAINTEXT Kafka listeners on 127.0.0.1,
one cluster for the module; a killed broker is fenced within seconds. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from chunkraft.client import partition_for_key
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import broker_cluster, kafka_address, wait_until
from tests.support.kafka_stock import librdkafka_settings, python_settings
from tests.support.kafka_stock_streams import PRODUCERS, READERS, Feed, Records
from tests.support.kafka_wire import KafkaWire

CONTROLLER_PROPERTIES = {
    # A killed broker is fenced (and its leaderships move) within seconds.
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
}
LIST_OFFSETS, METADATA, CREATE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 2, 3, 19, 23
CREATE_PARTITIONS = 37
CREATE_CHUNKS, ALTER_CHUNK_ASSIGNMENTS = 17000, 17001
ZERO = uuid.UUID(int=0)
KEYS = 7
EXPANSION_KEYS = 16
"""k0 .. k15: murmur2 % 4 puts k8, k10, k11 and k15 on partition 2, k14 on 3."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-kip1114-plan"),
                        properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        yield running


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def keyed(tag: str, count: int, first: int = 0, keys: int = KEYS) -> Records:
    return [(f"k{i % keys}".encode(), f"{tag}-{i}".encode())
            for i in range(first, first + count)]


# ------------------------------------------------------------------ the cluster's side


class Admin:
    """Kafka's own requests (and chunkraft's private CreateChunks / AlterChunkAssignments) on
    one connection to broker 0, which the module never kills. Thread-safe: one request at a
    time."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._wire = KafkaWire(kafka_address(cluster, 0))
        self._lock = threading.Lock()
        answer = self._wire.sasl_plain("admin", cluster.admin_token, private_apis=True)
        assert answer["error_code"] == 0, answer

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return self._wire.call(api_key, version, body)

    def close(self) -> None:
        self._wire.close()

    def partitions(self, topic: str) -> list[dict[str, Any]]:
        """The topic's partitions in broker 0's Metadata v12, with their chunks."""
        answer = self.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": ZERO}],
                                               "include_chunks": True})
        (found,) = answer["topics"]
        if found["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code:
            return []  # broker 0 has not applied the topic's records yet
        assert found["error_code"] == 0, found
        return sorted(found["partitions"], key=lambda p: int(p["partition_index"]))

    def partition(self, topic: str, index: int = 0) -> dict[str, Any]:
        return self.partitions(topic)[index]

    def create_topic(self, topic: str, assignments: list[list[int]]) -> None:
        created = self.call(CREATE_TOPICS, 7, {"topics": [{
            "name": topic, "num_partitions": -1, "replication_factor": -1,
            "assignments": [{"partition_index": i, "broker_ids": replicas}
                            for i, replicas in enumerate(assignments)],
            "configs": []}], "timeout_ms": 30_000, "validate_only": False})
        assert created["topics"][0]["error_code"] == 0, created
        wait_until(lambda: [p["leader_id"] for p in self.partitions(topic)]
                   == [replicas[0] for replicas in assignments],
                   f"{topic} led by {[r[0] for r in assignments]}", timeout=30, interval=0.1)

    def cut(self, topic: str, replicas: list[int], index: int = 0) -> None:
        """The active chunk cut (the leader reads the offsets), the new one on ``replicas``,
        led by the first; returns once broker 0's Metadata names the new leader."""
        answer = self.call(CREATE_CHUNKS, 0, {"topics": [{"name": topic, "partitions": [{
            "partition_index": index, "broker_ids": replicas, "start_timestamp": -1}]}]})
        assert [p["error_code"] for p in answer["topics"][0]["partitions"]] == [0], answer
        wait_until(lambda: self.partition(topic, index)["leader_id"] == replicas[0],
                   f"{topic}-{index}'s active chunk led by {replicas[0]}", interval=0.1)

    def move(self, topic: str, start: int, replicas: list[int]) -> None:
        """The chunk starting at ``start`` moved to ``replicas``, its copy complete."""
        (chunk,) = [c for c in self.partition(topic)["chunks"] if c["start_offset"] == start]
        answer = self.call(ALTER_CHUNK_ASSIGNMENTS, 0, {"chunks": [{
            "topic_name": topic, "partition_id": 0, "start_offset": start,
            "chunk_epoch": chunk["chunk_epoch"], "broker_ids": replicas}],
            "validate_only": False})
        assert [c["error_code"] for c in answer["results"]] == [0], answer

        def there() -> bool:
            (now,) = [c for c in self.partition(topic)["chunks"] if c["start_offset"] == start]
            return bool(now["replicas"] == now["isr"] == replicas)

        wait_until(there, f"{topic}'s chunk at {start} on {replicas}", timeout=60,
                   interval=0.1)

    def chunks(self, topic: str, index: int = 0) -> list[tuple[int, int, list[int]]]:
        """(start, stop, replicas) of each inactive chunk."""
        return [(c["start_offset"], c["stop_offset"], c["replicas"])
                for c in self.partition(topic, index)["chunks"]]

    def create_partitions(self, topic: str, count: int) -> None:
        answer = self.call(CREATE_PARTITIONS, 3, {
            "topics": [{"name": topic, "count": count, "assignments": None}],
            "timeout_ms": 30_000, "validate_only": False})
        assert [r["error_code"] for r in answer["results"]] == [0], answer
        wait_until(lambda: len(self.partitions(topic)) == count
                   and all(p["leader_id"] >= 0 for p in self.partitions(topic)),
                   f"{topic} with {count} led partitions", interval=0.1)


def leader_wire(cluster: LocalCluster, admin: Admin, topic: str, index: int = 0) -> KafkaWire:
    wire = KafkaWire(kafka_address(cluster, admin.partition(topic, index)["leader_id"]))
    assert wire.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
    return wire


def end_offset(cluster: LocalCluster, admin: Admin, topic: str, index: int = 0) -> int:
    """The partition's high watermark, as its leader answers ListOffsets latest (-1 while the
    leader moves)."""
    try:
        with leader_wire(cluster, admin, topic, index) as wire:
            answer = wire.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0,
                                                 "topics": [{"name": topic, "partitions": [{
                                                     "partition_index": index,
                                                     "current_leader_epoch": -1,
                                                     "timestamp": -1}]}]})
    except (OSError, ConnectionError):
        return -1
    (partition,) = answer["topics"][0]["partitions"]
    return int(partition["offset"]) if partition["error_code"] == 0 else -1


def wait_written(cluster: LocalCluster, admin: Admin, topic: str, count: int,
                 index: int = 0) -> None:
    wait_until(lambda: end_offset(cluster, admin, topic, index) >= count,
               f"{count} records of {topic}-{index} written", timeout=30, interval=0.05)


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> Iterator[Admin]:
    connection = Admin(cluster)
    try:
        yield connection
    finally:
        connection.close()


# ------------------------------------------------------------------ what consumers read


def assert_exactly(read: list[tuple[int, bytes, bytes]], sent: Records, who: str,
                   contiguous: bool = True) -> None:
    """``read`` is ``sent``, each record once, in send order, at increasing offsets (with
    ``contiguous``: exactly 0, 1, 2 ...)."""
    offsets = [offset for offset, _, _ in read]
    if contiguous:
        assert offsets == list(range(len(sent))), f"{who}: offsets {offsets}"
    else:
        assert offsets == sorted(set(offsets)), f"{who}: offsets {offsets}"
    got = [(key, value) for _, key, value in read]
    differs = next((i for i, (a, b) in enumerate(zip(got, sent, strict=False)) if a != b), None)
    assert got == sent, (f"{who}: read {len(read)} records, {len(sent)} sent; first "
                         f"difference at {differs}")


# ------------------------------------------------------------------ CreateChunkTest

PLAN_RECORDS = 300
CUT_AFTER = 60
"""Records the leader has written before the cut is asked for."""


@pytest.fixture(scope="module")
def produced_across_a_cut(cluster: LocalCluster, admin: Admin
                          ) -> dict[str, tuple[str, Records, Any]]:
    """For each stock producer, its topic of one partition on broker 0, produced while the
    active chunk is cut onto broker 1: client -> (topic, records sent, the acknowledgements
    or the failure). The producers run at the same time, one cut each."""
    out: dict[str, tuple[str, Records, Any]] = {}
    feeds: dict[str, Feed] = {}
    for client in PRODUCERS:
        topic = unique(f"plan-cut-{client}")
        admin.create_topic(topic, [[0]])
        records = keyed(topic, PLAN_RECORDS)
        feeds[client] = Feed(client, cluster, topic, records, pause_s=0.1)
    for feed in feeds.values():
        wait_written(cluster, admin, feed.topic, CUT_AFTER)
        admin.cut(feed.topic, [1])
    for client, feed in feeds.items():
        try:
            result: Any = feed.join()
        except AssertionError as failure:
            result = failure
        out[client] = (feed.topic, feed.records, result)
    return out


@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_create_chunk_test_every_send_of_a_stock_producer_is_acknowledged_in_order(
        admin: Admin, produced_across_a_cut: dict[str, tuple[str, Records, Any]],
        producer: str) -> None:
    topic, records, acked = produced_across_a_cut[producer]
    if isinstance(acked, BaseException):
        raise acked
    if acked:  # kcat and kafkajs report no offsets: their consumers' reads check them
        assert acked == [(0, offset) for offset in range(len(records))], acked
    ((start, stop, replicas),) = admin.chunks(topic)
    assert (start, replicas) == (0, [0]) and CUT_AFTER - 1 <= stop < len(records) - 1, (
        f"the cut at {stop} did not fall among the records")
    assert admin.partition(topic)["leader_id"] == 1


@pytest.mark.parametrize("consumer", sorted(READERS))
def test_create_chunk_test_a_stock_consumer_reads_every_record_once_in_send_order(
        cluster: LocalCluster, produced_across_a_cut: dict[str, tuple[str, Records, Any]],
        consumer: str) -> None:
    last = {(topic, 0): records[-1][1] for topic, records, _ in produced_across_a_cut.values()}
    read = READERS[consumer](cluster, last, "read_uncommitted")
    for producer, (topic, records, _) in sorted(produced_across_a_cut.items()):
        assert_exactly(read[(topic, 0)], records, f"{producer} -> {consumer}")


# ------------------------------------------------------------------ transactional variant

PER_SIDE = 10
"""Records a transaction writes on each side of a cut."""


def transactional_plan(cluster: LocalCluster, admin: Admin, client: str, topic: str
                       ) -> tuple[Records, Records]:
    """KIP-1114's transactional CreateChunkTest, extended: a plain idempotent producer writes
    10 records; a transactional one commits 10, then writes 10, waits for the cut 0 -> 1,
    writes 10 more and commits; aborts 10; writes 10, the cut 1 -> 2, 10 more, aborts; commits
    10. Returns (committed, everything), the data records in send order."""
    committed: Records = []
    everything: Records = []
    plain = keyed(f"{topic}-plain", PER_SIDE)
    PRODUCERS["kafka-python"](cluster, topic, plain, lambda _: 0.0)
    committed += plain
    everything += plain
    session = TRANSACTIONS[client](cluster)
    try:
        for number, (cut_to, commit) in enumerate(((None, True), ([1], True), (None, False),
                                                   ([2], False), (None, True))):
            session.begin()
            sent = keyed(f"{topic}-t{number}", PER_SIDE)
            session.send(topic, sent)
            if cut_to is not None:
                admin.cut(topic, cut_to)
                after = keyed(f"{topic}-t{number}", PER_SIDE, PER_SIDE)
                session.send(topic, after)
                sent += after
            session.end(commit)
            everything += sent
            if commit:
                committed += sent
    finally:
        session.close()
    return committed, everything


class ConfluentTransactions:
    def __init__(self, cluster: LocalCluster) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({**librdkafka_settings(cluster), "linger.ms": 5,
                                  "transactional.id": unique("plan-txn-c")})
        self.producer.init_transactions(30)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, records: Records) -> None:
        errors: list[Any] = []
        for key, value in records:
            self.producer.produce(topic, value=value, key=key, partition=0,
                                  on_delivery=lambda e, _m: errors.append(e) if e else None)
        # Flushed: librdkafka's abort drops records not yet sent instead of writing them.
        assert self.producer.flush(30) == 0 and not errors, errors

    def end(self, commit: bool) -> None:
        if commit:
            self.producer.commit_transaction(30)
        else:
            self.producer.abort_transaction(30)

    def close(self) -> None:
        self.producer.flush(10)


class KafkaPythonTransactions:
    def __init__(self, cluster: LocalCluster) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(**python_settings(cluster), linger_ms=5,
                                      transactional_id=unique("plan-txn-p"),
                                      request_timeout_ms=30_000)
        self.producer.init_transactions()

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, records: Records) -> None:
        futures = [self.producer.send(topic, key=key, value=value, partition=0)
                   for key, value in records]
        self.producer.flush(timeout=30)
        for future in futures:
            future.get(timeout=10)

    def end(self, commit: bool) -> None:
        if commit:
            self.producer.commit_transaction()
        else:
            self.producer.abort_transaction()

    def close(self) -> None:
        self.producer.close(timeout=10)


TRANSACTIONS: dict[str, Callable[[LocalCluster], Any]] = {
    "confluent-kafka": ConfluentTransactions, "kafka-python": KafkaPythonTransactions}


@pytest.fixture(scope="module")
def transactions_across_cuts(cluster: LocalCluster, admin: Admin
                             ) -> dict[str, tuple[str, Records, Records]]:
    """client -> (topic, committed, everything); both producers' plans run at once."""
    topics = {client: unique(f"plan-txn-{client}") for client in TRANSACTIONS}
    for topic in topics.values():
        admin.create_topic(topic, [[0]])
    with ThreadPoolExecutor(len(topics)) as pool:
        plans = {client: pool.submit(transactional_plan, cluster, admin, client, topic)
                 for client, topic in topics.items()}
        return {client: (topics[client], *plan.result(timeout=120))
                for client, plan in plans.items()}


@pytest.mark.parametrize(("consumer", "isolation"), [
    ("aiokafka", "read_committed"), ("confluent-kafka", "read_committed"),
    ("confluent-kafka", "read_uncommitted"), ("kafka-python", "read_committed"),
    ("kafka-python", "read_uncommitted"), ("kcat", "read_committed"),
    ("kafkajs", "read_committed"), ("kafkajs", "read_uncommitted")])
def test_transactions_across_cuts_read_committed_sees_exactly_the_committed_records(
        cluster: LocalCluster, admin: Admin,
        transactions_across_cuts: dict[str, tuple[str, Records, Records]],
        consumer: str, isolation: str) -> None:
    wanted = {client: committed if isolation == "read_committed" else everything
              for client, (_, committed, everything) in transactions_across_cuts.items()}
    last = {(topic, 0): wanted[client][-1][1]
            for client, (topic, _, _) in transactions_across_cuts.items()}
    read = READERS[consumer](cluster, last, isolation)
    for client, (topic, _, _) in sorted(transactions_across_cuts.items()):
        # 0-9 plain, 10-19 committed, 20 its marker; the cut at the open transaction's first
        # offset, 21 (the last stable offset), then again at 53.
        assert [(s, r) for s, _, r in admin.chunks(topic)] == [(0, [0]), (21, [1])]
        assert_exactly(read[(topic, 0)], wanted[client],
                       f"{client} -> {consumer} {isolation}", contiguous=False)


# ------------------------------------------------------------------ AlterChunkAssignmentsTest

MOVE_FIRST = 50
MOVE_FED = 400


def test_alter_chunk_assignments_test_moves_twice_while_a_stock_producer_produces(
        cluster: LocalCluster, admin: Admin) -> None:
    """50 records on broker 0, a cut onto broker 1, then the first chunk moved to broker 2
    and on to broker 1 while kafka-python keeps producing into the active chunk: nothing it
    sends is refused or reordered, and every stock consumer reads all from offset 0."""
    topic = unique("plan-move")
    admin.create_topic(topic, [[0]])
    first = keyed(topic, MOVE_FIRST)
    assert PRODUCERS["confluent-kafka"](cluster, topic, first, lambda _: 0.0) == [
        (0, offset) for offset in range(MOVE_FIRST)]
    admin.cut(topic, [1])
    rest = keyed(topic, MOVE_FED, MOVE_FIRST)
    feed = Feed("kafka-python", cluster, topic, rest, pause_s=0.1)
    wait_written(cluster, admin, topic, MOVE_FIRST + 20)
    admin.move(topic, 0, [2])
    admin.move(topic, 0, [1])
    handed = feed.handed
    assert feed.join() == [(0, offset) for offset in range(MOVE_FIRST, MOVE_FIRST + MOVE_FED)]
    assert handed < MOVE_FED, "the producer finished before the moves did"
    assert admin.chunks(topic) == [(0, MOVE_FIRST - 1, [1])]
    for consumer, read in sorted(READERS.items()):
        got = read(cluster, {(topic, 0): rest[-1][1]}, "read_uncommitted")
        assert_exactly(got[(topic, 0)], first + rest, f"{consumer} after the moves")


# ------------------------------------------------------------------ KIP-253, stock producers


def offsets_by_partition(acked: list[tuple[int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for partition, offset in acked:
        out[partition].append(offset)
    return out


def test_kip253_across_a_cut_each_key_stays_in_its_partition_in_send_order(
        cluster: LocalCluster, admin: Admin) -> None:
    """A kafka-python producer's keyed records over two partitions while partition 0's active
    chunk is cut onto broker 2: each record is on murmur2(key) % 2, each partition holds its
    records at 0, 1, 2 ... in send order, so every key's records are read in send order."""
    topic = unique("kip253-cut")
    admin.create_topic(topic, [[0], [1]])
    records = keyed(topic, PLAN_RECORDS)
    feed = Feed("kafka-python", cluster, topic, records)
    wait_written(cluster, admin, topic, CUT_AFTER // 2, index=0)
    admin.cut(topic, [2], index=0)
    acked = feed.join()
    assert [p for p, _ in acked] == [partition_for_key(k, 2) for k, _ in records]
    by_partition = offsets_by_partition(acked)
    assert sorted(by_partition) == [0, 1]
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))
    ((_, stop, _),) = admin.chunks(topic, 0)
    assert stop < len(by_partition[0]) - 1, "the cut did not fall among the records"
    sent = {p: [r for r, (q, _) in zip(records, acked, strict=True) if q == p] for p in (0, 1)}
    for consumer in ("confluent-kafka", "kafka-python"):
        read = READERS[consumer](cluster, {(topic, p): sent[p][-1][1] for p in sent},
                                 "read_uncommitted")
        for p in sent:
            assert_exactly(read[(topic, p)], sent[p], f"{consumer} on partition {p}")


def leader_epochs(admin: Admin, topic: str) -> list[int]:
    return [int(p["leader_epoch"]) for p in admin.partitions(topic)]


def epoch_end_offset(cluster: LocalCluster, admin: Admin, topic: str, index: int,
                     epoch: int) -> int:
    """OffsetForLeaderEpoch as chunkraft's Consumer asks it for a KIP-253 threshold."""
    with leader_wire(cluster, admin, topic, index) as wire:
        answer = wire.call(OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [{
            "topic": topic, "partitions": [{"partition": index, "current_leader_epoch": -1,
                                            "leader_epoch": epoch}]}]})
    (partition,) = answer["topics"][0]["partitions"]
    assert partition["error_code"] == 0, partition
    return int(partition["end_offset"])


def send_kafka_python(producer: Any, topic: str, records: Records) -> list[tuple[int, int]]:
    futures = [producer.send(topic, key=key, value=value) for key, value in records]
    producer.flush(timeout=30)
    return [(m.partition, m.offset) for m in (future.get(timeout=10) for future in futures)]


def test_kip253_a_stock_producer_across_create_partitions(
        cluster: LocalCluster, admin: Admin) -> None:
    """docs/clients.md's statement, step by step: a topic of 2 partitions expanded to 4.

    - The expansion bumps the leader epoch of partitions 0 and 1 (KIP-253).
    - A kafka-python producer whose Metadata still says 2 partitions keeps sending keyed
      records to murmur2(key) % 2, and the brokers append them (a stock producer sends no
      partition count, so nothing is refused), also for keys that now hash elsewhere; they
      land at or past the end offset of the old epoch, the KIP-253 threshold.
    - A new producer (fresh Metadata) sends to murmur2(key) % 4: records for partitions 2
      and 3 are appended at once, though nothing consumed partitions 0 and 1.
    - Every partition holds its records in send order; a key that moved has its records up
      to the refresh on its old partition, the later ones on the new partition.
    """
    from kafka import KafkaProducer

    topic = unique("kip253-expand")
    admin.create_topic(topic, [[0], [1]])
    epochs = leader_epochs(admin, topic)
    settings = {**python_settings(cluster), "acks": "all", "enable_idempotence": True,
                "linger_ms": 5}
    stale = KafkaProducer(**settings)  # metadata.max.age.ms: Kafka's 5 minutes
    fresh = None
    try:
        before, stale_sent, after = (keyed(f"{topic}-{tag}", 80, keys=EXPANSION_KEYS)
                                     for tag in "abc")
        before_acked = send_kafka_python(stale, topic, before)
        admin.create_partitions(topic, 4)
        bumped = leader_epochs(admin, topic)
        assert all(new > old for new, old in zip(bumped[:2], epochs, strict=True)), (
            epochs, bumped)
        stale_acked = send_kafka_python(stale, topic, stale_sent)
        assert stale.partitions_for(topic) == {0, 1}
        assert [p for p, _ in stale_acked] == [partition_for_key(k, 2) for k, _ in stale_sent]
        moved = {k for k, _ in stale_sent if partition_for_key(k, 4) != partition_for_key(k, 2)}
        assert moved, "no key hashes to partition 2 or 3"
        for prior in (0, 1):
            threshold = epoch_end_offset(cluster, admin, topic, prior, epochs[prior])
            assert threshold == sum(1 for p, _ in before_acked if p == prior)
            assert all(offset >= threshold for p, offset in stale_acked if p == prior)
        fresh = KafkaProducer(**settings)
        after_acked = send_kafka_python(fresh, topic, after)
        assert [p for p, _ in after_acked] == [partition_for_key(k, 4) for k, _ in after]
        assert {p for p, _ in after_acked} == {0, 1, 2, 3}
    finally:
        stale.close(timeout=10)
        if fresh is not None:
            fresh.close(timeout=10)
    sent: dict[int, Records] = defaultdict(list)
    for records, acked in ((before, before_acked), (stale_sent, stale_acked),
                           (after, after_acked)):
        for record, (partition, _) in zip(records, acked, strict=True):
            sent[partition].append(record)
    read = READERS["confluent-kafka"](cluster, {(topic, p): sent[p][-1][1] for p in sent},
                                      "read_uncommitted")
    for p in sorted(sent):
        assert_exactly(read[(topic, p)], sent[p], f"partition {p}")
    for key in moved:
        old, new = partition_for_key(key, 2), partition_for_key(key, 4)
        assert [v for k, v in sent[old] if k == key] == [
            v for k, v in before + stale_sent if k == key]
        assert [v for k, v in sent[new] if k == key] == [v for k, v in after if k == key]


# ------------------------------------------------------------------ kill -9 (last: it restarts)

KILL_RECORDS = 600
KILLED = 1


@contextlib.contextmanager
def kafka_python_connect_errors_unlogged() -> Iterator[None]:
    """kafka-python 3.0.12 leaves the socket of a refused connect open (kafka/net/inet.py:
    ``KafkaNetSocket.sock_connect`` raises without closing it) and logs the error at ERROR
    with the exception, whose traceback holds that socket. pytest keeps the log records of a
    test until the session ends, where the garbage collector finds the sockets outside any
    test's warning filter. Unlogged, they are collected within the test (``gc.collect()``)."""
    logger = logging.getLogger("kafka.net")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
        gc.collect()


@pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")
def test_kill_9_of_the_active_chunks_leader_loses_and_duplicates_nothing(
        cluster: LocalCluster, admin: Admin) -> None:
    """Topics of RF 3 whose active chunk is cut twice (leaders 0 -> 2 -> 1) while an
    idempotent producer (confluent-kafka, kafka-python) produces; broker 1 is killed -9 with
    half the records sent. Another replica takes the active chunk over, every record is
    acknowledged at offsets 0, 1, 2 ... in send order, and each stock consumer reads every
    record from offset 0, the two inactive chunks included, while broker 1 is still down."""
    clients = ("confluent-kafka", "kafka-python")
    feeds: dict[str, Feed] = {}
    for client in clients:
        topic = unique(f"plan-kill-{client}")
        admin.create_topic(topic, [[0, 1, 2]])
        feeds[client] = Feed(client, cluster, topic, keyed(topic, KILL_RECORDS), pause_s=0.1)
    for replicas in ([2, 0, 1], [1, 2, 0], None):
        for feed in feeds.values():
            # Each chunk gets records of its own (an empty active chunk cannot be cut).
            start = admin.partition(feed.topic)["chunks"][-1]["stop_offset"] + 1 \
                if admin.chunks(feed.topic) else 0
            wait_written(cluster, admin, feed.topic, start + KILL_RECORDS // 8)
            if replicas is not None:
                admin.cut(feed.topic, replicas)
    handed = {client: feed.handed for client, feed in feeds.items()}
    with kafka_python_connect_errors_unlogged():
        cluster.kill_broker(KILLED)
        try:
            for client, feed in feeds.items():
                assert handed[client] < KILL_RECORDS, f"{client} had sent all before the kill"
                assert feed.join() == [(0, offset) for offset in range(KILL_RECORDS)], client
                assert admin.partition(feed.topic)["leader_id"] in (0, 2)
                assert [r for _, _, r in admin.chunks(feed.topic)] == [[0, 1, 2], [2, 0, 1]]
            last = {(feed.topic, 0): feed.records[-1][1] for feed in feeds.values()}
            for consumer, read in sorted(READERS.items()):
                got = read(cluster, last, "read_uncommitted")
                for client, feed in feeds.items():
                    assert_exactly(got[(feed.topic, 0)], feed.records,
                                   f"{client} -> {consumer} with broker {KILLED} down")
        finally:
            cluster.start_broker(KILLED)
            cluster.wait_brokers_ready(timeout=60)
