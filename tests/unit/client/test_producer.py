"""The Producer against a fake cluster: batching, partitioning, idempotent retries, KIP-253
re-partitioning, delivery timeouts and the transactional API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chunkraft.client.partitioner import partition_for_key
from chunkraft.client.producer import (
    Producer,
    ProducerError,
    ProducerFencedError,
    TransactionError,
)
from chunkraft.error_codes import Errors
from tests.unit.client.producer_fakes import FakeCluster, once


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(topics={"t": 3})


def make(cluster: FakeCluster, **options: Any) -> Producer:
    options.setdefault("retry_backoff_ms", 5)
    return Producer([cluster.url(0)], transport=cluster.transport(),
                    async_transport=cluster.transport(), **options)


@pytest.fixture
def producer(cluster: FakeCluster) -> Iterator[Producer]:
    with make(cluster, linger_ms=20, batch_size=10) as sender:
        yield sender


def error_answer(code: Errors) -> Any:
    def answer(body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(200, json={"topics": [
            {"name": t["name"], "partitions": [
                {"index": p["index"], "error_code": code.code} for p in t["partitions"]]}
            for t in body["topics"]]})

    return answer


def test_keyed_records_are_batched_per_partition_by_murmur2(
        cluster: FakeCluster, producer: Producer) -> None:
    futures = [producer.send("t", b"v%d" % i, key=b"k%d" % i) for i in range(60)]
    producer.flush(timeout=10)
    metas = [f.get(0) for f in futures]
    assert [m.partition for m in metas] == [partition_for_key(b"k%d" % i, 3)
                                           for i in range(60)]
    for partition in range(3):
        expected = [b"v%d" % i for i in range(60) if metas[i].partition == partition]
        assert cluster.values("t", partition) == expected
        assert [m.offset for m in metas if m.partition == partition] == list(
            range(len(expected)))
    produces = [body for _, path, body in cluster.calls if path == "produce"]
    assert len(produces) <= 12  # batches of up to 10 records, several partitions a request
    assert all(t["partition_count"] == 3 for body in produces for t in body["topics"])
    paths = cluster.paths()
    assert paths[0] == "metadata"
    assert paths.index("init-producer-id") < paths.index("produce")
    assert producer.producer_id == (7, 0)


def test_unkeyed_records_stick_to_a_partition_per_batch(
        cluster: FakeCluster, producer: Producer) -> None:
    futures = [producer.send("t", b"u%d" % i) for i in range(30)]
    producer.flush(timeout=10)
    partitions = [f.get(0).partition for f in futures]
    assert [partitions[i * 10:(i + 1) * 10] for i in range(3)] == [
        [p] * 10 for p in partitions[::10]]
    assert len(set(partitions)) == 3


def test_a_leader_error_refreshes_metadata_and_retries_in_order(
        cluster: FakeCluster, producer: Producer) -> None:
    cluster.leaders[("t", 0)] = 1
    futures = [producer.send("t", b"a%d" % i, partition=0) for i in range(25)]
    producer.flush(timeout=10)
    assert all(f.exception() is None for f in futures)
    assert cluster.values("t", 0) == [b"a%d" % i for i in range(25)]
    assert cluster.paths().count("metadata") >= 1


def test_a_lost_answer_is_retried_and_deduplicated_by_sequence(
        cluster: FakeCluster, producer: Producer) -> None:
    def append_then_drop(body: dict[str, Any]) -> Exception:
        cluster._produce(0, body)
        return httpx.ReadError("connection reset after the append")

    cluster.scripts.append(once("produce", append_then_drop))
    futures = [producer.send("t", b"d%d" % i, partition=0) for i in range(10)]
    producer.flush(timeout=10)
    assert [f.get(0).offset for f in futures] == list(range(10))
    assert cluster.values("t", 0) == [b"d%d" % i for i in range(10)]


def test_retriable_errors_retry_and_others_fail_the_records(
        cluster: FakeCluster, producer: Producer) -> None:
    cluster.scripts.append(once("produce", error_answer(Errors.NOT_ENOUGH_REPLICAS), 2))
    ok = producer.send("t", b"x", partition=1)
    producer.flush(timeout=10)
    assert ok.get(0).offset == 0
    cluster.scripts.append(once("produce", error_answer(Errors.TOPIC_AUTHORIZATION_FAILED)))
    refused = producer.send("t", b"y", partition=1)
    producer.flush(timeout=10)
    with pytest.raises(ProducerError) as raised:
        refused.get(0)
    assert raised.value.error is Errors.TOPIC_AUTHORIZATION_FAILED


def test_records_fail_after_the_delivery_timeout(cluster: FakeCluster) -> None:
    cluster.scripts.append(once("produce", error_answer(Errors.REQUEST_TIMED_OUT), 10_000))
    with make(cluster, delivery_timeout_ms=300, linger_ms=0) as sender:
        future = sender.send("t", b"late", partition=2)
        sender.flush(timeout=10)
    with pytest.raises(ProducerError) as raised:
        future.get(0)
    assert raised.value.error is Errors.REQUEST_TIMED_OUT


def test_kip_253_unacknowledged_keyed_records_move_to_the_new_partition_count(
        cluster: FakeCluster, producer: Producer) -> None:
    producer.send("t", b"first", key=b"k").get(10)
    cluster.topics["t"] = 5  # createPartitions: the producer still believes in 3
    futures = [producer.send("t", b"v%d" % i, key=b"key%d" % i) for i in range(40)]
    explicit = producer.send("t", b"pinned", partition=2)
    producer.flush(timeout=10)
    assert [f.get(0).partition for f in futures] == [partition_for_key(b"key%d" % i, 5)
                                                    for i in range(40)]
    assert explicit.get(0).partition == 2
    for partition in range(5):
        values = [v for v in cluster.values("t", partition) if v and v.startswith(b"v")]
        assert values == [b"v%d" % i for i in range(40)
                          if partition_for_key(b"key%d" % i, 5) == partition]
    assert producer.metadata.partition_count("t") == 5


def test_an_unknown_topic_or_partition_is_refused_at_send(
        cluster: FakeCluster) -> None:
    with make(cluster, max_block_ms=100) as sender:
        with pytest.raises(ProducerError):
            sender.send("missing", b"x")
        with pytest.raises(ProducerError):
            sender.send("t", b"x", partition=3)


def test_non_idempotent_acks_1_sends_no_producer_id(cluster: FakeCluster) -> None:
    with make(cluster, acks=1, linger_ms=0) as sender:
        assert sender.send("t", b"x", partition=0).get(10).offset == 0
    assert "init-producer-id" not in cluster.paths()
    (batch,) = cluster.batches[("t", 0)]
    assert batch.producer_id == -1


# ------------------------------------------------------------------------ transactions


def test_a_transaction_adds_partitions_before_producing_and_ends(
        cluster: FakeCluster) -> None:
    with make(cluster, transactional_id="tx", linger_ms=1) as sender:
        with pytest.raises(TransactionError):
            sender.send("t", b"early")
        sender.init_transactions()
        assert sender.producer_id == (500, 0)
        sender.begin_transaction()
        sender.send("t", b"a", partition=0)
        sender.send("t", b"b", partition=1)
        sender.send_offsets_to_transaction({("t", 0): 5}, "group")
        sender.commit_transaction()
        sender.begin_transaction()
        sender.abort_transaction()  # nothing joined it: no EndTxn
    paths = [p for p in cluster.paths() if p != "metadata"]
    assert paths.index("add-partitions-to-txn") < paths.index("produce") < paths.index(
        "end-txn")
    assert paths.index("add-offsets-to-txn") < paths.index("txn-offset-commit") < paths.index(
        "end-txn")
    ends = [body for _, path, body in cluster.calls if path == "end-txn"]
    assert [e["committed"] for e in ends] == [True]
    assert all(b.transactional for b in cluster.batches[("t", 0)])
    assert [host for host, path, _ in cluster.calls if path == "end-txn"] == ["b1"]


def test_coordinator_errors_are_retried(cluster: FakeCluster) -> None:
    cluster.scripts.append(once("init-producer-id", lambda body: httpx.Response(
        200, json={"error_code": Errors.NOT_COORDINATOR.code}), 2))
    cluster.scripts.append(once("end-txn", lambda body: httpx.Response(
        200, json={"error_code": Errors.CONCURRENT_TRANSACTIONS.code})))
    with make(cluster, transactional_id="tx") as sender:
        sender.init_transactions()
        sender.begin_transaction()
        sender.send("t", b"a", partition=0)
        sender.commit_transaction()
    assert cluster.paths().count("find-coordinator") >= 2
    assert cluster.paths().count("end-txn") == 2


def test_a_failed_send_only_allows_abort(cluster: FakeCluster) -> None:
    with make(cluster, transactional_id="tx", linger_ms=0) as sender:
        sender.init_transactions()
        sender.begin_transaction()
        cluster.scripts.append(once("produce", error_answer(Errors.INVALID_TXN_STATE)))
        sender.send("t", b"a", partition=0)
        with pytest.raises(TransactionError):
            sender.commit_transaction()
        sender.abort_transaction()
        ends = [body["committed"] for _, path, body in cluster.calls if path == "end-txn"]
        assert ends == [False]


def test_a_fenced_producer_can_only_close(cluster: FakeCluster) -> None:
    with make(cluster, transactional_id="tx", linger_ms=0) as sender:
        sender.init_transactions()
        sender.begin_transaction()
        cluster.scripts.append(once("add-partitions-to-txn", lambda body: httpx.Response(
            200, json={"error_code": Errors.PRODUCER_FENCED.code})))
        future = sender.send("t", b"zombie", partition=0)
        with pytest.raises(ProducerFencedError):
            sender.commit_transaction()
        assert isinstance(future.exception(), ProducerFencedError)
        with pytest.raises(ProducerError):
            sender.send("t", b"more", partition=0)
        with pytest.raises(ProducerFencedError):
            sender.begin_transaction()


def test_a_records_future_calls_back_and_times_out(cluster: FakeCluster) -> None:
    with make(cluster, linger_ms=50) as sender:
        seen: list[int] = []
        future = sender.send("t", b"x", partition=0)
        assert not future.done()
        with pytest.raises(TimeoutError):
            future.get(0.001)
        future.add_done_callback(lambda f: seen.append(f.get(0).offset))
        sender.flush(timeout=10)
        assert future.done() and future.exception() is None and seen == [0]
        future.add_done_callback(lambda f: seen.append(-5))  # done: called at once
        assert seen == [0, -5]
        assert future.result(0).partition == 0


def test_a_moved_records_future_follows_it_to_its_new_batch(cluster: FakeCluster) -> None:
    with make(cluster, linger_ms=1, batch_size=3) as sender:
        sender.send("t", b"warm", partition=0).get(10)
        cluster.topics["t"] = 7
        callbacks: list[int] = []
        futures = [sender.send("t", b"m%d" % i, key=b"mk%d" % i) for i in range(9)]
        for future in futures:
            future.add_done_callback(lambda f: callbacks.append(f.get(0).partition))
        metas = [f.get(10) for f in futures]
    assert [m.partition for m in metas] == [partition_for_key(b"mk%d" % i, 7)
                                           for i in range(9)]
    assert sorted(callbacks) == sorted(m.partition for m in metas)


def _send_across_growth(cluster: FakeCluster, producer: Producer) -> list[Any]:
    """Sends 40 keyed records while the topic grows 3 -> 5; their metadata, after checking
    that each record was stored exactly once."""
    futures = [producer.send("t", b"g%d" % i, key=b"key%d" % i) for i in range(40)]
    producer.flush(timeout=10)
    metas = [f.get(0) for f in futures]
    stored = [v for p in range(5) for v in cluster.values("t", p)
              if v is not None and v.startswith(b"g")]
    assert sorted(stored) == sorted(b"g%d" % i for i in range(40))  # each once
    return metas


def test_kip_253_a_batch_that_may_have_been_written_is_not_re_partitioned(
        cluster: FakeCluster, producer: Producer) -> None:
    producer.send("t", b"warm", key=b"k").get(10)

    def append_grow_and_drop(body: dict[str, Any]) -> Exception:
        broker = cluster.leader(body["topics"][0]["name"],
                                body["topics"][0]["partitions"][0]["index"])
        cluster._produce(broker, body)
        cluster.topics["t"] = 5
        return httpx.ReadError("connection reset after the append")

    cluster.scripts.append(once("produce", append_grow_and_drop))
    metas = _send_across_growth(cluster, producer)
    moved = [i for i, m in enumerate(metas) if m.partition != partition_for_key(
        b"key%d" % i, 5)]
    assert moved  # the batch the broker wrote before the lost answer stayed behind
    # Only its records stayed behind.
    assert all(metas[i].partition == partition_for_key(b"key%d" % i, 3) for i in moved)


@pytest.mark.parametrize("after_append", [Errors.NOT_LEADER_OR_FOLLOWER,
                                          Errors.REQUEST_TIMED_OUT,
                                          Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND])
def test_kip_253_a_batch_refused_after_its_append_is_not_re_partitioned(
        cluster: FakeCluster, producer: Producer, after_append: Errors) -> None:
    """acks=all: the leader appended, then answered an error while waiting for the ISR (the
    expansion's leader epoch bump, a timeout, a shrunk ISR); the batch is on the log, so it
    must go again as it was, and the sequences after it must not be reused."""
    producer.send("t", b"warm", key=b"k").get(10)

    def append_grow_and_refuse(body: dict[str, Any]) -> httpx.Response:
        broker = cluster.leader(body["topics"][0]["name"],
                                body["topics"][0]["partitions"][0]["index"])
        cluster._produce(broker, body)
        cluster.topics["t"] = 5
        refused: httpx.Response = error_answer(after_append)(body)
        return refused

    cluster.scripts.append(once("produce", append_grow_and_refuse))
    metas = _send_across_growth(cluster, producer)
    assert len({(m.partition, m.offset) for m in metas}) == len(metas)
    for meta, index in zip(metas, range(40), strict=True):
        assert cluster.values("t", meta.partition)[meta.offset] == b"g%d" % index
