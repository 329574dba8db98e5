"""Which broker serves a stock Kafka consumer an offset this broker does not hold (pure functions).

Stock Kafka consumers know nothing of chunks (KIP-1114): they fetch from the partition's leader,
or from the replica a fetch answer names in Fetch v11+'s ``preferred_read_replica`` (KIP-392).
A broker asked for an offset in a chunk it does not hold names the broker that serves it: for
an inactive chunk, the first live replica of its ISR (the brokers holding a full copy), in ISR
order, so every broker names the same one; for the active chunk, its leader. "Live" is what the
image says: registered and unfenced and, for a name given to a client, with an endpoint on the
client's listener (the only brokers its Metadata showed it).

:class:`ConsumerReads` is what the Kafka surface tells the fetch path about one request, whose
client is a stock consumer: whether it reads ``preferred_read_replica``, and which partitions
must not be redirected (the client came back for the offset it was sent away from: it ignores
the field). The HTTP surface passes none: chunkraft's own client knows chunks and goes to a
holder itself on ``NOT_LEADER_OR_FOLLOWER``.
"""

from __future__ import annotations

from dataclasses import dataclass

from chunkraft.broker_agent.chunk_lookup import ChunkLocation
from chunkraft.controller.image import MetadataImage
from chunkraft.records import ChunkRecord, PartitionRecord

__all__ = ["NO_BROKER", "ConsumerReads", "is_live", "live_holders", "serving_broker"]

NO_BROKER = -1
"""Kafka's "no preferred read replica" (and "no such broker")."""


@dataclass(frozen=True)
class ConsumerReads:
    """How one stock Kafka consumer's fetch treats an offset this broker does not hold.

    ``preferred_replica``: the request's version has ``preferred_read_replica`` (Fetch v11+),
    so the answer may name the broker that serves the offset instead of records.
    ``not_redirected``: (topic, partition) pairs answered otherwise even so (their client came
    back for the offset it was redirected from). A partition not redirected is read by the
    leader from a holder of the chunk and answered with the records (a non-leader answers
    ``NOT_LEADER_OR_FOLLOWER``: the client is wrong about the leader). ``listener``: the
    connection's listener, on which a named broker must have an endpoint. Immutable.
    """

    preferred_replica: bool
    listener: str | None = None
    not_redirected: frozenset[tuple[str, int]] = frozenset()

    def redirects(self, topic: str, partition: int) -> bool:
        """Whether an answer for ``topic``-``partition`` may name another broker."""
        return self.preferred_replica and (topic, partition) not in self.not_redirected


def is_live(image: MetadataImage, broker_id: int, listener: str | None = None) -> bool:
    """Registered and unfenced (with an endpoint named ``listener``, when given)."""
    registration = image.brokers.get(broker_id)
    if registration is None or registration.fenced:
        return False
    return listener is None or any(e.name == listener for e in registration.end_points)


def live_holders(chunk: ChunkRecord, image: MetadataImage, listener: str | None = None
                 ) -> tuple[int, ...]:
    """The members of ``chunk``'s ISR that are live (:func:`is_live`), in ISR order."""
    return tuple(b for b in chunk.isr if is_live(image, b, listener))


def serving_broker(located: ChunkLocation, partition: PartitionRecord, image: MetadataImage,
                   listener: str | None = None) -> int:
    """The broker a consumer reads ``located``'s offset from: the first live holder of its
    inactive chunk, or the active chunk's leader if live; :data:`NO_BROKER` when none is (or
    the offset is in no chunk)."""
    if not located.found:
        return NO_BROKER
    if located.chunk is None:
        return partition.leader if is_live(image, partition.leader, listener) else NO_BROKER
    holders = live_holders(located.chunk, image, listener)
    return holders[0] if holders else NO_BROKER
