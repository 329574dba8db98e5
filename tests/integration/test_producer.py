"""The Producer against real broker agents (3 controllers + 3 brokers on 127.0.0.1):
idempotent batches land once each, in send order per partition, keyed records where Kafka's
partitioner puts them; nothing acknowledged is lost nor duplicated through kill -9 of a leader;
KIP-253 re-partitioning after createPartitions; transactions when the coordinator is there.

One cluster for the module; every test uses topics of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.client.metadata import ClusterMetadata
from chunkraft.client.partitioner import partition_for_key
from chunkraft.client.producer import Producer, ProducerError
from chunkraft.dataplane.record_batch import Record
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.protocol.coordinators import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopicRequest,
)
from tests.support.brokers import broker_cluster, wait_until

CONTROLLER_PROPERTIES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
}
MAX_FETCHES = 500


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("producer"), properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        yield running


@pytest.fixture
def brokers(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """Every controller and broker running, ready and unfenced."""
    cluster.start()
    cluster.wait_ready(timeout=60)
    for broker_id, node in cluster.broker_nodes.items():
        if not node.running:
            cluster.start_broker(broker_id)
    cluster.wait_brokers_ready(timeout=60)
    yield cluster


@pytest.fixture
def admin(brokers: LocalCluster) -> Iterator[AdminClient]:
    with AdminClient(brokers.urls, CommandConfig(token=brokers.admin_token)) as client:
        yield client


def bootstrap(cluster: LocalCluster) -> list[str]:
    return [cluster.broker_url(b) for b in cluster.broker_nodes]


def producer(cluster: LocalCluster, **options: object) -> Producer:
    return Producer(bootstrap(cluster), token=cluster.admin_token, verify=cluster.verify,
                    **options)  # type: ignore[arg-type]


def wait_topic(cluster: LocalCluster, topic: str, partitions: int) -> None:
    """Until a broker's metadata shows every partition of ``topic`` with a leader."""
    metadata = ClusterMetadata(bootstrap(cluster), token=cluster.admin_token,
                               verify=cluster.verify)

    def ready() -> bool:
        metadata.refresh([topic])
        parts = metadata.partitions_for(topic)
        return len(parts) == partitions and all(p.leader >= 0 for p in parts)

    try:
        wait_until(ready, f"{topic} with {partitions} led partitions", 30, 0.1)
    finally:
        metadata.close()


def read_partition(cluster: LocalCluster, topic: str, partition: int) -> list[Record]:
    """Every record of the partition up to its high watermark, from its leader."""
    metadata = ClusterMetadata(bootstrap(cluster), token=cluster.admin_token,
                               verify=cluster.verify)
    out: list[Record] = []
    try:
        for _ in range(MAX_FETCHES):
            metadata.refresh([topic])
            url = metadata.leader_url(topic, partition)
            assert url is not None
            with BrokerClient(url, token=cluster.admin_token, verify=cluster.verify,
                              timeout=30) as broker:
                offset = out[-1].offset + 1 if out else 0
                part, got = broker.fetch_records(topic, partition, offset, max_wait_ms=0)
            if part.error_code != 0:
                time.sleep(0.1)
                continue
            out.extend(got)
            if not got and offset >= part.high_watermark:
                return out
    finally:
        metadata.close()
    raise AssertionError(f"could not read {topic}-{partition}")


