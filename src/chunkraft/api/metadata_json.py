"""The Metadata v13 answer as JSON, written from the image's records without pydantic models.

``POST /controller/v1/metadata`` of every topic of a 100,000-partition image is 21 MB of JSON.
Building :class:`~chunkraft.protocol.topics.MetadataResponse` for it took about 1.5 s (even
``model_construct`` costs 20 us a partition) with the event loop, and the GIL the Raft thread
needs, held all along. This module writes the very bytes ``model_dump_json`` writes for the
answer of :func:`chunkraft.api.authorized.describe_as` (same fields, order, separators and
string escapes; the unit tests compare them byte for byte), from string templates:

- every value of a partition or a chunk is an int or a list of ints, so none needs escaping;
  the few free strings (names asked for, messages, hosts, racks, the cluster id) go through
  ``json.dumps(ensure_ascii=False)``, which escapes exactly as pydantic does;
- a topic's text is kept in a :class:`TopicJsonCache`, anchored on the immutable TopicImage it
  was written from and on the set of online brokers: an unchanged topic is not rewritten;
- a changed topic is rewritten partition by partition: a partition whose PartitionRecord and
  chunk tuple are the very objects the kept text was written from, and whose replicas are
  online or not as they were, is copied from that text, so only what changed is encoded.

``topics.describe`` and ``describe_as`` stay the reference; this is the route's fast path.
"""

from __future__ import annotations

import json
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from typing import Any

from chunkraft.api.authorized import denied_message
from chunkraft.controller.image import BrokersImage, MetadataImage, TopicImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.protocol.topics import MetadataRequest, MetadataRequestTopic
from chunkraft.records import ChunkRecord, PartitionRecord
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal

__all__ = ["TOPIC_JSON", "TopicJsonCache", "metadata_json", "online_brokers"]

_NONE = Errors.NONE.code
_LEADER_NOT_AVAILABLE = Errors.LEADER_NOT_AVAILABLE.code
_ENTRY_OVERHEAD = 400
"""Bytes charged per kept topic beyond its text: the entry, its key and anchors."""
_PARTITION_OVERHEAD = 16
"""Bytes charged per partition of a kept topic: its id and its span's start."""


def _string(text: str | None) -> str:
    """``text`` as a JSON value, escaped as pydantic escapes it (UTF-8, not ``\\u`` forms)."""
    return "null" if text is None else json.dumps(text, ensure_ascii=False)


def online_brokers(brokers: BrokersImage) -> frozenset[int]:
    """The registered, unfenced brokers: the replicas ``describe`` counts as online."""
    return frozenset(b.broker_id for b in brokers if not b.fenced)


# ------------------------------------------------------------------ partitions and chunks

_PARTITION_FIELDS = itemgetter(*(PartitionRecord._fields.index(name) for name in (
    "partition_id", "replicas", "isr", "leader", "leader_epoch", "start_offset",
    "start_timestamp", "prior_partition_epochs")))
"""The fields a partition's JSON shows, in one call: faster than eight attribute reads."""


