"""Transactions over Kafka's protocol on chunkraft's brokers, proven by stock clients.

confluent-kafka (librdkafka) and kafka-python transactional producers commit and abort
transactions in turn over an RF-3 topic of several partitions; read_committed consumers
(confluent-kafka, kafka-python, aiokafka) read exactly the committed records, in order per
partition, and read_uncommitted ones every data record (the markers are control batches the
clients skip). An open transaction holds read_committed at the last stable offset, in Fetch
and in ListOffsets, and Fetch lists the aborted transactions. A second producer with the same
transactional id fences the first. Offsets sent to a transaction (TxnOffsetCommit after
AddOffsetsToTxn, without group membership) are committed with it and dropped with an abort.
An idempotent producer loses and duplicates nothing across a kill -9 of a partition's leader.

Real processes: 3 controllers, 3 brokers with SASL_PLAINTEXT Kafka listeners, on 127.0.0.1.
Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chunkraft.client.consumer_group import GroupClient
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.protocol.coordinators import OffsetFetchRequest, OffsetFetchTopicRequest
from tests.support.brokers import broker_cluster, wait_until
from tests.support.kafka_stock import create_topic, librdkafka_settings, python_settings
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
PARTITIONS = 3
PER_PARTITION = 10
PLAN = (True, False, True, False, False, True)
"""Commit (True) or abort, transaction by transaction; the last one commits."""
FETCH = 1
READ_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-txn"), properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        yield running


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------ transactional producers
# Each runs PLAN on ``topic``, PER_PARTITION records to each partition per transaction, and
# returns what it sent: (partition, value, committed). Records are flushed before the abort:
# both clients would otherwise drop the unsent ones instead of writing and aborting them.


Sent = list[tuple[int, bytes, bool]]


def records_of(tag: str, number: int) -> list[tuple[int, bytes]]:
    return [(i % PARTITIONS, f"{tag}-{number}-{i}".encode())
            for i in range(PARTITIONS * PER_PARTITION)]


def transactions_confluent(cluster: LocalCluster, topic: str, tag: str) -> Sent:
    from confluent_kafka import Producer

    producer = Producer({**librdkafka_settings(cluster), "transactional.id": unique(tag),
                         "linger.ms": 5})
    producer.init_transactions(30)
    sent: Sent = []
    for number, commit in enumerate(PLAN):
        producer.begin_transaction()
        for partition, value in records_of(tag, number):
            producer.produce(topic, value=value, key=value, partition=partition)
            sent.append((partition, value, commit))
        assert producer.flush(30) == 0
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    return sent


def transactions_kafka_python(cluster: LocalCluster, topic: str, tag: str) -> Sent:
    from kafka import KafkaProducer

    producer = KafkaProducer(**python_settings(cluster), transactional_id=unique(tag),
                             linger_ms=5, request_timeout_ms=30_000)
    sent: Sent = []
    try:
        producer.init_transactions()
        for number, commit in enumerate(PLAN):
            producer.begin_transaction()
            futures = []
            for partition, value in records_of(tag, number):
                futures.append(producer.send(topic, value=value, key=value,
                                             partition=partition))
                sent.append((partition, value, commit))
            producer.flush(timeout=30)
            for future in futures:
                future.get(timeout=30)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    return sent


PRODUCERS: dict[str, Callable[[LocalCluster, str, str], Sent]] = {
    "confluent-kafka": transactions_confluent, "kafka-python": transactions_kafka_python}


# ------------------------------------------------------------------ consumers
# Each reads ``topic`` from offset 0 of its ``partitions`` at an isolation level until it has
# ``expected`` records (bounded), and then ``linger`` seconds more for any record it should not
# have: partition -> [(offset, value)].


Read = dict[int, list[tuple[int, bytes]]]


class Until:
    """When a reader stops: ``linger`` seconds after it first has ``expected`` records, and
    after READ_TIMEOUT_S at the latest."""

    def __init__(self, expected: int, linger: float) -> None:
        self.expected = expected
        self.linger = linger
        self.deadline = time.monotonic() + READ_TIMEOUT_S
        self.complete_at: float | None = None

    def more(self, read: Read) -> bool:
        now = time.monotonic()
        if now >= self.deadline:
            return False
        if sum(map(len, read.values())) < self.expected:
            return True
        if self.complete_at is None:
            self.complete_at = now
        return now < self.complete_at + self.linger


def read_confluent(cluster: LocalCluster, topic: str, level: str, expected: int,
                   partitions: int = PARTITIONS, linger: float = 0.0) -> Read:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**librdkafka_settings(cluster), "group.id": unique("unused"),
                         "enable.auto.commit": False, "isolation.level": level})
    read: Read = defaultdict(list)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        until = Until(expected, linger)
        while until.more(read):
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            read[partition].append((offset, message.value() or b""))
    finally:
        consumer.close()
    return read


def read_kafka_python(cluster: LocalCluster, topic: str, level: str, expected: int,
                      partitions: int = PARTITIONS, linger: float = 0.0) -> Read:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(**python_settings(cluster), isolation_level=level,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read: Read = defaultdict(list)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        until = Until(expected, linger)
        while until.more(read):
            for batch in consumer.poll(timeout_ms=500).values():
                for record in batch:
                    read[record.partition].append((record.offset, record.value))
    finally:
        consumer.close()
    return read


def read_aiokafka(cluster: LocalCluster, topic: str, level: str, expected: int,
                  partitions: int = PARTITIONS, linger: float = 0.0) -> Read:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    read: Read = defaultdict(list)

    async def run() -> None:
        consumer = AIOKafkaConsumer(**python_settings(cluster), isolation_level=level,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            until = Until(expected, linger)
            while until.more(read):
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    for record in batch:
                        read[record.partition].append((record.offset, record.value))
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(run(), READ_TIMEOUT_S + 30))
    return read


CONSUMERS: dict[str, Callable[..., Read]] = {
    "confluent-kafka": read_confluent, "kafka-python": read_kafka_python,
    "aiokafka": read_aiokafka}


def assert_read(read: Read, expected: list[tuple[int, bytes]], who: str) -> None:
    """``read`` holds exactly the ``(partition, value)`` of ``expected``, in their order per
    partition, at increasing offsets."""
    wanted: dict[int, list[bytes]] = defaultdict(list)
    for partition, value in expected:
        wanted[partition].append(value)
    for partition, records in read.items():
        offsets = [offset for offset, _ in records]
        assert offsets == sorted(set(offsets)), f"{who}: partition {partition} offsets"
    got = {p: [value for _, value in records] for p, records in read.items() if records}
    assert got == dict(wanted), f"{who}: read {sum(map(len, got.values()))} records, " \
        f"expected {len(expected)}"


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_read_committed_sees_exactly_the_committed_records_in_order(
        cluster: LocalCluster, producer: str) -> None:
    topic = unique(f"txn-{producer}")
    create_topic(cluster, topic, PARTITIONS)
    sent = PRODUCERS[producer](cluster, topic, producer)
    committed = [(p, value) for p, value, commit in sent if commit]
    everything = [(p, value) for p, value, _ in sent]
    assert 0 < len(committed) < len(everything)
    for consumer, read in sorted(CONSUMERS.items()):
        assert_read(read(cluster, topic, "read_committed", len(committed)), committed,
                    f"{producer} -> {consumer} read_committed")
    for consumer in ("confluent-kafka", "kafka-python"):
        assert_read(CONSUMERS[consumer](cluster, topic, "read_uncommitted", len(everything)),
                    everything, f"{producer} -> {consumer} read_uncommitted")


def leader_address(cluster: LocalCluster, topic: str, partition: int) -> tuple[int, str]:
    """(broker id, Kafka address) of the partition's leader, from a client's Metadata."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(librdkafka_settings(cluster))
    metadata = admin.list_topics(topic, timeout=10)
    leader = metadata.topics[topic].partitions[partition].leader
    broker = metadata.brokers[leader]
    return leader, f"{broker.host}:{broker.port}"


