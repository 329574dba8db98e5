"""The Producer's public API against a fake cluster: partitioning, batching, futures,
refusals at send."""

from __future__ import annotations

import pytest

from chunkraft.client.partitioner import partition_for_key
from chunkraft.client.producer import (
    Producer,
    ProducerError,
)
from tests.unit.client.producer_fakes import FakeCluster, make


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


def test_an_unknown_topic_or_partition_is_refused_at_send(
        cluster: FakeCluster) -> None:
    with make(cluster, max_block_ms=100) as sender:
        with pytest.raises(ProducerError):
            sender.send("missing", b"x")
        with pytest.raises(ProducerError):
            sender.send("t", b"x", partition=3)


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
