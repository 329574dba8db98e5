"""The chunk-aware Consumer against real processes (3 controllers + 3 brokers on 127.0.0.1):
KIP-1114 reads across a cut and a move (each record tagged with the broker that served it),
complementary key ranges read exactly once (with range offsets committed in a group),
read_committed, seek_to_timestamp across chunks, and KIP-253 ordering across a
createPartitions.

One cluster for the module; every test uses topics of its own. Test data is written with the
low-level BrokerClient (one batch per call, so the tests decide the batches).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.client.consumer import Consumer, ConsumerRecord
from chunkraft.client.consumer_fetcher import key_in_range
from chunkraft.dataplane.murmur2 import partition_for_key
from chunkraft.dataplane.record_batch import RecordInput
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.protocol.data_plane import (
    KEY_HASH_MAX,
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from tests.support.brokers import broker_cluster, wait_until

CONTROLLER_PROPERTIES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
BROKER_PROPERTIES = {"broker.heartbeat.interval.ms": "500"}
MAX_POLLS = 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("consumer"), properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        yield running


@pytest.fixture
def admin(cluster: LocalCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as client:
        yield client


def broker(cluster: LocalCluster, broker_id: int) -> BrokerClient:
    return BrokerClient(cluster.broker_url(broker_id), token=cluster.admin_token, timeout=30)


def consumer(cluster: LocalCluster, **options: Any) -> Consumer:
    urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
    return Consumer(urls, token=cluster.admin_token, verify=cluster.verify, **options)


def now_ms() -> int:
    return int(time.time() * 1000)


def leader_of(cluster: LocalCluster, topic: str, partition: int = 0) -> int:
    """The broker that answers a fetch of the partition (its leader), once there is one."""
    found: list[int] = []

    def elected() -> bool:
        for broker_id in sorted(cluster.broker_nodes):
            with broker(cluster, broker_id) as client:
                part, _ = client.fetch_records(topic, partition, 0, max_wait_ms=0)
            if part.error_code == 0:
                found[:] = [broker_id]
                return True
        return False

    wait_until(elected, f"a leader of {topic}-{partition}", 30, 0.1)
    return found[0]


def produce(cluster: LocalCluster, broker_id: int, topic: str, partition: int, count: int,
            records: Sequence[RecordInput], **options: Any) -> int:
    """Produces ``records`` as one batch; its base offset (retried while the leader settles)."""
    answers: list[Any] = []

    def done() -> bool:
        with broker(cluster, broker_id) as client:
            answer = client.produce_records(topic, partition, count, records, **options)
        answers[:] = [answer]
        return answer.error_code == 0

    wait_until(done, f"produce to {topic}-{partition} on broker {broker_id}", 30, 0.1)
    return int(answers[0].base_offset)


def read_all(reader: Consumer, count: int, *, timeout: float = 30.0) -> list[ConsumerRecord]:
    """Polls until ``count`` records came (bounded in polls and time)."""
    out: list[ConsumerRecord] = []
    ends = time.monotonic() + timeout
    for _ in range(MAX_POLLS):
        if len(out) >= count or time.monotonic() > ends:
            break
        out.extend(reader.poll(500))
    return out


def chunk_held(cluster: LocalCluster, admin: AdminClient, topic: str, start: int,
               replicas: list[int]) -> bool:
    chunks = [c for c in admin.list_chunks(topic, 0) if not c["is_active"]
              and c["start_offset"] == start]
    return bool(chunks) and chunks[0]["replica_ids"] == replicas \
        and chunks[0]["isr_ids"] == replicas


def test_after_a_cut_and_a_move_the_first_chunk_comes_from_its_replica_then_the_leader(
        cluster: LocalCluster, admin: AdminClient) -> None:
    """KIP-1114: 10 records on broker 0; a chunk cut to broker 1; 10 more; the first chunk
    moved to broker 2. The consumer reads 0..9 from broker 2 and 10..19 from broker 1."""
    admin.create_topic("c-kip", None, None, [[0]])
    leader_of(cluster, "c-kip")
    ts = now_ms()
    produce(cluster, 0, "c-kip", 0, 1, [(b"k", f"first-{i}".encode(), ts) for i in range(10)])
    (cut,) = admin.create_chunks([{"topic": "c-kip", "partition": 0, "replicas": [1]}])
    assert cut["error_code"] == 0, cut
    produce(cluster, 1, "c-kip", 0, 1, [(b"k", f"second-{i}".encode(), ts) for i in range(10)])
    (moved,) = admin.alter_chunk_assignments(
        [{"topic": "c-kip", "partition": 0, "start_offset": 0, "replicas": [2]}])
    assert moved["error_code"] == 0, moved
    wait_until(lambda: chunk_held(cluster, admin, "c-kip", 0, [2]),
               "the first chunk moved to broker 2", 30, 0.2)

    with consumer(cluster, client_id="kip-reader") as reader:
        reader.assign([("c-kip", 0)])
        reader.seek_to_beginning([("c-kip", 0)])
        got = read_all(reader, 20)
        assert reader.position(("c-kip", 0)) == 20
    assert [r.offset for r in got] == list(range(20))
    assert [r.value for r in got] == [f"first-{i}".encode() for i in range(10)] + [
        f"second-{i}".encode() for i in range(10)]
    assert {r.broker_id for r in got[:10]} == {2}
    assert {r.broker_id for r in got[10:]} == {1}


def test_two_consumers_with_complementary_key_ranges_read_every_record_once(
        cluster: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("c-ranges", 1, 3)
    leader = leader_of(cluster, "c-ranges")
    ts = now_ms()
    expected: set[bytes] = set()
    for batch in range(10):
        values = [(f"key-{batch}-{i}".encode(), f"v-{batch}-{i}".encode(), ts)
                  for i in range(20)]
        produce(cluster, leader, "c-ranges", 0, 1, values)
        expected.update(v for _, v, _ in values)
    half = KEY_HASH_MAX // 2
    lower, upper = (0, half), (half + 1, KEY_HASH_MAX)
    tp = ("c-ranges", 0)
    with consumer(cluster, group_id="ranges", client_id="low") as low, \
            consumer(cluster, group_id="ranges", client_id="high") as high:
        low.assign({tp: [lower]})
        high.assign({tp: [upper]})
        got_low = read_all(low, 1, timeout=10)
        got_high = read_all(high, 1, timeout=10)
        # Each polls until a poll brings nothing more.
        for reader, got in ((low, got_low), (high, got_high)):
            for _ in range(50):
                more = reader.poll(300)
                if not more:
                    break
                got.extend(more)
        low.commit()
        high.commit()
        assert high.committed_ranges(tp).get(upper) == 200
        assert high.committed(tp) == 200
    values_low = [r.value for r in got_low]
    values_high = [r.value for r in got_high]
    assert len(values_low) + len(values_high) == 200
    assert set(values_low) | set(values_high) == expected
    assert not set(values_low) & set(values_high)
    assert values_low and values_high
    assert all(key_in_range(r.key, lower) for r in got_low)
    assert all(key_in_range(r.key, upper) for r in got_high)

    # A new member of the group assigned the lower range starts at its committed offset.
    with consumer(cluster, group_id="ranges", client_id="low-2") as again:
        again.assign({tp: [lower]})
        assert again.position(tp) == 200


def test_read_committed_hides_aborted_records_and_read_uncommitted_shows_them(
        cluster: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("c-txn", None, None, [[0]])
    leader_of(cluster, "c-txn")
    ts = now_ms()
    produce(cluster, 0, "c-txn", 0, 1, [(None, f"plain-{i}".encode(), ts) for i in range(5)])
    with broker(cluster, 0) as b0:
        ids = b0.init_producer_id()
        assert ids.error_code == 0
        sequence = 0
        for outcome in (False, True):
            label = "committed" if outcome else "aborted"
            answer = b0.produce_records(
                "c-txn", 0, 1, [(None, f"{label}-{i}".encode(), ts) for i in range(5)],
                producer_id=ids.producer_id, producer_epoch=ids.producer_epoch,
                base_sequence=sequence, transactional=True, transactional_id="c-txn")
            assert answer.error_code == 0, answer
            sequence += 5
            marker = b0.write_txn_markers(WriteTxnMarkersRequest(markers=(WritableTxnMarker(
                producer_id=ids.producer_id, producer_epoch=ids.producer_epoch,
                transaction_result=outcome,
                topics=(WritableTxnMarkerTopic(name="c-txn", partition_indexes=(0,)),)),)))
            assert marker.markers[0].topics[0].partitions[0].error_code == 0, marker
    with consumer(cluster, isolation_level="read_committed") as committed:
        committed.assign([("c-txn", 0)])
        committed.seek_to_beginning()
        got = read_all(committed, 10)
        assert committed.position(("c-txn", 0)) == 17  # 15 records and 2 markers
    assert [r.value for r in got] == [f"plain-{i}".encode() for i in range(5)] + [
        f"committed-{i}".encode() for i in range(5)]
    with consumer(cluster) as everything:
        everything.assign([("c-txn", 0)])
        everything.seek_to_beginning()
        all_records = read_all(everything, 15)
    assert len(all_records) == 15
    assert [r.value for r in all_records][5:10] == [f"aborted-{i}".encode() for i in range(5)]


def test_seek_to_timestamp_finds_records_in_inactive_chunks_and_in_the_active_one(
        cluster: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("c-time", None, None, [[0]])
    leader_of(cluster, "c-time")
    base = now_ms() - 60_000
    produce(cluster, 0, "c-time", 0, 1, [(None, f"a-{i}".encode(), base + i) for i in range(10)])
    (cut,) = admin.create_chunks([{"topic": "c-time", "partition": 0, "replicas": [1]}])
    assert cut["error_code"] == 0, cut
    later = now_ms() + 1000
    produce(cluster, 1, "c-time", 0, 1, [(None, f"b-{i}".encode(), later + i)
                                          for i in range(10)])
    tp = ("c-time", 0)
    with consumer(cluster) as reader:
        reader.assign([tp])
        assert reader.seek_to_timestamp(tp, base + 4) == 4
        (first, *_) = read_all(reader, 1)
        assert (first.offset, first.value, first.broker_id) == (4, b"a-4", 0)
        assert reader.seek_to_timestamp(tp, later + 3) == 13
        (first, *_) = read_all(reader, 1)
        assert (first.offset, first.value, first.broker_id) == (13, b"b-3", 1)
        assert reader.seek_to_timestamp(tp, later + 60_000) == 20


@pytest.mark.parametrize("group_id", [None, "c-grow-g"])
def test_keys_moved_by_create_partitions_are_read_in_produce_order(
        cluster: LocalCluster, admin: AdminClient, group_id: str | None) -> None:
    """KIP-253: keyed records on 1 partition (small batches), the topic grown to 2 partitions,
    more records of the same keys (some now on partition 1). A consumer reading both
    partitions, one batch per fetch, sees each key's records in the order produced (without
    a group it waits for its own position on partition 0; in a group, for the group's
    committed offset, which it commits itself)."""
    topic = "c-grow" if group_id is None else "c-grow-group"
    admin.create_topic(topic, None, None, [[0, 1, 2]])
    leader = leader_of(cluster, topic)
    keys = [f"key-{i}".encode() for i in range(8)]
    ts = now_ms()
    for round_ in range(6):
        produce(cluster, leader, topic, 0, 1,
                [(k, f"{k.decode()}:{round_}".encode(), ts) for k in keys])
    admin.alter_topic_partitions(topic, 2)

    def refused_old_count() -> bool:
        with broker(cluster, leader) as client:
            answer = client.produce_records(topic, 0, 1, [(b"x", b"probe", ts)])
        return answer.error_code == Errors.INVALID_PARTITION_COUNT.code

    wait_until(refused_old_count, "the leader knows the new partition count", 30, 0.1)
    leader_1 = leader_of(cluster, topic, 1)
    moved = [k for k in keys if partition_for_key(k, 2) == 1]
    assert moved, "some key must move to the new partition"
    for round_ in range(6, 9):
        for partition, owner in ((0, leader), (1, leader_1)):
            mine = [k for k in keys if partition_for_key(k, 2) == partition]
            produce(cluster, owner, topic, partition, 2,
                    [(k, f"{k.decode()}:{round_}".encode(), ts) for k in mine])
    with consumer(cluster, fetch_max_bytes=1, group_id=group_id) as reader:
        reader.assign([(topic, 0), (topic, 1)])
        reader.seek_to_beginning()
        got = read_all(reader, 8 * 9)
        if group_id is not None:
            # The gate committed partition 0 up to the records produced before the expansion.
            assert (reader.committed((topic, 0)) or 0) >= 6 * 8
    by_key: dict[bytes, list[int]] = {}
    for record in got:
        assert record.key is not None and record.value is not None
        if record.value == b"probe":
            continue
        by_key.setdefault(record.key, []).append(int(record.value.split(b":")[1]))
    assert set(by_key) == set(keys)
    for key, rounds in by_key.items():
        assert rounds == list(range(9)), (key, rounds)


def test_two_subscribed_members_of_a_group_share_the_partitions(
        cluster: LocalCluster, admin: AdminClient) -> None:
    """subscribe(): two members (each polling in its own thread, as two processes would) end
    with disjoint assignments covering both partitions, and together read every record."""
    admin.create_topic("c-group", 2, 3)
    ts = now_ms()
    for partition in (0, 1):
        owner = leader_of(cluster, "c-group", partition)
        produce(cluster, owner, "c-group", partition, 2,
                [(None, f"p{partition}-{i}".encode(), ts) for i in range(20)])
    seen: dict[str, list[ConsumerRecord]] = {"a": [], "b": []}
    assignments: dict[str, set[tuple[str, int]]] = {}
    errors: list[BaseException] = []
    stop = threading.Event()

    def member(name: str) -> None:
        try:
            with consumer(cluster, group_id="c-group-g", client_id=name,
                          session_timeout_ms=6000, enable_auto_commit=True,
                          auto_commit_interval_ms=500) as reader:
                reader.subscribe(["c-group"])
                ends = time.monotonic() + 60
                for _ in range(1000):
                    if stop.is_set() or time.monotonic() > ends:
                        break
                    seen[name].extend(reader.poll(300))
                    assignments[name] = reader.assignment()
        except BaseException as error:  # reported by the test below
            errors.append(error)

    threads = [threading.Thread(target=member, args=(n,), daemon=True) for n in ("a", "b")]
    for thread in threads:
        thread.start()
        time.sleep(1.0)

    def settled() -> bool:
        values = {r.value for rs in seen.values() for r in rs}
        a, b = assignments.get("a", set()), assignments.get("b", set())
        return (len(values) == 40 and a | b == {("c-group", 0), ("c-group", 1)}
                and bool(a) and bool(b) and not a & b)

    try:
        wait_until(lambda: settled() or bool(errors), "both members share the partitions",
                   60, 0.2)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not errors, errors
    assert {r.value for rs in seen.values() for r in rs} == {
        f"p{p}-{i}".encode() for p in (0, 1) for i in range(20)}


def test_the_producer_and_the_consumer_keep_each_keys_order_across_create_partitions(
        cluster: LocalCluster, admin: AdminClient) -> None:
    """End to end with the real Producer: keyed records, createPartitions while it produces
    (it re-partitions what the brokers refuse), then a transaction aborted and one committed;
    a read_committed Consumer of every partition sees each key's records in send order and
    nothing of the aborted transaction."""
    from chunkraft.client.producer import Producer

    topic = "c-e2e"
    admin.create_topic(topic, 1, 3)
    leader_of(cluster, topic)
    urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
    keys = [f"key-{i}" for i in range(8)]
    with Producer(urls, token=cluster.admin_token, verify=cluster.verify, linger_ms=1,
                  batch_size=4) as producer:
        sent = [producer.send(topic, f"{key}:{round_}", key=key)
                for round_ in range(4) for key in keys]
        producer.flush()
        admin.alter_topic_partitions(topic, 2)
        sent += [producer.send(topic, f"{key}:{round_}", key=key)
                 for round_ in range(4, 8) for key in keys]
        producer.flush()
    outcomes = [future.get(0) for future in sent]  # each acknowledged, none failed
    assert len({(o.partition, o.offset) for o in outcomes}) == len(outcomes), outcomes
    with Producer(urls, token=cluster.admin_token, verify=cluster.verify,
                  transactional_id="c-e2e-txn") as txn:
        txn.init_transactions()
        for outcome, round_ in ((False, 100), (True, 8)):
            txn.begin_transaction()
            for key in keys:
                txn.send(topic, f"{key}:{round_}", key=key)
            if outcome:
                txn.commit_transaction()
            else:
                txn.abort_transaction()
    with consumer(cluster, fetch_max_bytes=1, isolation_level="read_committed") as reader:
        partitions = reader.partitions_for(topic)
        assert partitions == [0, 1]
        reader.assign([(topic, p) for p in partitions])
        reader.seek_to_beginning()
        got = read_all(reader, 8 * 9)
        assert not reader.poll(500)
    by_key: dict[str, list[int]] = {}
    for record in got:
        assert record.value is not None
        key, round_text = record.value.decode().split(":")
        by_key.setdefault(key, []).append(int(round_text))
    assert by_key == {key: list(range(9)) for key in keys}, [
        (r.partition, r.offset, r.value) for r in got]


def test_a_subscribed_member_picks_up_new_partitions_and_keeps_each_keys_order(
        cluster: LocalCluster, admin: AdminClient) -> None:
    """subscribe() across createPartitions: the member notices the new partition count, joins
    again, gets partition 1 and reads it only after partition 0 reached the KIP-253 threshold
    (it commits partition 0 itself)."""
    topic = "c-sub-grow"
    admin.create_topic(topic, None, None, [[0, 1, 2]])
    leader = leader_of(cluster, topic)
    keys = [f"key-{i}".encode() for i in range(8)]
    ts = now_ms()
    got: list[ConsumerRecord] = []
    with consumer(cluster, group_id="c-sub-grow-g", session_timeout_ms=3000,
                  fetch_max_bytes=1) as reader:
        reader.subscribe([topic])
        got.extend(reader.poll(500))
        for round_ in range(3):
            produce(cluster, leader, topic, 0, 1,
                    [(k, f"{k.decode()}:{round_}".encode(), ts) for k in keys])
        admin.alter_topic_partitions(topic, 2)

        def refused_old_count() -> bool:
            with broker(cluster, leader) as client:
                answer = client.produce_records(topic, 0, 1, [(b"x", b"probe:-1", ts)])
            return answer.error_code == Errors.INVALID_PARTITION_COUNT.code

        wait_until(refused_old_count, "the leader knows the new partition count", 30, 0.1)
        leader_1 = leader_of(cluster, topic, 1)
        for round_ in range(3, 6):
            for partition, owner in ((0, leader), (1, leader_1)):
                mine = [k for k in keys if partition_for_key(k, 2) == partition]
                produce(cluster, owner, topic, partition, 2,
                        [(k, f"{k.decode()}:{round_}".encode(), ts) for k in mine])
        ends = time.monotonic() + 45
        for _ in range(MAX_POLLS):
            if len([r for r in got if r.key != b"x"]) >= 8 * 6 or time.monotonic() > ends:
                break
            got.extend(reader.poll(500))
        assert reader.assignment() == {(topic, 0), (topic, 1)}
    by_key: dict[bytes, list[int]] = {}
    for record in got:
        assert record.key is not None and record.value is not None
        if record.key != b"x":
            by_key.setdefault(record.key, []).append(int(record.value.split(b":")[1]))
    assert by_key == {k: list(range(6)) for k in keys}, [(r.partition, r.offset, r.value)
                                                         for r in got]


def test_the_consumer_reads_on_after_its_leader_is_killed(
        cluster: LocalCluster, admin: AdminClient) -> None:
    """kill -9 of the active chunk's leader while a consumer reads: it refreshes the metadata,
    reads on from the new leader and loses nothing. (Last in the module: it restarts the
    broker it killed.)"""
    topic = "c-failover"
    admin.create_topic(topic, None, None, [[0, 1, 2]])
    leader = leader_of(cluster, topic)
    assert leader == 0
    produce(cluster, 0, topic, 0, 1, [(None, f"before-{i}".encode(), now_ms())
                                       for i in range(10)], acks=-1)
    with consumer(cluster) as reader:
        reader.assign([(topic, 0)])
        reader.seek_to_beginning()
        got = read_all(reader, 10)
        try:
            cluster.kill_broker(0)
            new_leader = leader_of_other(cluster, topic, not_on=0)
            produce(cluster, new_leader, topic, 0, 1, [(None, f"after-{i}".encode(), now_ms())
                                                       for i in range(10)], acks=-1)
            got.extend(read_all(reader, 10, timeout=45))
        finally:
            cluster.start_broker(0)
            cluster.wait_brokers_ready(timeout=60)
    assert [r.value for r in got] == [f"before-{i}".encode() for i in range(10)] + [
        f"after-{i}".encode() for i in range(10)]
    assert {r.broker_id for r in got[10:]} == {new_leader}


def leader_of_other(cluster: LocalCluster, topic: str, *, not_on: int) -> int:
    found: list[int] = []

    def elected() -> bool:
        for broker_id in sorted(cluster.broker_nodes):
            if broker_id == not_on:
                continue
            with broker(cluster, broker_id) as client:
                part, _ = client.fetch_records(topic, 0, 0, max_wait_ms=0)
            if part.error_code == 0:
                found[:] = [broker_id]
                return True
        return False

    wait_until(elected, f"a new leader of {topic}-0", 30, 0.2)
    return found[0]
