"""ClusterMetadata: what a client knows of the cluster, learnt from any broker.

A client (the producer, the consumer) asks a broker ``POST /broker/v1/metadata`` (the
controller's Metadata v13 answer, with chunks) and keeps the answer as immutable views:
brokers and their data-plane URLs, topics, partitions (leader, epochs, replicas, ISR, the
active chunk's start offset, KIP-253's prior partition epochs) and their inactive chunks
(KIP-1114). :meth:`ClusterMetadata.refresh` asks the brokers in turn (the known ones first,
then the bootstrap URLs) until one answers.

A broker's URL is ``<scheme>://<host>:<port>`` with the scheme of the first bootstrap URL
(every broker of a cluster serves the same scheme: chunkraft's LocalCluster and deployments
do).

Thread-safety: the views are immutable and swapped as a whole by a refresh, so readers on any
thread see one consistent answer; refreshes are serialized by a lock.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from chunkraft.error_codes import Errors
from chunkraft.protocol.topics import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
)

__all__ = [
    "BrokerInfo",
    "ChunkInfo",
    "ClusterMetadata",
    "MetadataUnavailableError",
    "PartitionInfo",
    "TopicInfo",
    "metadata_request",
]


class MetadataUnavailableError(Exception):
    """No broker answered a Metadata request (every URL tried failed); ``errors`` by URL."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("no broker answered the metadata request: " + "; ".join(
            f"{url}: {error}" for url, error in errors.items()))


@dataclass(frozen=True)
class BrokerInfo:
    """A registered broker: its id, address, data-plane URL, rack and whether it is fenced."""

    node_id: int
    host: str
    port: int
    url: str
    rack: str | None = None
    fenced: bool = False


