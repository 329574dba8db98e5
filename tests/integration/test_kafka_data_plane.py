"""Kafka's data plane on chunkraft's brokers, proven by stock clients: kcat, kafka-python,
confluent-kafka (librdkafka) and aiokafka produce keyed records with acks=all to an RF-3
topic, and each of them reads every record back in per-partition order, without a group
(partitions assigned). The records land in the same logs as the HTTP data plane's: a record
produced over Kafka is read by chunkraft's own consumer and the other way round.

Also: acks=0 (no answer, the records still land), ListOffsets (earliest / latest as the
clients ask them), idempotent retries never duplicate, a topic the principal may not WRITE
is refused with TOPIC_AUTHORIZATION_FAILED, and a fetch that names a session the broker
never made answers FETCH_SESSION_ID_NOT_FOUND (the client falls back to full fetches).

Real processes: 3 controllers, 3 brokers with SASL_PLAINTEXT Kafka listeners, on 127.0.0.1.
Every wait is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import broker_cluster, wait_until
from tests.support.kafka_stock import (
    PARTITIONS,
    assert_all_in_order,
    consume_aiokafka,
    consume_confluent,
    consume_kafka_python,
    consume_kcat,
    create_topic,
    keyed,
    librdkafka_settings,
    produce_aiokafka,
    produce_confluent,
    produce_kafka_python,
    produce_kcat,
    python_settings,
)
from tests.support.kafka_wire import KafkaWire

RECORDS = 2_000
FETCH = 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-data")) as running:
        yield running


# ------------------------------------------------------------------ tests

PRODUCERS: dict[str, Callable[..., Any]] = {
    "confluent-kafka": produce_confluent, "kafka-python": produce_kafka_python,
    "kcat": produce_kcat, "aiokafka": produce_aiokafka}


@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_a_stock_producer_writes_what_every_stock_consumer_reads(
        cluster: LocalCluster, producer: str) -> None:
    topic = f"data-{producer}"
    create_topic(cluster, topic)
    sent = keyed(RECORDS, producer)
    outcome = PRODUCERS[producer](cluster, topic, sent)
    assert not outcome, outcome  # confluent-kafka's delivery errors
    assert_all_in_order(consume_kcat(cluster, topic), sent, f"{producer} -> kcat")
    assert_all_in_order(consume_kafka_python(cluster, topic, len(sent)), sent,
                        f"{producer} -> kafka-python")
    assert_all_in_order(consume_confluent(cluster, topic, len(sent)), sent,
                        f"{producer} -> confluent-kafka")
    assert_all_in_order(consume_aiokafka(cluster, topic, len(sent)), sent,
                        f"{producer} -> aiokafka")


def test_list_offsets_answers_earliest_and_latest(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer, TopicPartition

    topic = "data-offsets"
    create_topic(cluster, topic)
    sent = keyed(300, "offsets")
    assert not produce_confluent(cluster, topic, sent)
    consumer = KafkaConsumer(**python_settings(cluster))
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        earliest = consumer.beginning_offsets(partitions)
        latest = consumer.end_offsets(partitions)
    finally:
        consumer.close()
    assert set(earliest.values()) == {0}
    read = consume_kcat(cluster, topic)
    assert {tp.partition: offset for tp, offset in latest.items()} == {
        p: len(read.get(p, [])) for p in range(PARTITIONS)}
    assert sum(latest.values()) == len(sent)


def test_list_offsets_7_answers_the_record_with_the_largest_timestamp(
        cluster: LocalCluster) -> None:
    """confluent-kafka's AdminClient.list_offsets (ListOffsets v7): earliest, latest and max
    timestamp (KIP-734), with records whose timestamps the producer set out of order."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    topic = "data-max-timestamp"
    create_topic(cluster, topic, partitions=1)
    stamps = [1_000_000 + 10 * i for i in range(50)]
    stamps[17] = 9_000_000  # the largest, early in the log
    stamps[40] = 9_000_000  # equal, later: the first one is the answer
    producer = Producer({**librdkafka_settings(cluster), "acks": "all", "linger.ms": 5})
    for i, stamp in enumerate(stamps):
        producer.produce(topic, value=f"m{i}".encode(), timestamp=stamp)
    assert producer.flush(60) == 0
    admin = AdminClient(librdkafka_settings(cluster))
    partition = TopicPartition(topic, 0)
    answers = {}
    for name, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest()),
                       ("max", OffsetSpec.max_timestamp())):
        answers[name] = admin.list_offsets({partition: spec})[partition].result(30)
    assert (answers["earliest"].offset, answers["latest"].offset) == (0, len(stamps))
    assert (answers["max"].offset, answers["max"].timestamp) == (17, 9_000_000)