class _Writer:
    """Writes the partitions (and chunks) of one topic. Lists of broker ids and prior epochs
    repeat across a topic's partitions, so each distinct one is written once. Not shared."""

    __slots__ = ("_ids", "_priors", "_tails", "include_chunks", "online")

    def __init__(self, online: frozenset[int], include_chunks: bool) -> None:
        self.online = online
        self.include_chunks = include_chunks
        self._ids: dict[tuple[int, ...], str] = {(): "[]"}
        self._tails: dict[tuple[tuple[int, ...], ...], str] = {}
        # By identity: the new partitions of one expansion share one tuple of prior epochs,
        # and hashing thousands of entries per partition would cost as much as writing them.
        self._priors: dict[int, tuple[Any, str]] = {}

    def ids(self, ids: tuple[int, ...]) -> str:
        text = self._ids.get(ids)
        if text is None:
            text = self._ids[ids] = "[" + ",".join(map(str, ids)) + "]"
        return text

    def partition(self, p: PartitionRecord, chunks: tuple[ChunkRecord, ...]) -> str:
        """The partition's JSON (ASCII: every value is a number)."""
        (partition_id, replicas, isr, leader, leader_epoch, start_offset, start_timestamp,
         priors) = _PARTITION_FIELDS(p)
        online = self.online
        known = self._ids
        replica_text = known.get(replicas) or self.ids(replicas)
        isr_text = known.get(isr) or self.ids(isr)
        offline = "[]" if online.issuperset(replicas) else self.ids(
            tuple(r for r in replicas if r not in online))
        code = _NONE if leader in online else _LEADER_NOT_AVAILABLE
        prior_text = self._prior_epochs(priors) if priors else "[]"
        chunk_text = self._chunks(chunks) if chunks and self.include_chunks else "[]"
        return (f'{{"error_code":{code},"partition_index":{partition_id},"leader_id":{leader},'
                f'"leader_epoch":{leader_epoch},"replica_nodes":{replica_text},"isr_nodes":'
                f'{isr_text},"offline_replicas":{offline},"start_offset":{start_offset},'
                f'"start_timestamp":{start_timestamp},"prior_partition_epochs":{prior_text},'
                f'"chunks":{chunk_text}}}')

    def _prior_epochs(self, priors: tuple[Any, ...]) -> str:
        cached = self._priors.get(id(priors))
        if cached is not None and cached[0] is priors:
            return cached[1]
        text = "[" + ",".join(
            [f'{{"partition_index":{e.partition_id},"leader_epoch":{e.leader_epoch}}}'
             for e in priors]) + "]"
        self._priors[id(priors)] = (priors, text)
        return text

    def _chunks(self, chunks: tuple[ChunkRecord, ...]) -> str:
        tails = self._tails
        texts = []
        for c in chunks:
            lists = (c.replicas, c.isr, c.adding_replicas, c.removing_replicas)
            tail = tails.get(lists)
            if tail is None:
                ids = self.ids
                tail = tails[lists] = (
                    f'"replicas":{ids(c.replicas)},"isr":{ids(c.isr)},"adding_replicas":'
                    f'{ids(c.adding_replicas)},"removing_replicas":{ids(c.removing_replicas)}}}')
            texts.append(f'{{"start_offset":{c.start_offset},"start_timestamp":'
                         f'{c.start_timestamp},"stop_offset":{c.stop_offset},"end_offset":'
                         f'{c.end_offset},"chunk_epoch":{c.chunk_epoch},{tail}')
        return "[" + ",".join(texts) + "]"


# ------------------------------------------------------------------ topics


@dataclass(frozen=True, slots=True)
class _TopicText:
    """A topic's JSON and what it was written from: the topic image (so an id is never
    reused while the entry lives), the online brokers, and where each partition's text
    starts (``starts[i]`` for the i-th partition by id; it ends a comma before the next)."""

    topic: TopicImage
    online: frozenset[int]
    partition_ids: tuple[int, ...]
    starts: array[int]
    text: bytes

    def size(self) -> int:
        return len(self.text) + _ENTRY_OVERHEAD + _PARTITION_OVERHEAD * len(self.partition_ids)


