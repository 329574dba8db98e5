"""Metadata answers written from per-topic bytes kept between image changes.

A full Metadata answer of 10,000 partitions built as dicts and encoded field by field costs
tens of milliseconds per request on this machine, the event loop (and the GIL) held all along.
Topics change rarely next to how often clients poll Metadata, so each topic's encoded struct
is kept, anchored on the immutable :class:`~chunkraft.controller.image.TopicImage` it was
written from and on the set of online brokers (a broker fenced or back changes partitions'
errors and offline replicas): an answer is then the encoded head, the topics array's length,
the kept topics' bytes joined, and the tail.

The splice relies on Kafka's layout of MetadataResponse: ``topics`` is the last field but
``cluster_authorized_operations`` (versions 8-10) and, in flexible versions, the tagged-field
section; :func:`splice` checks the head it cuts against an encoding of the same answer with
no topics, so a layout it does not expect fails loudly rather than writing a wrong frame.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from chunkraft.controller.image import TopicImage
from chunkraft.kafka.codec.codegen import Encoder, build_encoder, uvarint
from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.schema.specs import MessageSpec, message_specs

__all__ = ["TopicBytesCache", "splice", "topic_encoder"]

_ENCODERS: dict[int, Encoder] = {}
MAX_KEPT_BYTES = 64 * 1024 * 1024
"""Encoded topics kept at most (least recently used ones go first)."""


def topic_encoder(version: int) -> Encoder:
    """The encoder of one MetadataResponseTopic struct at ``version``."""
    found = _ENCODERS.get(version)
    if found is None:
        response = message_specs()["MetadataResponse"]
        (topics,) = [f for f in response.fields if f.key == "topics"]
        spec = MessageSpec("MetadataResponseTopic", "data", None, response.valid,
                           response.flexible, topics.fields)
        found = _ENCODERS[version] = build_encoder(spec, version)
    return found


def _flexible(version: int) -> bool:
    return version in message_specs()["MetadataResponse"].flexible


def splice(answer: dict[str, Any], version: int, topic_bytes: list[bytes]) -> bytes:
    """The encoded MetadataResponse ``answer`` (whose ``topics`` is ignored) with the already
    encoded ``topic_bytes`` as its topics."""
    empty = encode("MetadataResponse", version, {**answer, "topics": []})
    flexible = _flexible(version)
    tail = (4 if 8 <= version <= 10 else 0) + (1 if flexible else 0)
    empty_array = b"\x01" if flexible else b"\x00\x00\x00\x00"
    cut = len(empty) - tail - len(empty_array)
    if empty[cut:cut + len(empty_array)] != empty_array:
        raise AssertionError(f"MetadataResponse v{version}: the topics array is not where "
                             "the splice expects it")
    count = uvarint(len(topic_bytes) + 1) if flexible else len(topic_bytes).to_bytes(4, "big")
    return b"".join((empty[:cut], count, *topic_bytes, empty[len(empty) - tail:]))


class TopicBytesCache:
    """Encoded topics by (topic id, version, chunks asked), kept while their TopicImage and
    the online brokers are the same objects (or equal). Used from one event loop."""

    def __init__(self, max_bytes: int = MAX_KEPT_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[Any, int, bool],
                                   tuple[TopicImage, frozenset[int], bytes]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def topic(self, topic: TopicImage, online: frozenset[int], version: int,
              with_chunks: bool, build: Callable[[], dict[str, Any]]) -> bytes:
        """The encoded struct of ``topic``, from the cache or written from ``build()``."""
        key = (topic.topic_id, version, with_chunks)
        kept = self._entries.get(key)
        if kept is not None and kept[0] is topic and (kept[1] is online or kept[1] == online):
            self._entries.move_to_end(key)
            self.hits += 1
            return kept[2]
        self.misses += 1
        data = topic_encoder(version)(build())
        if kept is not None:
            self._bytes -= len(kept[2])
        self._entries[key] = (topic, online, data)
        self._entries.move_to_end(key)
        self._bytes += len(data)
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            _, (_, _, dropped) = self._entries.popitem(last=False)
            self._bytes -= len(dropped)
        return data
