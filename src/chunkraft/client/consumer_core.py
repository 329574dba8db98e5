"""The consumer's state, its plumbing (metadata, broker clients) and its assignment.

:class:`ConsumerCore` is the base of :class:`~chunkraft.client.consumer.Consumer`: it holds the
streams (one per assigned partition or key range), the group and KIP-253 state, and turns an
assignment into streams. Offsets (``consumer_offsets``), group membership and the KIP-253 gate
(``consumer_membership``) and polling (``consumer``) build on it, one module each, imported one
way.
"""

from __future__ import annotations

import contextlib
import ssl
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.consumer_fetcher import (
    FetchStream,
    KeyRange,
    StreamFetcher,
)
from chunkraft.client.consumer_group import GroupClient
from chunkraft.client.kip253 import ExpansionGate
from chunkraft.client.metadata import ClusterMetadata, MetadataUnavailableError, PartitionInfo
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    KEY_HASH_MAX,
)

__all__ = [
    "MAX_WAIT_MS",
    "MEMBERSHIP_ERRORS",
    "METADATA_MIN_INTERVAL_S",
    "WHOLE",
    "Assignment",
    "ConsumerCore",
    "ConsumerError",
    "TopicPartition",
]

TopicPartition = tuple[str, int]
Assignment = Sequence[TopicPartition] | Mapping[TopicPartition, Sequence[KeyRange]]

WHOLE: KeyRange = (0, KEY_HASH_MAX)
MAX_WAIT_MS = 200
"""The longest single fetch long-poll (the poll loop checks its own deadline between)."""
METADATA_MIN_INTERVAL_S = 0.1
MEMBERSHIP_ERRORS = frozenset({Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION,
                               Errors.UNKNOWN_MEMBER_ID})


class ConsumerError(Exception):
    """A consumer call that cannot succeed (unknown partition, no group for a commit, ...)."""


