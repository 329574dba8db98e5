"""JSON for v3 resources, written from the image's records without per-item model objects.

A 10,000-partition topic with 50,000 chunks is one answer of about 30 MB of JSON; building a
pydantic model per chunk would cost seconds. Partitions and chunks are therefore written by
string templates (every value is an int, a bool, a list of ints or a name of Kafka's legal topic
characters, so none needs escaping but the base URL, escaped once), and small resources are
plain dicts for ``json.dumps``. The shapes are those of :mod:`chunkraft.api.v3.models`; the
unit tests validate every answer against those models.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any

from chunkraft.api.v3.common import Links
from chunkraft.controller.image import TopicImage
from chunkraft.protocol.acls import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
)
from chunkraft.records import (
    AccessControlEntryRecord,
    ChunkRecord,
    PartitionRecord,
    RegisterBrokerRecord,
)
from chunkraft.records.uuids import kafka_uuid_str

__all__ = [
    "FRAGMENTS",
    "FragmentCache",
    "TopicEncoder",
    "acl_dict",
    "broker_dict",
    "list_json",
    "list_json_pieces",
    "topic_dict",
]


def _escaped(text: str) -> str:
    """``text`` as it appears inside a JSON string."""
    return json.dumps(text)[1:-1]


def list_json(kind: str, self_url: str, next_url: str | None, offset: int,
              items: Iterable[str]) -> str:
    """A list resource around items that are already JSON."""
    return _list_open(kind, self_url, next_url, offset) + ",".join(items) + "]}"


def list_json_pieces(kind: str, self_url: str, next_url: str | None, offset: int,
                     items: Iterable[Iterable[bytes]]) -> bytes:
    """A list resource around items given as pieces of JSON, joined once."""
    pieces = [_list_open(kind, self_url, next_url, offset).encode()]
    for item in items:
        pieces.extend(item)
        pieces.append(b",")
    if len(pieces) > 1:
        pieces.pop()  # the last item's comma
    pieces.append(b"]}")
    return b"".join(pieces)


def _list_open(kind: str, self_url: str, next_url: str | None, offset: int) -> str:
    metadata = json.dumps({"self": self_url, "next": next_url, "metadata_offset": offset},
                          separators=(",", ":"))
    return f'{{"kind":"{kind}","metadata":{metadata},"data":['


def broker_dict(links: Links, broker: RegisterBrokerRecord, offset: int | None = None
                ) -> dict[str, Any]:
    endpoint = broker.end_points[0] if broker.end_points else None
    return {
        "kind": "KafkaBroker",
        "metadata": _metadata(links.broker(broker.broker_id),
                              f"{links.crn}/broker={broker.broker_id}", offset),
        "broker_id": broker.broker_id,
        "host": endpoint.host if endpoint is not None else None,
        "port": endpoint.port if endpoint is not None else None,
        "rack": broker.rack,
        "fenced": broker.fenced,
        "in_controlled_shutdown": broker.in_controlled_shutdown,
        "broker_epoch": broker.broker_epoch,
        "incarnation_id": kafka_uuid_str(broker.incarnation_id),
    }


def replication_factor_of(topic: TopicImage) -> int:
    """Partition 0's replicas, counting the target of a reassignment in progress."""
    first = topic.partitions.get(0)
    if first is None:
        return 0
    return len(first.replicas) - len(first.removing_replicas)


def topic_dict(links: Links, topic: TopicImage, offset: int | None = None) -> dict[str, Any]:
    partitions = len(topic.partitions)
    return {
        "kind": "KafkaTopic",
        "metadata": _metadata(links.topic(topic.name), f"{links.crn}/topic={topic.name}",
                              offset),
        "topic_name": topic.name,
        "topic_id": kafka_uuid_str(topic.topic_id),
        "is_internal": False,
        "replication_factor": replication_factor_of(topic),
        "partitions_count": partitions,
        "chunks_count": topic.chunk_count() + partitions,
        "partitions": {"related": links.partitions(topic.name)},
    }


def acl_dict(links: Links, acl: AccessControlEntryRecord) -> dict[str, Any]:
    return {
        "kind": "KafkaAcl",
        "metadata": {"self": links.acls()},
        "resource_type": AclResourceType(acl.resource_type).name,
        "resource_name": acl.resource_name,
        "pattern_type": AclPatternType(acl.pattern_type).name,
        "principal": acl.principal,
        "host": acl.host,
        "operation": AclOperation(acl.operation).name,
        "permission": AclPermissionType(acl.permission_type).name,
    }


def _metadata(self_url: str, crn: str, offset: int | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"self": self_url, "resource_name": crn}
    if offset is not None:
        metadata["metadata_offset"] = offset
    return metadata


def _offset_field(offset: int | None) -> str:
    return "" if offset is None else f',"metadata_offset":{offset}'


