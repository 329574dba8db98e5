"""Compressed record batches on chunkraft's brokers, proven by stock clients: for each codec
(gzip, snappy, lz4, zstd) each stock client (kafka-python, confluent-kafka (librdkafka),
aiokafka, kcat) produces keyed records with that ``compression.type`` and acks=all to an RF-3
topic; the batches are stored in the producer's codec, and every other stock client and
chunkraft's own HTTP consumer each read every record once, in per-partition order. (Which
codecs librdkafka actually sends to chunkraft: see ``CLIENT_DOWNGRADES``.)

Also Kafka's rules around codecs: a topic's ``compression.type`` recompresses what is produced
(a bad value is INVALID_CONFIG), Produce below v7 may not carry zstd and Fetch below v10 may not
read a zstd topic (UNSUPPORTED_COMPRESSION_TYPE), and a codec id Kafka lacks is refused with
UNSUPPORTED_COMPRESSION_TYPE rather than CORRUPT_MESSAGE.

Real processes: 3 controllers, 3 brokers with SASL_PLAINTEXT Kafka listeners, on 127.0.0.1, one
cluster for the module. Every wait is bounded.
"""

from __future__ import annotations

import struct
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from crc32c import crc32c

from chunkraft.dataplane.record_batch import Codec, build_batch, iter_batches
from chunkraft.local.local_cluster import LocalCluster
from tests.support import kafka_stock as stock
from tests.support.brokers import broker_cluster, wait_until
from tests.support.kafka_stock import (
    PARTITIONS,
    Read,
    assert_all_in_order,
    consume_aiokafka,
    consume_confluent,
    consume_kafka_python,
    consume_kcat,
    kafka_python_partitions,
    keyed,
)
from tests.support.kafka_wire import KafkaWire

RECORDS = 200
PRODUCE, FETCH, CREATE_TOPICS = 0, 1, 19
CODECS = ("gzip", "snappy", "lz4", "zstd")
UNSUPPORTED_COMPRESSION_TYPE, INVALID_CONFIG, NOT_LEADER_OR_FOLLOWER = 76, 40, 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-compression")) as running:
        yield running


def wire(cluster: LocalCluster) -> KafkaWire:
    """A SASL/PLAIN-authenticated admin connection to the first broker."""
    connection = KafkaWire(cluster.kafka_bootstrap_servers.split(",")[0])
    assert connection.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
    return connection


def create_topic(cluster: LocalCluster, name: str, partitions: int = PARTITIONS,
                 configs: dict[str, str] | None = None) -> int:
    """CreateTopics' error code; on success, once every broker's metadata has the topic."""
    with wire(cluster) as connection:
        answer = connection.call(CREATE_TOPICS, 7, {"topics": [{
            "name": name, "num_partitions": partitions, "replication_factor": 3,
            "assignments": [], "configs": [{"name": k, "value": v}
                                           for k, v in (configs or {}).items()]}],
            "timeout_ms": 30_000})
    error: int = answer["topics"][0]["error_code"]
    if error == 0:
        wait_until(lambda: len(kafka_python_partitions(cluster, name)) == partitions,
                   f"{name} in the brokers' metadata", timeout=30, interval=0.2)
    return error


# ------------------------------------------------------------------ producers with a codec


def produce_kafka_python(cluster: LocalCluster, topic: str, records: list[tuple[bytes, bytes]],
                         codec: str | None) -> None:
    stock.produce_kafka_python(cluster, topic, records, compression_type=codec)


def produce_librdkafka(cluster: LocalCluster, topic: str, records: list[tuple[bytes, bytes]],
                       codec: str) -> None:
    errors = stock.produce_confluent(cluster, topic, records, **{"compression.type": codec})
    assert not errors, errors


def produce_aiokafka(cluster: LocalCluster, topic: str, records: list[tuple[bytes, bytes]],
                     codec: str) -> None:
    stock.produce_aiokafka(cluster, topic, records, compression_type=codec, linger_ms=5)