@dataclass(frozen=True)
class ChunkInfo:
    """An inactive chunk of a partition (KIP-1114): offsets ``[start_offset, stop_offset]`` are
    served from it by its in-sync replicas; ``end_offset`` is the last offset it holds."""

    start_offset: int
    start_timestamp: int
    stop_offset: int
    end_offset: int
    chunk_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class PartitionInfo:
    """One partition: the leader of its active chunk (-1: none), epochs, replicas, the active
    chunk's ``start_offset`` and ``start_timestamp``, ``prior_partition_epochs`` (KIP-253: the
    (partition, leader epoch) pairs a partition created by an expansion must wait for) and its
    inactive ``chunks`` in offset order. ``error_code`` is Metadata's for this partition."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    start_offset: int = -1
    start_timestamp: int = -1
    prior_partition_epochs: tuple[tuple[int, int], ...] = ()
    chunks: tuple[ChunkInfo, ...] = ()
    error_code: int = 0


@dataclass(frozen=True)
class TopicInfo:
    """A topic as Metadata answered it: its partitions by index, or an error (unknown topic,
    not authorized) with none."""

    name: str
    topic_id: str | None
    error_code: int = 0
    error_message: str | None = None
    partitions: tuple[PartitionInfo, ...] = ()

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True)
class _View:
    """One Metadata answer, indexed."""

    cluster_id: str | None = None
    controller_id: int = -1
    offset: int = -1
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    fetched_at: float = 0.0


def metadata_request(topics: Iterable[str] | None, *, include_chunks: bool = True
                     ) -> MetadataRequest:
    """A MetadataRequest for ``topics`` by name (None: every topic)."""
    return MetadataRequest(
        topics=None if topics is None else tuple(MetadataRequestTopic(name=n) for n in topics),
        include_chunks=include_chunks)


def _partition(topic: str, p: MetadataResponsePartition) -> PartitionInfo:
    return PartitionInfo(
        topic=topic, partition=p.partition_index, leader=p.leader_id,
        leader_epoch=p.leader_epoch, replicas=tuple(p.replica_nodes), isr=tuple(p.isr_nodes),
        offline_replicas=tuple(p.offline_replicas), start_offset=p.start_offset,
        start_timestamp=p.start_timestamp,
        prior_partition_epochs=tuple((e.partition_index, e.leader_epoch)
                                     for e in p.prior_partition_epochs),
        chunks=tuple(sorted((ChunkInfo(c.start_offset, c.start_timestamp, c.stop_offset,
                                       c.end_offset, c.chunk_epoch, tuple(c.replicas),
                                       tuple(c.isr)) for c in p.chunks),
                            key=lambda c: c.start_offset)),
        error_code=p.error_code)


class ClusterMetadata:
    """A client's view of the cluster (see the module docstring), refreshed on demand.

    ``bootstrap``: broker URLs (``http(s)://host:port``) to ask when no known broker answers.
    ``topics``: the topics to ask for (:meth:`add_topics` adds more; none: every topic the
    principal may describe). ``token`` / ``verify`` / ``timeout`` / ``transport`` are httpx's
    (a bearer token, TLS verification, seconds per request, a test transport).

    Lookups never do I/O: they read the last answer (empty before the first
    :meth:`refresh`). Unknown topics or partitions give None (or -1 / empty).
    """

    def __init__(self, bootstrap: Sequence[str], *, token: str | None = None,
                 verify: ssl.SSLContext | bool = True, timeout: float = 30.0,
                 topics: Iterable[str] = (), include_chunks: bool = True,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not bootstrap:
            raise ValueError("bootstrap needs at least one broker URL")
        self.bootstrap = [url.rstrip("/") for url in bootstrap]
        self.scheme = urlsplit(self.bootstrap[0]).scheme or "http"
        self.include_chunks = include_chunks
        self._topics: set[str] = set(topics)
        self._view = _View()
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=timeout, verify=verify, transport=transport,
                                  headers={"authorization": f"Bearer {token}"} if token else {})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ClusterMetadata:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ refreshing

    @property
    def wanted_topics(self) -> frozenset[str]:
        """The topics a refresh asks for (empty: every topic)."""
        return frozenset(self._topics)

    def add_topics(self, names: Iterable[str]) -> bool:
        """Adds topics to ask for; True if any was new (a refresh is then due)."""
        before = len(self._topics)
        self._topics.update(names)
        return len(self._topics) != before

    def request(self) -> MetadataRequest:
        """The MetadataRequest a refresh sends."""
        return metadata_request(sorted(self._topics) if self._topics else None,
                                include_chunks=self.include_chunks)

    def candidate_urls(self) -> list[str]:
        """Where to ask, in order: known unfenced brokers, then the bootstrap URLs."""
        known = [b.url for b in self._view.brokers.values() if not b.fenced]
        return list(dict.fromkeys(known + self.bootstrap))

    def refresh(self, topics: Iterable[str] = ()) -> None:
        """Asks the brokers in turn (:meth:`candidate_urls`) for the wanted topics (plus
        ``topics``) and replaces the view with the first answer. Raises
        :class:`MetadataUnavailableError` if none answers."""
        self.add_topics(topics)
        body = type(self.request()).__pydantic_serializer__.to_json(self.request())
        errors: dict[str, str] = {}
        with self._lock:
            for url in self.candidate_urls():
                try:
                    answer = self._http.post(url + "/broker/v1/metadata", content=body,
                                             headers={"content-type": "application/json"})
                except httpx.HTTPError as error:
                    errors[url] = f"{type(error).__name__}: {error}"
                    continue
                if answer.status_code != 200:
                    errors[url] = f"HTTP {answer.status_code}: {answer.text[:200]}"
                    continue
                self.update(MetadataResponse.model_validate_json(answer.content))
                return
        raise MetadataUnavailableError(errors)

    def update(self, response: MetadataResponse) -> None:
        """Replaces the view with ``response`` (what :meth:`refresh` does with an answer; an
        async client may fetch the answer itself and hand it here)."""
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port,
                                         f"{self.scheme}://{b.host}:{b.port}", b.rack, b.fenced)
                   for b in response.brokers}
        topics: dict[str, TopicInfo] = {}
        for t in response.topics:
            if t.name is None:
                continue
            parts = tuple(sorted((_partition(t.name, p) for p in t.partitions),
                                 key=lambda p: p.partition))
            topics[t.name] = TopicInfo(t.name, t.topic_id, t.error_code, t.error_message, parts)
        self._view = _View(response.cluster_id, response.controller_id,
                           response.metadata_offset, brokers, topics, time.monotonic())

    # ------------------------------------------------------------------ lookups

    @property
    def cluster_id(self) -> str | None:
        return self._view.cluster_id

    @property
    def controller_id(self) -> int:
        return self._view.controller_id

    @property
    def metadata_offset(self) -> int:
        """The metadata log offset of the image the last answer was written from (-1: none)."""
        return self._view.offset

    @property
    def age(self) -> float:
        """Seconds since the last answer (infinite before the first)."""
        fetched = self._view.fetched_at
        return time.monotonic() - fetched if fetched else float("inf")

    def brokers(self) -> dict[int, BrokerInfo]:
        return dict(self._view.brokers)

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self._view.brokers.get(node_id)

    def broker_url(self, node_id: int) -> str | None:
        broker = self._view.brokers.get(node_id)
        return None if broker is None else broker.url

    def topics(self) -> dict[str, TopicInfo]:
        return dict(self._view.topics)

    def topic(self, name: str) -> TopicInfo | None:
        return self._view.topics.get(name)

    def topic_error(self, name: str) -> Errors | None:
        """The topic's Metadata error (None: known and fine, or not asked about)."""
        topic = self._view.topics.get(name)
        if topic is None or topic.error_code == 0:
            return None
        return Errors.for_code(topic.error_code)

    def partition_count(self, topic: str) -> int | None:
        """The topic's partition count, None if unknown (or in error)."""
        info = self._view.topics.get(topic)
        if info is None or info.error_code != 0 or not info.partitions:
            return None
        return len(info.partitions)

    def partitions_for(self, topic: str) -> list[PartitionInfo]:
        info = self._view.topics.get(topic)
        return [] if info is None else list(info.partitions)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        info = self._view.topics.get(topic)
        if info is None or not 0 <= partition < len(info.partitions):
            return None
        found = info.partitions[partition]
        if found.partition == partition:
            return found
        return next((p for p in info.partitions if p.partition == partition), None)

    def leader(self, topic: str, partition: int) -> int:
        """The leader of the partition's active chunk, -1 if none or unknown."""
        found = self.partition(topic, partition)
        return -1 if found is None else found.leader

    def leader_url(self, topic: str, partition: int) -> str | None:
        """The data-plane URL of the partition's leader, None if none or unknown."""
        leader = self.leader(topic, partition)
        return None if leader < 0 else self.broker_url(leader)

    def chunks(self, topic: str, partition: int) -> tuple[ChunkInfo, ...]:
        """The partition's inactive chunks in offset order (KIP-1114)."""
        found = self.partition(topic, partition)
        return () if found is None else found.chunks

    def prior_partition_epochs(self, topic: str, partition: int) -> tuple[tuple[int, int], ...]:
        """KIP-253: (prior partition, leader epoch) pairs of a partition made by an
        expansion; empty otherwise."""
        found = self.partition(topic, partition)
        return () if found is None else found.prior_partition_epochs