_CHUNK = (
    '{"kind":"KafkaChunk","metadata":{"self":"%s/%d","resource_name":"%s/chunk=%d"%s},'
    '"topic_name":"%s","partition_id":%d,"start_offset":%d,"stop_offset":%d,"end_offset":%d,'
    '"start_timestamp":%d,"chunk_epoch":%d,"is_active":%s,"leader_id":%d,"replica_ids":%s,'
    '"isr_ids":%s,"adding_replica_ids":%s,"removing_replica_ids":%s}'
)

_PARTITION = (
    '{"kind":"KafkaPartition","metadata":{"self":"%s","resource_name":"%s"%s},'
    '"topic_name":"%s","partition_id":%d,"leader_id":%d,"leader_epoch":%d,'
    '"partition_epoch":%d,"replica_ids":%s,"isr_ids":%s,"adding_replica_ids":%s,'
    '"removing_replica_ids":%s,"start_offset":%d,"start_timestamp":%d,'
    '"prior_partition_epochs":%s,"chunks_count":%d,"leader":%s,'
    '"replicas":{"related":"%s/replicas"},"chunks":{"related":"%s/chunks"}'
)
"""A partition without its closing brace: ``inactive_chunks`` may follow."""

_REPLICA = (
    '{"kind":"KafkaReplica","metadata":{"self":"%s/replicas/%d","resource_name":'
    '"%s/replica=%d"%s},"topic_name":"%s","partition_id":%d,"broker_id":%d,"is_leader":%s,'
    '"is_in_sync":%s,"broker":{"related":"%s/%d"}}'
)


class FragmentCache:
    """JSON already written, keyed by the identity of the immutable object it was written from.

    Images are immutable and share unchanged records between versions, so a partition whose
    PartitionRecord (or chunk tuple) is the very object of an earlier answer has the same JSON:
    describing a large topic again only writes what changed since. Each entry holds its object
    (its *anchor*, so an id is never reused while the entry lives) and entries are evicted
    least recently used past ``max_bytes`` of text. Not thread-safe: the event loop's only.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[Hashable, tuple[object, bytes]] = OrderedDict()

    def get(self, key: Hashable, anchor: object) -> bytes | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] is not anchor:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, anchor: object, text: bytes) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.size -= len(old[1])
        if len(text) > self.max_bytes:
            return
        self._entries[key] = (anchor, text)
        self.size += len(text)
        while self.size > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.size -= len(evicted[1])

    def clear(self) -> None:
        self._entries.clear()
        self.size = 0


FRAGMENTS = FragmentCache(64 * 1024 * 1024)
"""The controller's partition and chunk-list fragments: at most 64 MiB of JSON (UTF-8)."""