def test_acks_0_gets_no_answer_and_the_records_still_land(cluster: LocalCluster) -> None:
    topic = "data-acks0"
    create_topic(cluster, topic)
    sent = keyed(200, "acks0")
    produce_kafka_python(cluster, topic, sent, acks=0)
    wait_until(lambda: sum(map(len, consume_kcat(cluster, topic).values())) == len(sent),
               "every acks=0 record readable", timeout=30, interval=0.5)


def test_kafka_and_http_share_one_log(cluster: LocalCluster) -> None:
    from chunkraft.client.consumer import Consumer
    from chunkraft.client.producer import Producer

    topic = "data-both"
    create_topic(cluster, topic, partitions=1)
    over_kafka = [(b"k", f"kafka-{i}".encode()) for i in range(100)]
    assert not produce_confluent(cluster, topic, over_kafka)
    urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
    with Producer(urls, token=cluster.admin_token, verify=cluster.verify) as producer:
        for i in range(100):
            producer.send(topic, f"http-{i}".encode(), key=b"k")
        producer.flush()
    values = [value for _, _, value in consume_kcat(cluster, topic)[0]]
    assert values == [v for _, v in over_kafka] + [f"http-{i}".encode() for i in range(100)]
    with Consumer(urls, token=cluster.admin_token, verify=cluster.verify) as consumer:
        consumer.assign([(topic, 0)])
        seen: list[bytes | None] = []
        deadline = time.monotonic() + 60
        while len(seen) < 200 and time.monotonic() < deadline:
            seen += [record.value for record in consumer.poll(timeout_ms=1000)]
    assert seen == values


def test_a_topic_the_principal_may_not_write_is_refused(cluster: LocalCluster) -> None:
    topic = "data-refused"
    create_topic(cluster, topic, partitions=1)
    token = cluster.add_token("User:nobody")

    def accepted() -> bool:
        from kafka import KafkaConsumer

        try:
            KafkaConsumer(**python_settings(cluster, "nobody", token),
                          request_timeout_ms=5_000).close()
        except Exception:
            return False
        return True

    wait_until(accepted, "the new principal's token accepted", timeout=30, interval=0.5)
    from confluent_kafka import KafkaError, Producer

    producer = Producer({**librdkafka_settings(cluster), "sasl.username": "nobody",
                         "sasl.password": token, "acks": "all", "message.timeout.ms": 20_000})
    errors: list[Any] = []
    producer.produce(topic, value=b"x", on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(30) == 0
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors[0]
    assert consume_kcat(cluster, topic) == {}


def test_a_fetch_naming_an_unknown_session_is_refused_so_the_client_starts_over(
        cluster: LocalCluster) -> None:
    address = cluster.kafka_bootstrap_servers.split(",")[0]
    with KafkaWire(address) as wire:
        assert wire.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
        request = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                   "isolation_level": 0, "session_id": 1234, "session_epoch": 1,
                   "topics": [], "forgotten_topics_data": [], "rack_id": ""}
        assert wire.call(FETCH, 12, request)["error_code"] == 70  # FETCH_SESSION_ID_NOT_FOUND
        full = wire.call(FETCH, 12, {**request, "session_id": 0, "session_epoch": -1})
        assert full["error_code"] == 0 and full["session_id"] == 0
