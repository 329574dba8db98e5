"""Kafka's default partitioner: keyed records by murmur2, unkeyed ones sticky per batch.

- A record with a key goes to ``positive_murmur2(key) % partition_count``
  (:func:`chunkraft.dataplane.murmur2.partition_for_key`, byte for byte Kafka's), so the same
  key lands in the same partition as long as the count does not change (KIP-253 then moves
  keys; the producer re-partitions records not yet acknowledged).
- A record without a key goes to the topic's current "sticky" partition (KIP-480); the
  producer calls :meth:`StickyPartitioner.next_batch` when that partition's batch is full (or
  sent), so unkeyed records go round-robin one batch at a time: few, full batches.
"""

from __future__ import annotations

import itertools
import threading

from chunkraft.dataplane.murmur2 import partition_for_key

__all__ = ["StickyPartitioner", "partition_for_key"]


class StickyPartitioner:
    """Chooses partitions for records (see the module docstring). Thread-safe.

    Unkeyed records of a topic stay on one partition until :meth:`next_batch` moves the topic
    on to the next one (round-robin, starting at a per-producer offset so several producers do
    not all start on partition 0).
    """

    def __init__(self, start: int = 0) -> None:
        self._counter = itertools.count(start)
        self._sticky: dict[str, int] = {}
        self._lock = threading.Lock()

    def partition(self, topic: str, key: bytes | None, partition_count: int) -> int:
        """The partition of a record of ``topic`` with ``key`` among ``partition_count``."""
        if partition_count < 1:
            raise ValueError(f"topic {topic!r} has no partitions")
        if key is not None:
            return partition_for_key(key, partition_count)
        sticky = self._sticky.get(topic)
        if sticky is None or sticky >= partition_count:
            with self._lock:
                sticky = next(self._counter) % partition_count
                self._sticky[topic] = sticky
        return sticky

    def next_batch(self, topic: str, partition_count: int, previous: int | None = None) -> None:
        """The topic's sticky partition's batch is complete: move unkeyed records on.
        ``previous``: the partition whose batch completed; nothing moves if the sticky
        partition is already another one (another thread moved it first)."""
        with self._lock:
            current = self._sticky.get(topic)
            if previous is not None and current is not None and current != previous:
                return
            self._sticky[topic] = next(self._counter) % max(partition_count, 1)