def produce_kcat(cluster: LocalCluster, topic: str, records: list[tuple[bytes, bytes]],
                 codec: str) -> None:
    stock.produce_kcat(cluster, topic, records, "-z", codec)


PRODUCERS: dict[str, Callable[..., None]] = {
    "kafka-python": produce_kafka_python, "confluent-kafka": produce_librdkafka,
    "aiokafka": produce_aiokafka, "kcat": produce_kcat}
CONSUMERS: dict[str, Callable[[LocalCluster, str, int], Read]] = {
    "kafka-python": consume_kafka_python, "confluent-kafka": consume_confluent,
    "aiokafka": consume_aiokafka, "kcat": lambda cluster, topic, _: consume_kcat(cluster, topic)}


# Codecs a client is asked for but sends uncompressed to chunkraft's brokers, its own choice:
# librdkafka enables LZ4 only for a broker that lists FindCoordinator in ApiVersions (which
# chunkraft's brokers do not serve yet), and librdkafka before 2.11.1 (kcat 1.7.1 here has
# 2.0.2) drops gzip, snappy and lz4 for a broker whose Produce versions start at 3, as Kafka
# 4's do. The records still arrive, uncompressed; that they read back is checked all the same.
CLIENT_DOWNGRADES = {("confluent-kafka", "lz4"), ("kcat", "gzip"), ("kcat", "snappy"),
                     ("kcat", "lz4")}


# ------------------------------------------------------------------ readers of what is stored


def consume_http(cluster: LocalCluster, topic: str, expected: int) -> Read:
    """chunkraft's own consumer over the HTTP data plane, partitions assigned."""
    from chunkraft.client.consumer import Consumer

    urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
    read: Read = defaultdict(list)
    with Consumer(urls, token=cluster.admin_token, verify=cluster.verify) as consumer:
        consumer.assign([(topic, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 60
        while sum(map(len, read.values())) < expected and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=1000):
                read[record.partition].append((record.offset, record.key or b"",
                                               record.value or b""))
    return read


def fetch_request(topic: str, partitions: int, version: int) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 24,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 22} for p in range(partitions)]}],
            "forgotten_topics_data": [], "rack_id": ""}


def stored_codecs(cluster: LocalCluster, topic: str, partitions: int = PARTITIONS
                  ) -> dict[int, int]:
    """How many batches of each codec the topic's logs hold, read with a raw Fetch from each
    partition's leader (a broker answering NOT_LEADER_OR_FOLLOWER, or sending the client to
    another broker with a preferred read replica, is skipped)."""
    found: dict[int, int] = defaultdict(int)
    served: set[int] = set()
    for address in cluster.kafka_bootstrap_servers.split(","):
        connection = KafkaWire(address)
        with connection:
            assert connection.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
            answer = connection.call(FETCH, 12, fetch_request(topic, partitions, 12))
        for part in answer["responses"][0]["partitions"]:
            redirected = part.get("preferred_read_replica", -1) >= 0
            if (part["error_code"] == 0 and not redirected
                    and part["partition_index"] not in served):
                served.add(part["partition_index"])
                for header, _ in iter_batches(part["records"] or b""):
                    found[header.compression] += 1
    assert served == set(range(partitions)), f"no leader answered for {topic}: {served}"
    return dict(found)


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_a_stock_producers_compressed_batches_are_read_by_another_client_and_over_http(
        cluster: LocalCluster, producer: str, codec: str) -> None:
    topic = f"z-{producer}-{codec}"
    assert create_topic(cluster, topic) == 0
    sent = keyed(RECORDS, f"{producer}-{codec}")
    PRODUCERS[producer](cluster, topic, sent, codec)
    codecs = stored_codecs(cluster, topic)
    wanted = Codec[codec.upper()].value
    # Stored as sent: in the producer's codec (a client may send a batch that would not
    # shrink uncompressed, as librdkafka does), never recompressed into another.
    assert set(codecs) <= {wanted, 0}, codecs
    if (producer, codec) not in CLIENT_DOWNGRADES:
        assert codecs.get(wanted, 0) > 0, f"{producer} sent no {codec} batch: {codecs}"
    for reader, consume in CONSUMERS.items():
        if reader != producer:
            assert_all_in_order(consume(cluster, topic, len(sent)), sent,
                                f"{producer} ({codec}) -> {reader}")
    assert_all_in_order(consume_http(cluster, topic, len(sent)), sent,
                        f"{producer} ({codec}) -> chunkraft's HTTP consumer")