def test_idempotent_batches_land_once_in_order_keyed_by_murmur2(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("orders", 3, 3)
    wait_topic(brokers, "orders", 3)
    count = 3000
    with producer(brokers, linger_ms=5, batch_size=100) as sender:
        started = time.monotonic()
        futures = [sender.send("orders", f"v{i}".encode(), key=f"k{i % 50}".encode())
                   for i in range(count)]
        sender.flush(timeout=120)
        elapsed = time.monotonic() - started
        metas = [f.get(0) for f in futures]
        unkeyed = [sender.send("orders", b"u%d" % i) for i in range(300)]
        sender.flush(timeout=60)
        assert sender.producer_id[0] >= 0
    print(json.dumps({"producer_records_per_s": round(count / elapsed),
                      "records": count, "seconds": round(elapsed, 2)}))
    for i, meta in enumerate(metas):
        assert meta.partition == partition_for_key(f"k{i % 50}".encode(), 3)
    by_partition: dict[int, list[str]] = {}
    for i, meta in enumerate(metas):
        by_partition.setdefault(meta.partition, []).append(f"v{i}")
    unkeyed_partitions = [f.get(0).partition for f in unkeyed]
    # Sticky batches: unkeyed records go out 100 at a time to one partition, round-robin.
    assert len(set(unkeyed_partitions)) == 3
    for partition, values in by_partition.items():
        stored = [r.value.decode() for r in read_partition(brokers, "orders", partition)
                  if r.value is not None and r.value.startswith(b"v")]
        assert stored == values, f"partition {partition}: not once each in send order"
    offsets = sorted((m.partition, m.offset) for m in metas)
    assert len(set(offsets)) == count


def test_nothing_acknowledged_is_lost_or_duplicated_through_kill_9_of_a_leader(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("durable-p", 1, 3)
    wait_topic(brokers, "durable-p", 1)
    metadata = ClusterMetadata(bootstrap(brokers), token=brokers.admin_token,
                               verify=brokers.verify)
    metadata.refresh(["durable-p"])
    leader = metadata.leader("durable-p", 0)
    metadata.close()
    with producer(brokers, linger_ms=2, batch_size=20, delivery_timeout_ms=60_000,
                  request_timeout_ms=5_000) as sender:
        futures = []
        for i in range(1500):
            if i == 500:
                brokers.kill_broker(leader)
            futures.append(sender.send("durable-p", b"d%d" % i))
            if i % 100 == 0:
                time.sleep(0.05)
        sender.flush(timeout=90)
    acked = [i for i, f in enumerate(futures) if f.exception() is None]
    assert len(acked) == 1500, [f.exception() for f in futures if f.exception()][:3]
    stored = [r.value for r in read_partition(brokers, "durable-p", 0)]
    assert stored == [b"d%d" % i for i in range(1500)], "lost, duplicated or reordered"


def test_kip_253_keyed_records_not_yet_acknowledged_follow_the_new_partition_count(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("growing-p", 2, 3)
    wait_topic(brokers, "growing-p", 2)
    with producer(brokers, linger_ms=1, batch_size=10) as sender:
        first = [sender.send("growing-p", b"a%d" % i, key=b"key-%d" % i) for i in range(40)]
        sender.flush(timeout=60)
        assert all(f.get(0).partition == partition_for_key(b"key-%d" % i, 2)
                   for i, f in enumerate(first))
        admin.alter_topic_partitions("growing-p", 4)
        wait_topic(brokers, "growing-p", 4)
        # The producer still believes in 2 partitions: the broker refuses, the producer
        # refreshes and re-partitions these records with 4.
        assert sender.metadata.partition_count("growing-p") == 2
        second = [sender.send("growing-p", b"b%d" % i, key=b"key-%d" % i) for i in range(40)]
        sender.flush(timeout=60)
        metas = [f.get(0) for f in second]
        assert sender.metadata.partition_count("growing-p") == 4
    assert [m.partition for m in metas] == [partition_for_key(b"key-%d" % i, 4)
                                           for i in range(40)]
    for partition in range(4):
        values = [r.value for r in read_partition(brokers, "growing-p", partition)
                  if r.value is not None and r.value.startswith(b"b")]
        expected = [b"b%d" % i for i in range(40)
                    if partition_for_key(b"key-%d" % i, 4) == partition]
        assert values == expected


def read_committed(cluster: LocalCluster, topic: str, partition: int) -> list[bytes]:
    """The partition's values a read_committed consumer sees (up to the last stable offset)."""
    metadata = ClusterMetadata(bootstrap(cluster), token=cluster.admin_token,
                               verify=cluster.verify)
    try:
        metadata.refresh([topic])
        url = metadata.leader_url(topic, partition)
        assert url is not None
        out: list[bytes] = []
        with BrokerClient(url, token=cluster.admin_token, verify=cluster.verify,
                          timeout=30) as broker:
            offset = 0
            for _ in range(MAX_FETCHES):
                part, got = broker.fetch_records(topic, partition, offset, max_wait_ms=0,
                                                 isolation_level=1)
                assert part.error_code == 0, part
                out.extend(r.value for r in got if r.value is not None)
                if not got:
                    return out
                offset = got[-1].offset + 1
    finally:
        metadata.close()
    raise AssertionError(f"could not read {topic}-{partition}")


def test_transactions_commit_shows_abort_hides_and_a_zombie_is_fenced(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("txn-p", 2, 3)
    wait_topic(brokers, "txn-p", 2)
    with producer(brokers, transactional_id="tx-orders") as sender:
        sender.init_transactions()
        sender.begin_transaction()
        for i in range(20):
            sender.send("txn-p", b"c%d" % i, partition=i % 2)
        sender.commit_transaction()
        sender.begin_transaction()
        for i in range(10):
            sender.send("txn-p", b"x%d" % i, partition=i % 2)
        sender.abort_transaction()
        sender.begin_transaction()
        sender.send("txn-p", b"last", partition=0)
        sender.commit_transaction()

        def settled() -> bool:
            return b"last" in read_committed(brokers, "txn-p", 0)

        wait_until(settled, "the last transaction's marker written", 30, 0.2)
        values = read_committed(brokers, "txn-p", 0) + read_committed(brokers, "txn-p", 1)
        assert sorted(values) == sorted([b"c%d" % i for i in range(20)] + [b"last"])

        zombie_epoch = sender.producer_id
        with producer(brokers, transactional_id="tx-orders") as successor:
            successor.init_transactions()
            assert successor.producer_id[0] == zombie_epoch[0]
            assert successor.producer_id[1] > zombie_epoch[1]
            sender.begin_transaction()
            sender.send("txn-p", b"zombie", partition=1)
            with pytest.raises(ProducerError):
                sender.commit_transaction()
            successor.begin_transaction()
            successor.send("txn-p", b"successor", partition=1)
            successor.commit_transaction()
    wait_until(lambda: b"successor" in read_committed(brokers, "txn-p", 1),
               "the successor's transaction committed", 30, 0.2)
    assert b"zombie" not in read_committed(brokers, "txn-p", 1)


def test_offsets_sent_to_a_transaction_commit_with_it(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("txn-out", 1, 3)
    wait_topic(brokers, "txn-out", 1)
    with producer(brokers, transactional_id="tx-offsets") as sender:
        sender.init_transactions()
        sender.begin_transaction()
        sender.send("txn-out", b"processed", partition=0)
        sender.send_offsets_to_transaction({("txn-out", 0): 7}, "tx-group")
        sender.commit_transaction()
    url = bootstrap(brokers)[0]
    request = OffsetFetchRequest(group_id="tx-group", topics=(
        OffsetFetchTopicRequest(name="txn-out", partition_indexes=(0,)),))
    committed: list[int] = []

    def visible() -> bool:
        answer = httpx.post(f"{url}/broker/v1/find-coordinator", json={
            "key_type": 0, "keys": ["tx-group"]}, headers=brokers.headers,
            verify=brokers.verify, timeout=10).json()
        coordinator = answer["coordinators"][0]["url"]
        if not coordinator:
            return False
        fetched = OffsetFetchResponse.model_validate_json(httpx.post(
            f"{coordinator}/broker/v1/offset-fetch", content=request.model_dump_json(),
            headers={**brokers.headers, "content-type": "application/json"},
            verify=brokers.verify, timeout=10).content)
        committed[:] = [p.committed_offset for t in fetched.topics for p in t.partitions]
        return committed == [7]

    wait_until(visible, f"the transaction's offset committed (seen {committed})", 30, 0.2)
