"""The default partitioner: Kafka's murmur2 for keys, sticky round-robin batches otherwise."""

from __future__ import annotations

import pytest

from chunkraft.client.partitioner import StickyPartitioner, partition_for_key


def test_keys_go_where_kafka_puts_them() -> None:
    partitioner = StickyPartitioner()
    # The same function as the broker's key-range filter and the coordinators use.
    assert partition_for_key(b"a", 1000) == partitioner.partition("t", b"a", 1000)
    assert all(partitioner.partition("t", b"k%d" % i, 7)
               == partitioner.partition("u", b"k%d" % i, 7) for i in range(50))
    spread = {partitioner.partition("t", b"key-%d" % i, 4) for i in range(100)}
    assert spread == {0, 1, 2, 3}


def test_unkeyed_records_stick_to_one_partition_per_batch_round_robin() -> None:
    partitioner = StickyPartitioner()
    first = partitioner.partition("t", None, 3)
    assert all(partitioner.partition("t", None, 3) == first for _ in range(10))
    seen = [first]
    for _ in range(5):
        partitioner.next_batch("t", 3, seen[-1])
        seen.append(partitioner.partition("t", None, 3))
    assert seen == [(first + i) % 3 for i in range(6)]
    # Another thread already moved on: a stale completion does not move it again.
    partitioner.next_batch("t", 3, previous=(seen[-1] + 1) % 3)
    assert partitioner.partition("t", None, 3) == seen[-1]


def test_a_smaller_count_moves_the_sticky_partition_inside_it() -> None:
    partitioner = StickyPartitioner(start=5)
    assert partitioner.partition("t", None, 10) == 5
    assert partitioner.partition("t", None, 3) < 3
    with pytest.raises(ValueError):
        partitioner.partition("t", None, 0)
