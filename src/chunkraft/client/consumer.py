"""Consumer: a chunk-aware, synchronous Kafka-style consumer over the brokers' data plane.

It reads every chunk of a partition where it lives (KIP-1114, :mod:`client.chunk_router`): an
inactive chunk from an in-sync replica chosen by the client id, the active chunk from its
leader, and reports which broker served each record (``ConsumerRecord.broker_id``). It may be
assigned whole partitions or key-hash ranges of one (the key-range fetch proposal: two
consumers with complementary ranges of a partition share it, each committing the offset of its
own ranges as ``range_offsets``), or subscribe to topics as a member of a group (the group
coordinator's JoinGroup / SyncGroup / Heartbeat; the member that leads assigns the partitions
round-robin). A partition created by an expansion is started at offset 0 only once the
offsets consumed on its prior partitions reached the KIP-253 thresholds (:mod:`client.kip253`),
so each key's records come out in the order they were produced.

Positions start at the group's committed offsets (range offsets for key ranges), else at
``auto_offset_reset``; an offset no chunk serves any more resets the same way.
Not thread-safe: one thread uses a consumer.
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
    ConsumerRecord,
    FetchStream,
    KeyRange,
    Outcome,
    StreamFetcher,
)
from chunkraft.client.consumer_group import GroupClient, GroupError
from chunkraft.client.kip253 import ExpansionGate, gate_for
from chunkraft.client.metadata import ClusterMetadata, MetadataUnavailableError, PartitionInfo
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchTopicRequest,
    RangeOffset,
    SyncGroupAssignment,
    SyncGroupRequest,
    TopicPartitions,
)
from chunkraft.protocol.data_plane import (
    EARLIEST_TIMESTAMP,
    KEY_HASH_MAX,
    LATEST_TIMESTAMP,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

__all__ = ["Consumer", "ConsumerError", "ConsumerRecord", "TopicPartition"]

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


class Consumer:
    """See the module docstring. ``bootstrap``: broker URLs; ``token`` / ``verify``: the bearer
    token and TLS verification of every request. ``isolation_level`` "read_committed" hides
    aborted transactions and stops at the last stable offset. ``enable_auto_commit`` commits the
    positions every ``auto_commit_interval_ms`` during :meth:`poll` and at :meth:`close`.
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

    def unsubscribe(self) -> None:
        self._leave()
        self._subscription = ()
        self._streams = {}

    def _streams_of(self, tp: TopicPartition) -> list[FetchStream]:
        found = [s for s in self._streams.values() if (s.topic, s.partition) == tuple(tp)]
        if not found:
            raise ConsumerError(f"{tp[0]}-{tp[1]} is not assigned to this consumer")
        return found

    # ------------------------------------------------------------------ positions

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """The next poll reads ``tp`` (every key range of it) from ``offset``."""
        for stream in self._streams_of(tp):
            stream.seek(offset)

    def seek_to_beginning(self, partitions: TopicPartition | Iterable[TopicPartition] = ()
                          ) -> None:
        """Every listed partition (none: all assigned) from its first chunk's start."""
        for tp in self._tps(partitions):
            self._seek_by_list_offsets(tp, EARLIEST_TIMESTAMP)

    def seek_to_end(self, partitions: TopicPartition | Iterable[TopicPartition] = ()) -> None:
        """Every listed partition (none: all assigned) from its end (the high watermark, or
        read_committed the last stable offset)."""
        for tp in self._tps(partitions):
            self._seek_by_list_offsets(tp, LATEST_TIMESTAMP)

    def _tps(self, partitions: TopicPartition | Iterable[TopicPartition]) -> list[TopicPartition]:
        if isinstance(partitions, tuple) and len(partitions) == 2 \
                and isinstance(partitions[0], str):
            return [(partitions[0], int(partitions[1]))]
        listed = [(str(t), int(p)) for t, p in partitions]
        return listed or sorted(self.assignment())

    def _seek_by_list_offsets(self, tp: TopicPartition, timestamp: int) -> None:
        streams = self._streams_of(tp)
        for attempt in range(20):
            if attempt or self.metadata.partition(*tp) is None:
                self._refresh(force=attempt == 0)
            offset = self._fetcher.list_offset(tp[0], tp[1], timestamp)
            if offset is not None and offset >= 0:
                for stream in streams:
                    stream.seek(offset)
                return
            time.sleep(min(0.05 * (attempt + 1), 0.5))
        raise ConsumerError(f"no offset for {tp[0]}-{tp[1]} at timestamp {timestamp}")

    def seek_to_timestamp(self, tp: TopicPartition, timestamp_ms: int) -> int:
        """Positions ``tp`` at its first record whose timestamp is >= ``timestamp_ms``, looking
        through the inactive chunks (on their replicas) before the active chunk; at the end
        when no record is that late. Returns the offset."""
        streams = self._streams_of(tp)
        found: int | None = None
        for attempt in range(3):
            if attempt:
                time.sleep(0.2 * attempt)
            # Fresh metadata each time: a broker's image may not have had the latest cut yet.
            self._refresh(force=True)
            info = self.metadata.partition(*tp)
            if info is None:
                continue
            found = self._offset_in_chunks(tp, info, timestamp_ms)
            if found is None:
                offset = self._fetcher.list_offset(tp[0], tp[1], timestamp_ms)
                if offset is None:
                    continue  # the leader did not answer: try again
                found = offset if offset >= 0 else None
            break
        if found is None:
            self._seek_by_list_offsets(tp, LATEST_TIMESTAMP)
            return streams[0].fetch_offset
        for stream in streams:
            stream.seek(found)
        return found

    def _offset_in_chunks(self, tp: TopicPartition, info: PartitionInfo, timestamp_ms: int
                          ) -> int | None:
        chunks = list(info.chunks)
        live = self._live_brokers()
        for i, chunk in enumerate(chunks):
            following = chunks[i + 1].start_timestamp if i + 1 < len(chunks) \
                else info.start_timestamp
            if 0 <= following < timestamp_ms:
                continue  # every record of this chunk was written before the next chunk began
            replicas = sorted(b for b in chunk.isr if b in live)
            for broker_id in replicas:
                offset = self._fetcher.list_offset(tp[0], tp[1], timestamp_ms, broker_id)
                if offset is not None and chunk.start_offset <= offset <= chunk.stop_offset:
                    return offset
                found = self._fetcher.first_at_or_after(tp[0], tp[1], broker_id,
                                                        chunk.start_offset, chunk.stop_offset,
                                                        timestamp_ms)
                if found is not None:
                    return found
                if offset is not None:
                    break  # the replica answered: the chunk has no record that late
        return None

    def position(self, tp: TopicPartition) -> int:
        """The offset of the next record :meth:`poll` hands out for ``tp`` (the lowest of its
        key ranges); positions a partition that has none yet."""
        streams = self._streams_of(tp)
        self._ensure_positions()
        return min(s.position for s in streams)

    def range_positions(self, tp: TopicPartition) -> dict[KeyRange, int]:
        """The position of each key range of ``tp`` (a whole partition: its one range)."""
        self._ensure_positions()
        return {s.key_range or WHOLE: s.position for s in self._streams_of(tp)}

    def _ensure_positions(self) -> None:
        unpositioned = [s for s in self._streams.values() if s.fetch_offset < 0]
        if not unpositioned:
            return
        committed = self._committed_raw({(s.topic, s.partition) for s in unpositioned}) \
            if self._group is not None else {}
        for stream in unpositioned:
            start = _start_from_commit(stream, committed.get((stream.topic, stream.partition)))
            if start is not None and start >= 0:
                stream.seek(start)
        for stream in unpositioned:
            if stream.fetch_offset < 0:
                self._reset(stream)

    def _reset(self, stream: FetchStream) -> None:
        timestamp = EARLIEST_TIMESTAMP if self.auto_offset_reset == "earliest" \
            else LATEST_TIMESTAMP
        self._seek_by_list_offsets((stream.topic, stream.partition), timestamp)

    # ------------------------------------------------------------------ commits

    def _committed_raw(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition,
                                                                    OffsetFetchPartition]:
        if self._group is None:
            return {}
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(set(tps)):
            by_topic.setdefault(topic, []).append(p)
        answer = self._group.offset_fetch(OffsetFetchRequest(
            group_id=self._group.group_id, require_stable=self.isolation_level ==
            "read_committed", topics=tuple(OffsetFetchTopicRequest(
                name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items())))
        if answer.error_code:
            raise GroupError(Errors.for_code(answer.error_code), answer.error_message)
        return {(t.name, p.partition_index): p for t in answer.topics for p in t.partitions
                if p.error_code == 0}

    def committed(self, tp: TopicPartition) -> int | None:
        """The group's committed offset of ``tp`` (None: none committed)."""
        found = self._committed_raw([tp]).get((tp[0], tp[1]))
        if found is None or found.committed_offset < 0:
            return None
        return int(found.committed_offset)

    def committed_ranges(self, tp: TopicPartition) -> dict[KeyRange, int]:
        """The group's committed range offsets of ``tp`` (empty: committed as a whole)."""
        found = self._committed_raw([tp]).get((tp[0], tp[1]))
        return {} if found is None else {(r.lo, r.hi): r.offset for r in found.range_offsets}

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commits ``offsets`` (default: every position) for the group. A partition read in
        key ranges commits each range's position as ``range_offsets`` and their lowest as its
        offset (a reader of the whole partition restarts from there)."""
        if self._group is None:
            raise ConsumerError("commit() needs a group_id")
        if offsets is None:
            self._ensure_positions()
        tps = sorted(offsets) if offsets is not None else sorted(self.assignment())
        by_topic: dict[str, list[OffsetCommitPartition]] = {}
        for topic, p in tps:
            streams = [s for s in self._streams.values() if (s.topic, s.partition) == (topic, p)]
            ranged = [s for s in streams if s.key_range is not None]
            if offsets is not None:
                offset = offsets[(topic, p)]
                ranges = tuple(RangeOffset(lo=s.key_range[0], hi=s.key_range[1], offset=offset)
                               for s in ranged if s.key_range is not None)
            else:
                offset = min(s.position for s in streams)
                ranges = tuple(RangeOffset(lo=s.key_range[0], hi=s.key_range[1],
                                           offset=s.position)
                               for s in ranged if s.key_range is not None)
            if ranged and len(ranged) != len(streams):
                ranges = ()  # the whole partition is read as well: its offset says it all
            by_topic.setdefault(topic, []).append(OffsetCommitPartition(
                partition_index=p, committed_offset=offset, range_offsets=ranges))
        if not by_topic:
            return
        answer = self._group.offset_commit(OffsetCommitRequest(
            group_id=self._group.group_id, generation_id=self._generation if self._joined
            else -1, member_id=self._member_id if self._joined else "",
            topics=tuple(OffsetCommitTopic(name=t, partitions=tuple(ps))
                         for t, ps in by_topic.items())))
        for result in answer.topics:
            for part in result.partitions:
                if part.error_code:
                    error = Errors.for_code(part.error_code)
                    if error in MEMBERSHIP_ERRORS:
                        self._joined = False
                    if error is Errors.UNKNOWN_MEMBER_ID:
                        self._member_id = ""
                    raise GroupError(error, f"commit of {result.name}-{part.partition_index}: "
                                     f"{part.error_message or error.message}")
        self._last_commit = time.monotonic()
        self._group_offsets_at = 0.0

    # ------------------------------------------------------------------ group membership

    def _ensure_membership(self) -> None:
        if not self._subscription or self._group is None:
            return
        now = time.monotonic()
        if self._joined and now - self._last_heartbeat >= self.session_timeout_ms / 3000:
            self._last_heartbeat = now
            answer = self._group.heartbeat(HeartbeatRequest(
                group_id=self._group.group_id, generation_id=self._generation,
                member_id=self._member_id))
            error = Errors.for_code(answer.error_code)
            if error in MEMBERSHIP_ERRORS:
                self._joined = False
            if error is Errors.UNKNOWN_MEMBER_ID:
                self._member_id = ""
            if self._joined and self._partition_counts() != self._counts_at_join:
                # The subscribed topics grew (or shrank): join again, so that the leader's
                # next assignment covers the new partitions.
                self._joined = False
        if not self._joined:
            self._join()

    def _partition_counts(self) -> dict[str, int]:
        """The subscribed topics' partition counts, from fresh metadata."""
        self._refresh(force=True)
        return {t: self.metadata.partition_count(t) or 0 for t in self._subscription}

    def _join(self) -> None:
        assert self._group is not None
        if self.enable_auto_commit and self._generation >= 0 and self._streams \
                and self._member_id:
            # The old generation may be gone: its offsets cannot be committed any more.
            with contextlib.suppress(GroupError):
                self.commit()
        for _ in range(50):
            joined = self._group.join_group(JoinGroupRequest(
                group_id=self._group.group_id, session_timeout_ms=self.session_timeout_ms,
                member_id=self._member_id, topics=self._subscription))
            error = Errors.for_code(joined.error_code)
            if joined.member_id:
                self._member_id = joined.member_id
            if error is Errors.UNKNOWN_MEMBER_ID:
                self._member_id = ""
                continue
            if error is not Errors.NONE:
                if error in MEMBERSHIP_ERRORS or error.retriable or \
                        error.name == "MEMBER_ID_REQUIRED":
                    time.sleep(0.1)
                    continue
                raise GroupError(error, joined.error_message)
            self._generation = joined.generation_id
            assignments: tuple[SyncGroupAssignment, ...] = ()
            if joined.leader == self._member_id:
                assignments = self._assign_members(
                    {m.member_id: m.topics for m in joined.members})
            synced = self._group.sync_group(SyncGroupRequest(
                group_id=self._group.group_id, generation_id=self._generation,
                member_id=self._member_id, assignments=assignments))
            error = Errors.for_code(synced.error_code)
            if error is not Errors.NONE:
                if error in MEMBERSHIP_ERRORS or error.retriable:
                    time.sleep(0.1)
                    continue
                raise GroupError(error, synced.error_message)
            self._set_assignment([(t.name, p) for t in synced.partitions for p in t.partitions])
            self._counts_at_join = self._partition_counts()
            self._joined = True
            self._last_heartbeat = time.monotonic()
            return
        raise GroupError(Errors.REBALANCE_IN_PROGRESS, "could not join the group in 50 tries")

    def _assign_members(self, members: Mapping[str, Sequence[str]]
                        ) -> tuple[SyncGroupAssignment, ...]:
        """The leader's assignment: each topic's partitions round-robin over the members
        subscribed to it, in member id order."""
        topics = sorted({t for ts in members.values() for t in ts})
        self._refresh(force=True)
        self.metadata.refresh(topics)
        plan: dict[str, dict[str, list[int]]] = {m: {} for m in members}
        for topic in topics:
            subscribers = sorted(m for m, ts in members.items() if topic in ts)
            for i, info in enumerate(self.metadata.partitions_for(topic)):
                member = subscribers[i % len(subscribers)]
                plan[member].setdefault(topic, []).append(info.partition)
        return tuple(SyncGroupAssignment(member_id=m, partitions=tuple(
            TopicPartitions(name=t, partitions=tuple(ps)) for t, ps in sorted(plan[m].items())))
            for m in sorted(plan))

    def _leave(self) -> None:
        if self._group is not None and self._joined:
            # Leaving is best effort: the session timeout evicts us anyway.
            with contextlib.suppress(GroupError):
                self._group.leave_group(LeaveGroupRequest(group_id=self._group.group_id,
                                                          member_id=self._member_id))
        self._joined = False

    # ------------------------------------------------------------------ KIP-253

    def _gate(self, stream: FetchStream) -> bool:
        """True when ``stream`` may be fetched now (see :mod:`client.kip253`)."""
        tp = (stream.topic, stream.partition)
        if tp not in self._gates:
            info = self.metadata.partition(*tp)
            if info is None:
                return False
            # Only a reader starting the new partition at its beginning can overtake records
            # of the same keys still unread on the prior partitions.
            self._gates[tp] = gate_for(stream.topic, stream.partition,
                                       info.prior_partition_epochs) \
                if stream.fetch_offset == 0 else None
        gate = self._gates[tp]
        if gate is None or gate.is_open:
            return True
        self._resolve_thresholds(gate)
        if gate.needs():
            return False
        pending = gate.pending(lambda p: self._consumed(stream.topic, p))
        owned = [p for p in pending if p >= 0 and (stream.topic, p) in self.assignment()]
        # We read the prior partitions ourselves: once our positions passed the thresholds,
        # commit them so that the group's offsets say so too.
        if pending and self._group is not None and owned and len(owned) == len(pending) \
                and all(min(s.position for s in self._streams_of((stream.topic, p)))
                        >= pending[p] for p in owned):
            self.commit({(stream.topic, p): min(s.position for s in self._streams_of(
                    (stream.topic, p))) for p in owned})
        return gate.open(lambda p: self._consumed(stream.topic, p))

    def _consumed(self, topic: str, prior: int) -> int | None:
        """How far prior partition ``prior`` was consumed: the group's committed offset when
        there is a group, else this consumer's own position if it reads the partition (a
        consumer without a group that does not read it cannot know: not waited for)."""
        if self._group is not None:
            now = time.monotonic()
            if now - self._group_offsets_at > 0.2:
                self._group_offsets_at = now
                tps = [(topic, p) for p in range(self.metadata.partition_count(topic) or 0)]
                self._group_offsets = {tp: int(o.committed_offset) for tp, o in
                                       self._committed_raw(tps).items()}
            return self._group_offsets.get((topic, prior))
        streams = [s for s in self._streams.values() if (s.topic, s.partition) == (topic, prior)]
        if not streams:
            return 2**63 - 1
        return min(s.position for s in streams)

    def _resolve_thresholds(self, gate: ExpansionGate) -> None:
        for prior, epoch in gate.needs().items():
            leader = self.metadata.leader(gate.topic, prior)
            client = self._client_for(leader) if leader >= 0 else None
            if client is None:
                self._refresh()
                continue
            try:
                answer = client.offsets_for_leader_epoch(OffsetForLeaderEpochRequest(
                    topics=(OffsetForLeaderTopic(topic=gate.topic, partitions=(
                        OffsetForLeaderPartition(partition=prior, leader_epoch=epoch),)),)))
            except Exception:  # any failure: ask again next round
                self._refresh()
                continue
            result = answer.topics[0].partitions[0]
            if result.error_code:
                self._refresh()
                continue
            gate.set_threshold(prior, result.end_offset)

    # ------------------------------------------------------------------ poll

    def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Records of the assigned partitions (ranges), up to ``max_poll_records``, waiting
        up to ``timeout_ms`` for some. Records of one partition come in offset order."""
        if self._closed:
            raise ConsumerError("the consumer is closed")
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        if self.metadata.age == float("inf"):
            self._refresh(force=True)
        self._ensure_membership()
        if self.enable_auto_commit and self._group is not None and self._streams and \
                time.monotonic() - self._last_commit >= self.auto_commit_interval_s:
            self._auto_commit()
        self._ensure_membership()
        self._ensure_positions()
        out: list[ConsumerRecord] = []
        first = True
        while True:
            self._drain(out)
            if out or (not first and time.monotonic() >= deadline):
                return out
            left_ms = int((deadline - time.monotonic()) * 1000)
            wait = 0 if first else max(0, min(MAX_WAIT_MS, left_ms))
            first = False
            self._fetch_round(wait)
            self._drain(out)
            if out:
                return out
            if time.monotonic() >= deadline:
                return out

    def _auto_commit(self) -> None:
        """An automatic commit: a group that is rebalancing (or evicted us) refuses it; the
        rejoin that follows gives the partitions, and the next commit their positions."""
        try:
            self.commit()
        except GroupError as error:
            if error.error not in MEMBERSHIP_ERRORS and not error.error.retriable:
                raise
            self._last_commit = time.monotonic()

    def _drain(self, out: list[ConsumerRecord]) -> None:
        for stream in self._streams.values():
            while stream.buffer and len(out) < self.max_poll_records:
                out.append(stream.buffer.popleft())

    def _fetch_round(self, wait_ms: int) -> None:
        """One fetch per stream without buffered records (gated ones skipped)."""
        refresh = False
        for stream in list(self._streams.values()):
            if stream.buffer or stream.fetch_offset < 0 or not self._gate(stream):
                continue
            outcome = self._fetcher.fetch(stream, wait_ms)
            if outcome is Outcome.DATA:
                wait_ms = 0  # records in hand: the other streams must not keep them waiting
            elif outcome is Outcome.REFRESH:
                refresh = True
            elif outcome is Outcome.OUT_OF_RANGE:
                stream.out_of_range += 1
                refresh = True
                if stream.out_of_range >= 3:
                    # Still not served after fresh metadata: the records are gone (retention)
                    # or the position is past the end.
                    stream.out_of_range = 0
                    self._reset(stream)
        if refresh:
            self._refresh()
            time.sleep(0.02)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Commits (with auto commit), leaves the group, closes every connection."""
        if self._closed:
            return
        try:
            if self.enable_auto_commit and self._group is not None and self._streams:
                self._auto_commit()
            self._leave()
        finally:
            self._closed = True
            for client in self._clients.values():
                client.close()
            if self._group is not None:
                self._group.close()
            if self._own_metadata:
                self.metadata.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _start_from_commit(stream: FetchStream, committed: OffsetFetchPartition | None
                       ) -> int | None:
    """Where a stream starts from the group's commit: its range's offset (the lowest of the
    committed ranges overlapping it), else the partition's committed offset."""
    if committed is None:
        return None
    if stream.key_range is not None and committed.range_offsets:
        lo, hi = stream.key_range
        overlapping = [r.offset for r in committed.range_offsets if r.lo <= hi and lo <= r.hi]
        if overlapping:
            return min(overlapping)
    return int(committed.committed_offset) if committed.committed_offset >= 0 else None