class TopicEncoder:
    """Writes one topic's partitions, replicas and chunks as JSON text, fast.

    Lists of broker ids repeat across a topic's partitions and chunks, so each distinct tuple
    is written once per encoder. Not thread-safe (one request).
    """

    __slots__ = ("_brokers_url", "_crn", "_ids", "_partitions_url", "_priors", "_tails",
                 "topic")

    def __init__(self, links: Links, topic: TopicImage) -> None:
        self.topic = topic
        self._partitions_url = _escaped(links.partitions(topic.name))
        self._brokers_url = _escaped(links.brokers())
        self._crn = _escaped(f"{links.crn}/topic={topic.name}")
        self._ids: dict[tuple[int, ...], str] = {(): "[]"}
        self._tails: dict[tuple[tuple[int, ...], ...], str] = {}
        # New partitions of one expansion share their prior epochs; by identity, since
        # hashing a tuple of thousands of entries per partition would cost as much as writing.
        self._priors: dict[int, tuple[Any, str]] = {}

    def _list(self, ids: tuple[int, ...]) -> str:
        text = self._ids.get(ids)
        if text is None:
            text = self._ids[ids] = "[" + ",".join(map(str, ids)) + "]"
        return text

    def inactive_chunk(self, chunk: ChunkRecord, offset: int | None = None) -> str:
        p = chunk.partition_id
        ids = self._list
        return _CHUNK % (
            f"{self._partitions_url}/{p}/chunks", chunk.start_offset,
            f"{self._crn}/partition={p}", chunk.start_offset, _offset_field(offset),
            self.topic.name, p, chunk.start_offset, chunk.stop_offset, chunk.end_offset,
            chunk.start_timestamp, chunk.chunk_epoch, "false", -1, ids(chunk.replicas),
            ids(chunk.isr), ids(chunk.adding_replicas), ids(chunk.removing_replicas))

    def active_chunk(self, partition: PartitionRecord, offset: int | None = None) -> str:
        p = partition.partition_id
        start = max(partition.start_offset, 0)
        ids = self._list
        return _CHUNK % (
            f"{self._partitions_url}/{p}/chunks", start, f"{self._crn}/partition={p}", start,
            _offset_field(offset), self.topic.name, p, start, -1, -1,
            partition.start_timestamp, partition.leader_epoch, "true", partition.leader,
            ids(partition.replicas), ids(partition.isr), ids(partition.adding_replicas),
            ids(partition.removing_replicas))

    def chunks(self, partition: PartitionRecord) -> list[str]:
        """Every chunk of the partition by start offset: the inactive ones, then the active."""
        chunk = self.inactive_chunk
        texts = [chunk(c) for c in self.topic.chunks_of(partition.partition_id)]
        texts.append(self.active_chunk(partition))
        return texts

    def partition(self, partition: PartitionRecord, include_chunks: bool,
                  offset: int | None = None) -> str:
        """The partition's JSON (with ``offset``: as a single resource, written afresh)."""
        if offset is None:
            return b"".join(self.partition_pieces(partition, include_chunks)).decode()
        inactive = self.topic.chunks.get(partition.partition_id, ())
        head = self._partition(partition, len(inactive), offset)
        if not include_chunks:
            return head + "}"
        chunks = self._inactive_chunks(partition.partition_id, inactive).decode()
        return f'{head},"inactive_chunks":{chunks}}}'

    def partition_pieces(self, partition: PartitionRecord, include_chunks: bool
                         ) -> tuple[bytes, ...]:
        """A list item's JSON as pieces to join, from two cached fragments: the partition
        itself (anchored on its record) and its inactive chunks (anchored on their tuple), so
        a leader epoch bump rewrites no chunk and a new chunk rewrites no other partition. The
        pieces are joined once for the whole list: a 22 MB answer is never copied per item."""
        p = partition.partition_id
        inactive = self.topic.chunks.get(p, ())
        key = (self._partitions_url, p, len(inactive))
        head = FRAGMENTS.get(key, partition)
        if head is None:
            head = self._partition(partition, len(inactive), None).encode()
            FRAGMENTS.put(key, partition, head)
        if not include_chunks:
            return head, b"}"
        return head, b',"inactive_chunks":', self._inactive_chunks(p, inactive), b"}"

    def _inactive_chunks(self, p: int, inactive: tuple[ChunkRecord, ...]) -> bytes:
        if not inactive:
            return b"[]"
        key = (self._partitions_url, p, "chunks")
        text = FRAGMENTS.get(key, inactive)
        if text is None:
            # An f-string per chunk, its replica lists written once per distinct combination:
            # the fastest way found to write 50,000 chunks (a first describe is uncached).
            head = f'{{"topic_name":"{self.topic.name}","partition_id":{p},"start_offset":'
            tails = self._tails
            texts = []
            for c in inactive:
                lists = (c.replicas, c.isr, c.adding_replicas, c.removing_replicas)
                tail = tails.get(lists)
                if tail is None:
                    tail = tails[lists] = self._chunk_tail(*lists)
                texts.append(f'{head}{c.start_offset},"stop_offset":{c.stop_offset},'
                             f'"end_offset":{c.end_offset},"start_timestamp":'
                             f'{c.start_timestamp},"chunk_epoch":{c.chunk_epoch}{tail}')
            text = ("[" + ",".join(texts) + "]").encode()
            FRAGMENTS.put(key, inactive, text)
        return text

    def _chunk_tail(self, replicas: tuple[int, ...], isr: tuple[int, ...],
                    adding: tuple[int, ...], removing: tuple[int, ...]) -> str:
        ids = self._list
        return (f',"is_active":false,"leader_id":-1,"replica_ids":{ids(replicas)},'
                f'"isr_ids":{ids(isr)},"adding_replica_ids":{ids(adding)},'
                f'"removing_replica_ids":{ids(removing)}}}')

    def _partition(self, partition: PartitionRecord, chunks: int, offset: int | None) -> str:
        p = partition.partition_id
        ids = self._list
        url = f"{self._partitions_url}/{p}"
        leader = partition.leader
        leader_link = "null" if leader < 0 else f'{{"related":"{url}/replicas/{leader}"}}'
        prior_text = self._prior_epochs(partition.prior_partition_epochs)
        return _PARTITION % (
            url, f"{self._crn}/partition={p}", _offset_field(offset), self.topic.name, p,
            leader, partition.leader_epoch, partition.partition_epoch, ids(partition.replicas),
            ids(partition.isr), ids(partition.adding_replicas),
            ids(partition.removing_replicas), max(partition.start_offset, 0),
            partition.start_timestamp, prior_text, chunks + 1, leader_link, url, url)

    def _prior_epochs(self, priors: tuple[Any, ...]) -> str:
        if not priors:
            return "[]"
        cached = self._priors.get(id(priors))
        if cached is not None and cached[0] is priors:
            return cached[1]
        text = "[" + ",".join(
            [f'{{"partition_id":{e.partition_id},"leader_epoch":{e.leader_epoch}}}'
             for e in priors]) + "]"
        self._priors[id(priors)] = (priors, text)
        return text

    def replica(self, partition: PartitionRecord, broker_id: int,
                offset: int | None = None) -> str:
        p = partition.partition_id
        url = f"{self._partitions_url}/{p}"
        return _REPLICA % (
            url, broker_id, f"{self._crn}/partition={p}", broker_id, _offset_field(offset),
            self.topic.name, p, broker_id, _bool(broker_id == partition.leader),
            _bool(broker_id in partition.isr), self._brokers_url, broker_id)


def _bool(value: bool) -> str:
    return "true" if value else "false"