class TopicJsonCache:
    """Each topic's Metadata JSON, kept per (topic id, chunks or not), LRU past ``max_bytes``.

    :meth:`topic_json` answers from the kept text when the topic image and the online brokers
    are those it was written from, and otherwise rewrites only the partitions that changed
    (see the module docstring). Entries are charged their text plus a small overhead per
    partition; the topic images they anchor are not charged (they are the live image's, or
    an older version of a topic sharing most of its records). Not thread-safe: the
    controller's event loop thread is its only user (the Metadata route runs on it).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.partitions_written = 0
        self.partitions_copied = 0
        self._entries: OrderedDict[tuple[Any, bool], _TopicText] = OrderedDict()

    def topic_json(self, topic: TopicImage, online: frozenset[int], include_chunks: bool
                   ) -> bytes:
        """The topic's JSON in a Metadata answer, with ``online`` the unfenced brokers."""
        key = (topic.topic_id, include_chunks)
        kept = self._entries.get(key)
        if kept is not None and kept.topic is topic and (
                kept.online is online or kept.online == online):
            self._entries.move_to_end(key)
            self.hits += 1
            return kept.text
        self.misses += 1
        entry = self._write(topic, _Writer(online, include_chunks), kept)
        self._put(key, entry)
        return entry.text

    def _write(self, topic: TopicImage, writer: _Writer, kept: _TopicText | None
               ) -> _TopicText:
        head = (f'{{"error_code":0,"error_message":null,"name":{_string(topic.name)},'
                f'"topic_id":"{kafka_uuid_str(topic.topic_id)}","partitions":[').encode()
        partitions = topic.partitions
        chunk_map = topic.chunks
        partition_ids = tuple(sorted(partitions))
        partition = writer.partition
        if kept is None:
            get_chunks = chunk_map.get
            pieces = [partition(partitions[i], get_chunks(i, ())) for i in partition_ids]
            written = len(pieces)
        else:
            reuse = _Reuse(kept, topic, writer)
            pieces = []
            written = 0
            for partition_id in partition_ids:
                p = partitions[partition_id]
                chunks = chunk_map.get(partition_id, ())
                piece = reuse.piece(partition_id, p, chunks)
                if piece is None:
                    piece = partition(p, chunks)
                    written += 1
                pieces.append(piece)
        self.partitions_written += written
        self.partitions_copied += len(partition_ids) - written
        # Piece i starts after the head, the pieces before it and a comma after each.
        starts = array("q", accumulate((len(piece) + 1 for piece in pieces[:-1]),
                                       initial=len(head)))
        text = head + ",".join(pieces).encode() + b"]}"
        return _TopicText(topic, writer.online, partition_ids, starts, text)

    def _put(self, key: tuple[Any, bool], entry: _TopicText) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.size -= old.size()
        size = entry.size()
        if size > self.max_bytes:
            return
        self._entries[key] = entry
        self.size += size
        while self.size > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.size -= evicted.size()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.size = 0


class _Reuse:
    """Finds, in a kept topic text, a partition's text that is still right."""

    __slots__ = ("_flipped", "_index", "_kept", "_old_chunks", "_old_partitions",
                 "_same_chunks")

    def __init__(self, kept: _TopicText, topic: TopicImage, writer: _Writer) -> None:
        self._kept = kept
        self._old_partitions = kept.topic.partitions
        self._old_chunks = kept.topic.chunks
        # Chunks only matter when asked for; with an untouched chunk map, none changed.
        self._same_chunks = not writer.include_chunks or self._old_chunks is topic.chunks
        # The brokers fenced, unfenced, registered or gone since the kept text was written.
        self._flipped = kept.online ^ writer.online
        self._index = {partition_id: i for i, partition_id in enumerate(kept.partition_ids)}

    def piece(self, partition_id: int, p: PartitionRecord, chunks: tuple[ChunkRecord, ...]
              ) -> str | None:
        i = self._index.get(partition_id)
        if i is None or self._old_partitions.get(partition_id) is not p:
            return None
        if not self._same_chunks and self._old_chunks.get(partition_id, ()) is not chunks:
            return None
        flipped = self._flipped
        if flipped and (p.leader in flipped or not flipped.isdisjoint(p.replicas)):
            return None
        kept = self._kept
        starts = kept.starts
        # Each piece ends a comma before the next one starts; the last one before "]}".
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(kept.text) - 2
        return kept.text[starts[i]:end].decode("ascii")


TOPIC_JSON = TopicJsonCache(128 * 1024 * 1024)
"""The controller's topic texts: at most 128 MiB (an every-topic answer of 100,000 partitions,
with and without chunks, fits; a larger image is written afresh as the cache turns over)."""


# ------------------------------------------------------------------ the answer


