"""The producer's sender against a fake cluster: idempotent retries, delivery timeouts and
KIP-253 re-partitioning."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from chunkraft.client.partitioner import partition_for_key
from chunkraft.client.producer import (
    Producer,
    ProducerError,
)
from chunkraft.error_codes import Errors
from tests.unit.client.producer_fakes import FakeCluster, error_answer, make, once


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


def test_non_idempotent_acks_1_sends_no_producer_id(cluster: FakeCluster) -> None:
    with make(cluster, acks=1, linger_ms=0) as sender:
        assert sender.send("t", b"x", partition=0).get(10).offset == 0
    assert "init-producer-id" not in cluster.paths()
    (batch,) = cluster.batches[("t", 0)]
    assert batch.producer_id == -1


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