def raw_fetch(cluster: LocalCluster, topic: str, read_committed: bool) -> dict[str, Any]:
    """Partition 0's Fetch v12 answer from offset 0, asked of its leader."""
    _, address = leader_address(cluster, topic, 0)
    with KafkaWire(address) as wire:
        assert wire.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
        answer = wire.call(FETCH, 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 1 if read_committed else 0, "session_id": 0,
            "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}]})
    (partition,) = answer["responses"][0]["partitions"]
    assert partition["error_code"] == 0, partition
    result: dict[str, Any] = partition
    return result


def end_offset(cluster: LocalCluster, topic: str, level: str) -> int:
    """Partition 0's latest offset as ListOffsets answers a consumer at ``level``."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(**python_settings(cluster), isolation_level=level)
    try:
        tp = TopicPartition(topic, 0)
        offset: int = consumer.end_offsets([tp])[tp]
        return offset
    finally:
        consumer.close()


def test_an_open_transaction_holds_read_committed_at_the_last_stable_offset(
        cluster: LocalCluster) -> None:
    from confluent_kafka import Producer

    topic = unique("txn-lso")
    create_topic(cluster, topic, 1)
    producer = Producer({**librdkafka_settings(cluster), "transactional.id": unique("lso")})
    producer.init_transactions(30)
    batches = {"aborted": 4, "committed": 5, "open": 3}
    for name in ("aborted", "committed", "open"):
        producer.begin_transaction()
        for i in range(batches[name]):
            producer.produce(topic, value=f"{name}-{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        if name == "aborted":
            producer.abort_transaction(30)
        elif name == "committed":
            producer.commit_transaction(30)
    # Offsets: aborted 0-3, its marker 4, committed 5-9, its marker 10, open 11-13.
    stable, end = 11, 14
    fetched = raw_fetch(cluster, topic, read_committed=True)
    assert (fetched["high_watermark"], fetched["last_stable_offset"]) == (end, stable)
    assert [(a["first_offset"]) for a in fetched["aborted_transactions"]] == [0]
    assert end_offset(cluster, topic, "read_committed") == stable
    assert end_offset(cluster, topic, "read_uncommitted") == end
    committed = [(0, f"committed-{i}".encode()) for i in range(batches["committed"])]
    for consumer, read in sorted(CONSUMERS.items()):
        assert_read(read(cluster, topic, "read_committed", len(committed), 1, 1.0), committed,
                    f"{consumer} while a transaction is open")
    producer.commit_transaction(30)
    now_committed = committed + [(0, f"open-{i}".encode()) for i in range(batches["open"])]
    for consumer, read in sorted(CONSUMERS.items()):
        assert_read(read(cluster, topic, "read_committed", len(now_committed), 1),
                    now_committed, f"{consumer} after the commit")
    wait_until(lambda: end_offset(cluster, topic, "read_committed") == end + 1,
               "the last stable offset past the commit marker", timeout=10, interval=0.2)


def test_a_second_confluent_producer_fences_the_first(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer

    topic = unique("txn-fence-c")
    create_topic(cluster, topic, PARTITIONS)
    settings = {**librdkafka_settings(cluster), "transactional.id": unique("fence")}
    zombie = Producer(settings)
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie-0", partition=0)
    assert zombie.flush(30) == 0
    successor = Producer(settings)
    successor.init_transactions(30)  # aborts the zombie's transaction with a new epoch
    with pytest.raises(KafkaException) as raised:
        zombie.produce(topic, value=b"zombie-1", partition=0)
        zombie.flush(30)
        zombie.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error
    successor.begin_transaction()
    successor.produce(topic, value=b"successor", partition=1)
    successor.commit_transaction(30)
    assert_read(read_confluent(cluster, topic, "read_committed", 1, linger=1.0),
                [(1, b"successor")], "after the fencing")


@pytest.mark.parametrize("same_partition", [True, False],
                         ids=["produce-with-the-old-epoch", "add-a-partition-with-it"])
def test_a_second_kafka_python_producer_fences_the_first(cluster: LocalCluster,
                                                          same_partition: bool) -> None:
    import kafka.errors
    from kafka import KafkaProducer

    topic = unique("txn-fence-p")
    create_topic(cluster, topic, PARTITIONS)
    settings = {**python_settings(cluster), "transactional_id": unique("fence")}
    zombie = KafkaProducer(**settings)
    successor = KafkaProducer(**settings)
    try:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(topic, value=b"zombie-0", partition=0).get(timeout=30)
        successor.init_transactions()
        # The old epoch is refused by the partition's log (INVALID_PRODUCER_EPOCH, as Kafka's
        # Produce answers it) or, for a partition not in the transaction yet, by the
        # coordinator (PRODUCER_FENCED).
        with pytest.raises((kafka.errors.InvalidProducerEpochError,
                            kafka.errors.ProducerFencedError)):
            zombie.send(topic, value=b"zombie-1",
                        partition=0 if same_partition else 1).get(timeout=30)
        # kafka-python then asks for a new epoch (KIP-360), which the coordinator refuses:
        # fatal. Until that answer, a commit is refused for the state it is in.
        failures: list[str] = []

        def fenced_for_good() -> bool:
            try:
                zombie.commit_transaction()
            except kafka.errors.KafkaError as error:
                failures.append(str(error))
                return "ProducerFencedError" in str(error)
            raise AssertionError("the zombie committed")

        wait_until(fenced_for_good, "the zombie fenced for good", timeout=15, interval=0.2)
        successor.begin_transaction()
        successor.send(topic, value=b"successor", partition=2).get(timeout=30)
        successor.commit_transaction()
    finally:
        zombie.close(timeout=5)
        successor.close(timeout=5)
    assert_read(read_kafka_python(cluster, topic, "read_committed", 1, linger=1.0),
                [(2, b"successor")], "after the fencing")


def committed_offset(cluster: LocalCluster, group: str, topic: str) -> int:
    """Partition 0's committed offset of ``group``, asked of its coordinator over HTTP
    (OffsetFetch over Kafka belongs to the consumer-group APIs)."""
    urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
    client = GroupClient(group, lambda: urls, token=cluster.admin_token, verify=cluster.verify)
    try:
        answer = client.offset_fetch(OffsetFetchRequest(group_id=group, topics=(
            OffsetFetchTopicRequest(name=topic, partition_indexes=(0,)),)))
    finally:
        client.close()
    ((partition,),) = [t.partitions for t in answer.topics]
    offset: int = partition.committed_offset
    return offset


def test_offsets_sent_by_kafka_python_commit_and_abort_with_the_transaction(
        cluster: LocalCluster) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    topic, group = unique("txn-offsets-p"), unique("group")
    create_topic(cluster, topic, 1)
    producer = KafkaProducer(**python_settings(cluster), transactional_id=unique("offsets"))
    try:
        producer.init_transactions()
        for offset, commit in ((5, True), (9, False)):
            producer.begin_transaction()
            producer.send(topic, value=f"at-{offset}".encode(), partition=0).get(timeout=30)
            # kafka-python's group-id form: generation -1, no member (no group membership).
            producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)}, group)
            if commit:
                producer.commit_transaction()
                wait_until(lambda: committed_offset(cluster, group, topic) == 5,
                           "the transaction's offset committed", timeout=15, interval=0.2)
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    time.sleep(1)  # the abort's markers: the offset must stay what the commit made it
    assert committed_offset(cluster, group, topic) == 5


def test_offsets_sent_by_confluent_kafka_commit_with_the_transaction(
        cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, group = unique("txn-offsets-c"), unique("group")
    create_topic(cluster, topic, 1)
    consumer = Consumer({**librdkafka_settings(cluster), "group.id": group,
                         "enable.auto.commit": False})
    producer = Producer({**librdkafka_settings(cluster), "transactional.id": unique("offsets")})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        # An assigned consumer's metadata: generation -1, no member id.
        metadata = consumer.consumer_group_metadata()
        producer.init_transactions(30)
        for offset, commit in ((3, True), (7, False)):
            producer.begin_transaction()
            producer.produce(topic, value=f"at-{offset}".encode(), partition=0)
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], metadata,
                                                 30)
            if commit:
                producer.commit_transaction(30)
                wait_until(lambda: committed_offset(cluster, group, topic) == 3,
                           "the transaction's offset committed", timeout=15, interval=0.2)
            else:
                producer.abort_transaction(30)
    finally:
        consumer.close()
    time.sleep(1)
    assert committed_offset(cluster, group, topic) == 3


def test_an_idempotent_producer_loses_and_duplicates_nothing_across_a_leader_kill(
        cluster: LocalCluster) -> None:
    from confluent_kafka import Producer

    topic = unique("txn-idempotent")
    create_topic(cluster, topic, 2)
    leader, _ = leader_address(cluster, topic, 0)
    producer = Producer({**librdkafka_settings(cluster), "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5})
    total, kill_at = 3_000, 1_000
    errors: list[Any] = []

    def report(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(error)

    try:
        for i in range(total):
            if i == kill_at:
                cluster.kill_broker(leader)
            deadline = time.monotonic() + 60
            while True:  # a full local queue waits for deliveries, bounded
                try:
                    producer.produce(topic, value=str(i).encode(), key=f"k{i % 20}".encode(),
                                     on_delivery=report)
                    break
                except BufferError:
                    assert time.monotonic() < deadline, "the local queue never drained"
                    producer.poll(0.1)
            producer.poll(0)
            if i % 100 == 0:
                time.sleep(0.02)  # spread the records over the kill
        assert producer.flush(120) == 0
    finally:
        cluster.start_broker(leader)
        cluster.wait_brokers_ready(timeout=60)
    assert not errors, errors[:5]
    read = read_confluent(cluster, topic, "read_uncommitted", total, 2)
    counts = Counter(int(value) for records in read.values() for _, value in records)
    assert sorted(counts) == list(range(total)), f"{total - len(counts)} records lost"
    assert max(counts.values()) == 1, "duplicated records"


# ------------------------------------------------------------------ exactly once


def group_coordinator(cluster: LocalCluster, group: str) -> int:
    """The node id FindCoordinator names for ``group`` (bounded retries while it moves)."""
    address = cluster.kafka_bootstrap_servers.split(",")[0]
    found = -1

    def named() -> bool:
        nonlocal found
        with KafkaWire(address) as wire:
            assert wire.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
            answer = wire.call(10, 3, {"key": group, "key_type": 0})
        found = answer["node_id"] if answer["error_code"] == 0 else -1
        return found >= 0

    wait_until(named, f"a coordinator for {group}", timeout=30, interval=0.3)
    return found


def rewind(consumer: Any) -> None:
    """Back to the group's committed offsets: what an aborted transaction had consumed is
    consumed again."""
    from confluent_kafka import OFFSET_BEGINNING

    assigned = consumer.assignment()
    if not assigned:
        return
    for committed in consumer.committed(assigned, timeout=30):
        if committed.offset < 0:
            committed.offset = OFFSET_BEGINNING
        consumer.seek(committed)


def test_consume_transform_produce_is_exactly_once_across_a_coordinator_restart(
        cluster: LocalCluster) -> None:
    """confluent-kafka's read-process-write loop: a group member consumes, a transactional
    producer writes the transformed records and sends the consumed offsets to the same
    transaction (with the member's generation, KIP-447). The group's coordinator is killed
    -9 a third of the way in and started again later; each input record is in the output
    exactly once."""
    from confluent_kafka import Consumer, KafkaException, Producer

    source, sink = unique("eos-in"), unique("eos-out")
    group, total = unique("eos-group"), 900
    create_topic(cluster, source, PARTITIONS)
    create_topic(cluster, sink, PARTITIONS)
    seed = Producer({**librdkafka_settings(cluster), "enable.idempotence": True})
    for i in range(total):
        seed.produce(source, key=f"k{i % 30}".encode(), value=f"in-{i}".encode())
    assert seed.flush(60) == 0
    consumer = Consumer({**librdkafka_settings(cluster), "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 500})
    producer = Producer({**librdkafka_settings(cluster), "transactional.id": unique("eos-tx"),
                         "transaction.timeout.ms": 60_000})
    killed: int | None = None
    done = aborted = 0
    try:
        producer.init_transactions(60)
        consumer.subscribe([source])
        deadline = time.monotonic() + 240
        while done < total:
            assert time.monotonic() < deadline, f"only {done} of {total} records processed"
            if killed is None and done >= total // 3:
                killed = group_coordinator(cluster, group)
                cluster.kill_broker(killed)
            elif killed is not None and done >= 2 * total // 3:
                cluster.start_broker(killed)
            messages = [m for m in consumer.consume(100, 0.5) if m.error() is None]
            if not messages:
                continue
            try:
                producer.begin_transaction()
                for message in messages:
                    producer.produce(sink, key=message.key(),
                                     value=b"out-" + (message.value() or b""))
                producer.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()),
                    consumer.consumer_group_metadata(), 30)
                producer.commit_transaction(30)
                done += len(messages)
            except KafkaException as failure:
                error = failure.args[0]
                assert not error.fatal(), f"a fatal transaction error: {error}"
                producer.abort_transaction(60)
                aborted += 1
                rewind(consumer)
    finally:
        consumer.close()
        if killed is not None:
            cluster.start_broker(killed)
            cluster.wait_brokers_ready(timeout=60)
    assert killed is not None
    read = read_confluent(cluster, sink, "read_committed", total, 3)
    counts = Counter(value for records in read.values() for _, value in records)
    assert set(counts) == {f"out-in-{i}".encode() for i in range(total)}, (
        f"{total - len(counts)} records missing from the output")
    assert max(counts.values()) == 1, f"{sum(c - 1 for c in counts.values())} duplicated"
    assert done == total, f"{done - total} records processed twice ({aborted} aborts)"