def metadata_json(image: MetadataImage, principal: Principal, authorizer: Authorizer | None,
                  request: MetadataRequest, *, cluster_id: str | None, controller_id: int,
                  cache: TopicJsonCache = TOPIC_JSON) -> bytes:
    """``describe_as(image, principal, authorizer, request, ...).model_dump_json()``, fast.

    Same answer, same bytes: brokers, then the topics asked for (every topic for null) that
    the principal may DESCRIBE (super users and ``authorizer`` None see all); a topic named in
    the request that the principal may not describe -> TOPIC_AUTHORIZATION_FAILED, whether it
    exists or not; unknown or malformed entries as ``topics.describe`` answers them.
    """
    online = online_brokers(image.brokers)
    include_chunks = request.include_chunks
    check = None
    if authorizer is not None and not authorizer.is_super_user(principal):
        def check(name: str) -> bool:
            return authorizer.authorize(image, principal, AclOperation.DESCRIBE,
                                        AclResourceType.TOPIC, name)

    pieces: list[bytes] = []
    if request.topics is None:
        for topic in image.topics:
            if check is None or check(topic.name):
                pieces.append(cache.topic_json(topic, online, include_chunks))
    else:
        seen: set[tuple[str | None, str | None]] = set()
        for wanted in request.topics:
            key = (wanted.name, wanted.topic_id)
            if key in seen:
                continue
            seen.add(key)
            found = _requested(image, wanted)
            name = found.name if isinstance(found, TopicImage) else wanted.name
            if check is not None and name is not None and not check(name):
                pieces.append(_topic_error(
                    Errors.TOPIC_AUTHORIZATION_FAILED.code,
                    denied_message(principal, AclOperation.DESCRIBE, name), name, None))
            elif isinstance(found, TopicImage):
                pieces.append(cache.topic_json(found, online, include_chunks))
            else:
                pieces.append(_topic_error(found[0].code, found[1], wanted.name,
                                           wanted.topic_id))
    head = (f'{{"throttle_time_ms":0,"cluster_id":{_string(cluster_id)},"controller_id":'
            f'{controller_id},"brokers":[{_brokers(image.brokers)}],"topics":[').encode()
    tail = f'],"metadata_offset":{image.offset}}}'.encode()
    # One join for the whole answer: a 21 MB answer is copied once, not once more per level.
    parts = [head]
    for piece in pieces:
        parts.append(piece)
        parts.append(b",")
    if pieces:
        parts.pop()
    parts.append(tail)
    return b"".join(parts)


def _brokers(brokers: BrokersImage) -> str:
    texts = []
    for b in brokers:
        endpoint = b.end_points[0] if b.end_points else None
        host = endpoint.host if endpoint is not None else ""
        port = endpoint.port if endpoint is not None else 0
        texts.append(f'{{"node_id":{b.broker_id},"host":{_string(host)},"port":{port},'
                     f'"rack":{_string(b.rack)},"fenced":{"true" if b.fenced else "false"}}}')
    return ",".join(texts)


def _requested(image: MetadataImage, wanted: MetadataRequestTopic
               ) -> TopicImage | tuple[Errors, str]:
    """The topic an entry names, or the error ``topics.describe`` answers for it."""
    if wanted.topic_id:
        try:
            topic_id = parse_kafka_uuid(wanted.topic_id)
        except ValueError:
            return Errors.INVALID_REQUEST, f"Invalid topic id {wanted.topic_id!r}."
        by_id = image.topics.get(topic_id)
        if by_id is None:
            return Errors.UNKNOWN_TOPIC_ID, f"Topic id {wanted.topic_id} does not exist."
        return by_id
    if wanted.name is None:
        return Errors.INVALID_REQUEST, "Neither topic name nor id were specified."
    by_name = image.topics.get_by_name(wanted.name)
    if by_name is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{wanted.name}' does not exist."
    return by_name


def _topic_error(code: int, message: str, name: str | None, topic_id: str | None) -> bytes:
    return (f'{{"error_code":{code},"error_message":{_string(message)},"name":{_string(name)},'
            f'"topic_id":{_string(topic_id)},"partitions":[]}}').encode()
