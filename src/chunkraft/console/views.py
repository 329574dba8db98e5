"""The console's read models: brokers, the topic list and a topic's partitions, as JSON-ready
values built from one committed image and filtered by :class:`~.access.ConsoleAccess`.

Kept cheap for large images: the sorted topic names are computed once per topics map (the
image's maps are immutable, so identity says whether it changed), a page of the topic list
walks the names from its token and stops once it is full, and a topic's partition rows are
kept per topic image (identity again), so a second look at a 10,000-partition topic costs a
dictionary hit.
"""

from __future__ import annotations

import base64
import bisect
import threading
from collections import OrderedDict
from typing import Any

from chunkraft.console.access import ConsoleAccess
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.image.topics import TopicImage
from chunkraft.protocol.acls import AclOperation
from chunkraft.records import PartitionRecord
from chunkraft.records.uuids import kafka_uuid_str

__all__ = [
    "MAX_PAGE_SIZE",
    "PRIOR_EPOCHS_SHOWN",
    "brokers_view",
    "decode_page_token",
    "encode_page_token",
    "partition_row",
    "topic_view",
    "topics_page",
]

MAX_PAGE_SIZE = 500
PRIOR_EPOCHS_SHOWN = 8
"""A partition row lists at most this many prior partition epochs (an expansion of a large topic
gives each new partition one per old partition); the partition's timeline has them all."""

_lock = threading.Lock()
_sorted_names: tuple[object, list[str]] = (None, [])
_ROWS_CACHED = 16
_rows: OrderedDict[int, tuple[TopicImage, list[list[Any]]]] = OrderedDict()


def sorted_topic_names(image: MetadataImage) -> list[str]:
    """Every topic name in order, computed once per topics map."""
    global _sorted_names
    by_name = image.topics.by_name
    cached_map, names = _sorted_names
    if cached_map is by_name:
        return names
    names = sorted(by_name)
    _sorted_names = (by_name, names)
    return names


def encode_page_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")


def decode_page_token(token: str) -> str | None:
    """The topic name a page token carries, None for a token this console did not make."""
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        name = raw.decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return name or None


def topics_page(access: ConsoleAccess, query: str, after: str | None,
                page_size: int) -> dict[str, Any]:
    """One page of the topics ``access`` may describe whose name holds ``query`` (any case),
    after the name ``after``; ``next`` is the next page's token (None on the last), ``total``
    the number of matches (None when counting them would mean authorizing every topic)."""
    image = access.image
    names = sorted_topic_names(image)
    needle = query.lower()
    start = bisect.bisect_right(names, after) if after is not None else 0
    rows: list[dict[str, Any]] = []
    more = False
    by_name = image.topics.by_name
    for index in range(start, len(names)):
        name = names[index]
        if needle and needle not in name.lower():
            continue
        if not access.topic(name):
            continue
        if len(rows) == page_size:
            more = True
            break
        rows.append(_topic_summary(by_name[name], access))
    total: int | None = None
    if access.unrestricted:
        total = (sum(1 for n in names if needle in n.lower()) if needle else len(names))
    return {"topics": rows, "total": total,
            "next": encode_page_token(rows[-1]["name"]) if more and rows else None,
            "may_create": access.cluster(AclOperation.CREATE)}


def _topic_summary(topic: TopicImage, access: ConsoleAccess) -> dict[str, Any]:
    partitions = topic.partitions
    first = partitions.get(0)
    factor = (len(first.replicas) - len(first.removing_replicas)) if first is not None else 0
    return {"name": topic.name, "topic_id": kafka_uuid_str(topic.topic_id),
            "partitions": len(partitions),
            "chunks": len(partitions) + topic.chunk_count(),
            "replication_factor": factor}


def partition_row(partition: PartitionRecord, inactive_chunks: int) -> list[Any]:
    """A partition as the table shows it: id, leader, replicas, ISR, adding, removing, leader
    epoch, partition epoch, active start offset, its start timestamp, chunks (the active one
    included), the number of prior partition epochs and the first of them as [id, epoch]."""
    priors = partition.prior_partition_epochs
    return [partition.partition_id, partition.leader, list(partition.replicas),
            list(partition.isr), list(partition.adding_replicas),
            list(partition.removing_replicas), partition.leader_epoch,
            partition.partition_epoch, partition.start_offset, partition.start_timestamp,
            inactive_chunks + 1, len(priors),
            [[p.partition_id, p.leader_epoch] for p in priors[:PRIOR_EPOCHS_SHOWN]]]


def _partition_rows(topic: TopicImage) -> list[list[Any]]:
    key = id(topic)
    with _lock:
        cached = _rows.get(key)
        if cached is not None and cached[0] is topic:
            _rows.move_to_end(key)
            return cached[1]
    chunks = topic.chunks
    partitions = topic.partitions
    rows = [partition_row(partitions[p], len(chunks.get(p, ()))) for p in sorted(partitions)]
    with _lock:
        _rows[key] = (topic, rows)  # the topic is held, so its id is not reused meanwhile
        while len(_rows) > _ROWS_CACHED:
            _rows.popitem(last=False)
    return rows


def topic_view(access: ConsoleAccess, topic: TopicImage) -> dict[str, Any]:
    """A topic's page: its id, partition rows, the brokers a cut or move may choose, and which
    actions ``access`` allows."""
    image = access.image
    summary = _topic_summary(topic, access)
    brokers = [{"broker_id": b.broker_id, "fenced": bool(b.fenced),
                "in_controlled_shutdown": bool(b.in_controlled_shutdown), "rack": b.rack}
               for b in image.brokers]
    return {**summary, "offset": image.offset, "rows": _partition_rows(topic),
            "brokers": brokers,
            "may_alter": access.topic(topic.name, AclOperation.ALTER),
            "may_describe_configs": access.topic(topic.name, AclOperation.DESCRIBE_CONFIGS)}


def brokers_view(access: ConsoleAccess) -> list[dict[str, Any]]:
    """Each registered broker with its state and the partitions and chunks it is a replica of
    (of the topics ``access`` may describe: counting the others would tell of them)."""
    image = access.image
    partitions: dict[int, int] = {}
    leaders: dict[int, int] = {}
    chunks: dict[int, int] = {}
    for topic in image.topics.by_id.values():
        if not access.unrestricted and not access.topic(topic.name):
            continue
        for partition in topic.partitions.values():
            for broker_id in partition.replicas:
                partitions[broker_id] = partitions.get(broker_id, 0) + 1
                chunks[broker_id] = chunks.get(broker_id, 0) + 1
            leaders[partition.leader] = leaders.get(partition.leader, 0) + 1
        for inactive in topic.chunks.values():
            for chunk in inactive:
                for broker_id in chunk.replicas:
                    chunks[broker_id] = chunks.get(broker_id, 0) + 1
    answer = []
    for broker in image.brokers:
        endpoint = broker.end_points[0] if broker.end_points else None
        answer.append({
            "broker_id": broker.broker_id, "fenced": bool(broker.fenced),
            "in_controlled_shutdown": bool(broker.in_controlled_shutdown),
            "rack": broker.rack, "broker_epoch": broker.broker_epoch,
            "endpoint": f"{endpoint.host}:{endpoint.port}" if endpoint is not None else None,
            "partitions": partitions.get(broker.broker_id, 0),
            "leaders": leaders.get(broker.broker_id, 0),
            "chunks": chunks.get(broker.broker_id, 0)})
    return answer