class ConsumerCore:
    """The state of a consumer and its assignment: not used alone, create a
    :class:`~chunkraft.client.consumer.Consumer` (whose docstring says what the options of
    ``__init__`` mean). Not thread-safe.
    """

    def __init__(self, bootstrap: str | Sequence[str], *, group_id: str | None = None,
                 client_id: str | None = None,
                 auto_offset_reset: Literal["earliest", "latest"] = "earliest",
                 isolation_level: Literal["read_uncommitted", "read_committed"] =
                 "read_uncommitted",
                 enable_auto_commit: bool = False, auto_commit_interval_ms: int = 5000,
                 max_poll_records: int = 500, fetch_max_bytes: int = 1024 * 1024,
                 session_timeout_ms: int = 10_000, token: str | None = None,
                 verify: ssl.SSLContext | bool = True, request_timeout_s: float = 30.0,
                 default_api_timeout_ms: int = 60_000,
                 metadata: ClusterMetadata | None = None) -> None:
        if auto_offset_reset not in ("earliest", "latest"):
            raise ValueError(f"auto_offset_reset must be earliest or latest, "
                             f"got {auto_offset_reset!r}")
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError(f"isolation_level must be read_uncommitted or read_committed, "
                             f"got {isolation_level!r}")
        urls = [bootstrap] if isinstance(bootstrap, str) else list(bootstrap)
        self.group_id = group_id
        self.client_id = client_id or f"consumer-{uuid.uuid4().hex[:12]}"
        self.auto_offset_reset = auto_offset_reset
        self.isolation_level = isolation_level
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_s = auto_commit_interval_ms / 1000
        self.max_poll_records = max_poll_records
        self.session_timeout_ms = session_timeout_ms
        self._token = token
        self._verify = verify
        self._timeout = request_timeout_s
        if default_api_timeout_ms <= 0:
            raise ValueError(f"default_api_timeout_ms must be positive, got "
                             f"{default_api_timeout_ms}")
        self.default_api_timeout_s = default_api_timeout_ms / 1000
        """How long an offset lookup (seeks, resets, timestamps) retries, refreshing the
        metadata between tries, before it raises: Kafka's ``default.api.timeout.ms``."""
        self._own_metadata = metadata is None
        self.metadata = metadata or ClusterMetadata(urls, token=token, verify=verify,
                                                    timeout=request_timeout_s)
        self._clients: dict[str, BrokerClient] = {}
        self._fetcher = StreamFetcher(self._partition_info, self._live_brokers,
                                      self._client_for, client_id=self.client_id,
                                      isolation_level=1 if isolation_level == "read_committed"
                                      else 0, max_bytes=fetch_max_bytes)
        self._group = GroupClient(group_id, self.metadata.candidate_urls, token=token,
                                  verify=verify, timeout=request_timeout_s) if group_id else None
        self._streams: dict[tuple[str, int, KeyRange | None], FetchStream] = {}
        self._gates: dict[TopicPartition, ExpansionGate | None] = {}
        self._subscription: tuple[str, ...] = ()
        self._member_id = ""
        self._generation = -1
        self._joined = False
        self._last_heartbeat = 0.0
        self._counts_at_join: dict[str, int] = {}
        self._last_refresh = 0.0
        self._last_commit = time.monotonic()
        self._group_offsets: dict[TopicPartition, int] = {}
        self._group_offsets_at = 0.0
        self._closed = False

    # ------------------------------------------------------------------ plumbing

    def _partition_info(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.metadata.partition(topic, partition)

    def _live_brokers(self) -> set[int]:
        return {b.node_id for b in self.metadata.brokers().values() if not b.fenced}

    def _client_for(self, broker_id: int) -> BrokerClient | None:
        url = self.metadata.broker_url(broker_id)
        if url is None:
            return None
        client = self._clients.get(url)
        if client is None:
            client = BrokerClient(url, token=self._token, verify=self._verify,
                                  timeout=self._timeout)
            self._clients[url] = client
        return client

    def _refresh(self, *, force: bool = False) -> None:
        """Refreshes the metadata, at most every 100 ms unless ``force``."""
        now = time.monotonic()
        if not force and now - self._last_refresh < METADATA_MIN_INTERVAL_S:
            return
        self._last_refresh = now
        topics = {s.topic for s in self._streams.values()} | set(self._subscription)
        # No broker answered: the next round tries again.
        with contextlib.suppress(MetadataUnavailableError):
            self.metadata.refresh(topics)

    def partitions_for(self, topic: str) -> list[int]:
        """The topic's partition ids (a metadata refresh first)."""
        self.metadata.add_topics([topic])
        self._refresh(force=True)
        return [p.partition for p in self.metadata.partitions_for(topic)]

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: Assignment) -> None:
        """Reads exactly these partitions (no group membership). A mapping gives key-hash
        ranges ``(lo, hi)`` (inclusive) per partition; an empty list: the whole partition.
        Positions of partitions (ranges) kept from the previous assignment stay."""
        if self._subscription:
            raise ConsumerError("assign() after subscribe(): unsubscribe first")
        self._set_assignment(partitions)

    def _set_assignment(self, partitions: Assignment) -> None:
        wanted: list[tuple[str, int, KeyRange | None]] = []
        if isinstance(partitions, Mapping):
            for (topic, p), ranges in partitions.items():
                if not ranges:
                    wanted.append((topic, p, None))
                for lo, hi in ranges:
                    if not 0 <= lo <= hi <= KEY_HASH_MAX:
                        raise ValueError(f"key range {lo}-{hi} is not within 0-{KEY_HASH_MAX}")
                    wanted.append((topic, p, None if (lo, hi) == WHOLE else (lo, hi)))
        else:
            wanted = [(topic, p, None) for topic, p in partitions]
        streams = {}
        for key in wanted:
            streams[key] = self._streams.get(key) or FetchStream(key[0], key[1], key[2])
        self._streams = dict(sorted(streams.items(), key=lambda kv: (
            kv[0][0], kv[0][1], kv[0][2] or (-1, -1))))
        self._gates = {tp: g for tp, g in self._gates.items()
                       if any(s.topic == tp[0] and s.partition == tp[1]
                              for s in self._streams.values())}
        self.metadata.add_topics({topic for topic, _, _ in wanted})

    def assignment(self) -> set[TopicPartition]:
        return {(s.topic, s.partition) for s in self._streams.values()}

    def subscribe(self, topics: Iterable[str]) -> None:
        """Joins the group (``group_id`` required) for ``topics``; the partitions come with
        the next :meth:`poll`."""
        if self._group is None:
            raise ConsumerError("subscribe() needs a group_id")
        self._subscription = tuple(sorted(set(topics)))
        self.metadata.add_topics(self._subscription)
        self._joined = False

    def _streams_of(self, tp: TopicPartition) -> list[FetchStream]:
        found = [s for s in self._streams.values() if (s.topic, s.partition) == tuple(tp)]
        if not found:
            raise ConsumerError(f"{tp[0]}-{tp[1]} is not assigned to this consumer")
        return found