def test_the_topics_compression_type_recompresses_what_is_produced(
        cluster: LocalCluster) -> None:
    topic = "z-topic-zstd"
    assert create_topic(cluster, topic, configs={"compression.type": "zstd"}) == 0
    sent = keyed(RECORDS, "recompressed")
    produce_kafka_python(cluster, topic, sent[:100], None)  # uncompressed
    produce_kafka_python(cluster, topic, sent[100:], "gzip")
    codecs = stored_codecs(cluster, topic)
    assert set(codecs) == {Codec.ZSTD.value}, codecs
    assert_all_in_order(consume_confluent(cluster, topic, len(sent)), sent,
                        "recompressed -> confluent-kafka")
    assert_all_in_order(consume_http(cluster, topic, len(sent)), sent,
                        "recompressed -> chunkraft's HTTP consumer")
    # Kafka's rule: a client fetching below v10 cannot read a zstd topic.
    with wire(cluster) as connection:
        old = connection.call(FETCH, 9, fetch_request(topic, PARTITIONS, 9))
    assert {p["error_code"] for p in old["responses"][0]["partitions"]} == {
        UNSUPPORTED_COMPRESSION_TYPE}
    assert create_topic(cluster, "z-brotli", configs={"compression.type": "brotli"}) == \
        INVALID_CONFIG


def produce_raw(cluster: LocalCluster, topic: str, version: int, records: bytes
                ) -> dict[str, Any]:
    """Partition 0's answer to a raw Produce, from its leader (the brokers answering
    NOT_LEADER_OR_FOLLOWER are passed over)."""
    partition: dict[str, Any] = {}
    for address in cluster.kafka_bootstrap_servers.split(","):
        with KafkaWire(address) as connection:
            assert connection.sasl_plain("admin", cluster.admin_token)["error_code"] == 0
            answer = connection.call(PRODUCE, version, {
                "transactional_id": None, "acks": -1, "timeout_ms": 30_000,
                "topic_data": [{"name": topic, "partition_data": [
                    {"index": 0, "records": records}]}]})
        partition = answer["responses"][0]["partition_responses"][0]
        if partition["error_code"] != NOT_LEADER_OR_FOLLOWER:
            return partition
    return partition


def test_zstd_needs_produce_v7_and_a_codec_kafka_lacks_is_unsupported(
        cluster: LocalCluster) -> None:
    topic = "z-raw"
    assert create_topic(cluster, topic, partitions=1) == 0
    zstd = build_batch([(b"k", b"zstd-%d" % i, 1) for i in range(10)], compression=4)
    old = produce_raw(cluster, topic, 6, zstd)
    assert old["error_code"] == UNSUPPORTED_COMPRESSION_TYPE  # v6 has no error_message
    assert produce_raw(cluster, topic, 7, zstd)["error_code"] == 0
    unknown = bytearray(build_batch([(b"k", b"v", 1)]))
    struct.pack_into(">h", unknown, 21, 5)  # codec id 5, CRC-valid
    struct.pack_into(">I", unknown, 17, crc32c(bytes(unknown[21:])))
    refused = produce_raw(cluster, topic, 9, bytes(unknown))
    assert refused["error_code"] == UNSUPPORTED_COMPRESSION_TYPE, refused
    assert stored_codecs(cluster, topic, partitions=1) == {Codec.ZSTD.value: 1}
