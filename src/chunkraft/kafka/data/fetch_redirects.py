"""What one Kafka connection was told by ``preferred_read_replica``, and whether it listened.

A Fetch v11+ answer may send a consumer to the broker that serves its offset (KIP-392), but a
client may ignore the field: aiokafka reads it only with ``client_rack`` set, and the Java
client falls back to the leader when the named broker is not among the partition's replicas in
its Metadata. Such a client fetches the same offset from the same broker again. Kafka clients
keep one connection per broker and fetch a partition from one broker at a time, so a fetch
asking for the very offset this connection was redirected from is a redirect that was not
followed: from then on the partition is not redirected on this connection (the leader reads
the chunk for it, ``broker_agent/chunk_proxy.py``), so no client is sent away forever.

Bounded: at most ``MAX_PARTITIONS`` partitions are remembered per connection, the least recently
redirected forgotten first. Used from the connection's handlers on one event loop.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import TypeVar

__all__ = ["MAX_PARTITIONS", "FetchRedirects", "redirects_of"]

MAX_PARTITIONS = 10_000
_KEY = "fetch_redirects"

TopicPartition = tuple[str, int]
V = TypeVar("V")


class FetchRedirects:
    """One connection's redirects: the offset each partition was last redirected from, and the
    partitions whose redirects this connection does not follow (for good)."""

    def __init__(self, max_partitions: int = MAX_PARTITIONS) -> None:
        self.max_partitions = max_partitions
        self._redirected: OrderedDict[TopicPartition, int] = OrderedDict()
        self._ignored: OrderedDict[TopicPartition, None] = OrderedDict()

    def not_to_redirect(self, wanted: Iterable[tuple[str, int, int]]
                        ) -> frozenset[TopicPartition]:
        """Of ``wanted`` (topic, partition, fetch offset), the partitions not to redirect: those
        ignored before, and those asked again at the offset they were redirected from."""
        kept: set[TopicPartition] = set()
        for topic, partition, offset in wanted:
            key = (topic, partition)
            if self._redirected.get(key) == offset:
                del self._redirected[key]
                _bounded_put(self._ignored, key, None, self.max_partitions)
            if key in self._ignored:
                kept.add(key)
        return frozenset(kept)

    def answered(self, topic: str, partition: int, offset: int, preferred: int) -> None:
        """The answer for ``topic``-``partition`` at ``offset`` named ``preferred`` (-1: none,
        the partition was served here)."""
        key = (topic, partition)
        if preferred >= 0:
            _bounded_put(self._redirected, key, offset, self.max_partitions)
        else:
            self._redirected.pop(key, None)


def _bounded_put(kept: OrderedDict[TopicPartition, V], key: TopicPartition, value: V,
                 limit: int) -> None:
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > limit:
        kept.popitem(last=False)


def redirects_of(extras: dict[str, object]) -> FetchRedirects:
    """The connection's :class:`FetchRedirects`, kept in its session's ``extras``."""
    found = extras.get(_KEY)
    if not isinstance(found, FetchRedirects):
        found = FetchRedirects()
        extras[_KEY] = found
    return found
