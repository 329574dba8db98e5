"""The consumer's offsets: positions (seeks, resets, ListOffsets, timestamps) and commits.

Positions start at the group's committed offsets (range offsets for key ranges), else at
``auto_offset_reset``; commits send a partition's position, or its key ranges' positions as
``range_offsets``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from chunkraft.client.consumer_core import (
    MEMBERSHIP_ERRORS,
    WHOLE,
    ConsumerCore,
    ConsumerError,
    TopicPartition,
)
from chunkraft.client.consumer_fetcher import (
    FetchStream,
    KeyRange,
)
from chunkraft.client.consumer_group import GroupError
from chunkraft.client.metadata import PartitionInfo
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchTopicRequest,
    RangeOffset,
)
from chunkraft.protocol.data_plane import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
)

__all__ = ["ConsumerOffsets"]


class ConsumerOffsets(ConsumerCore):
    """:class:`ConsumerCore` plus positions and commits. Not thread-safe."""

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
        deadline = time.monotonic() + self.default_api_timeout_s
        attempt = 0
        while True:
            if attempt or self.metadata.partition(*tp) is None:
                self._refresh(force=True)  # the leader may have moved or restarted
            offset = self._fetcher.list_offset(tp[0], tp[1], timestamp)
            if offset is not None and offset >= 0:
                for stream in streams:
                    stream.seek(offset)
                return
            attempt += 1
            self._pause_before_retry(attempt, deadline, lambda: (
                f"no offset for {tp[0]}-{tp[1]} at timestamp {timestamp}"))

    def _pause_before_retry(self, attempt: int, deadline: float,
                            what: Callable[[], str]) -> None:
        """Sleeps before lookup ``attempt + 1`` (50 ms more each time, at most 1 s), or raises
        ConsumerError (``what()``, the attempts made, the last failure) when the
        ``default_api_timeout_ms`` ending at ``deadline`` would pass first."""
        pause = min(0.05 * attempt, 1.0)
        if time.monotonic() + pause > deadline:
            raise ConsumerError(
                f"{what()}: {attempt} lookup(s) in {self.default_api_timeout_s:g} s "
                f"(default_api_timeout_ms) failed; the last: "
                f"{self._fetcher.last_failure or 'the broker found none'}")
        time.sleep(pause)

    def seek_to_timestamp(self, tp: TopicPartition, timestamp_ms: int) -> int:
        """Positions ``tp`` at its first record whose timestamp is >= ``timestamp_ms``, looking
        through the inactive chunks (on their replicas) before the active chunk; at the end
        when no record is that late. Returns the offset. Retries with fresh metadata until the
        active chunk's leader answers (``default_api_timeout_ms``)."""
        streams = self._streams_of(tp)
        deadline = time.monotonic() + self.default_api_timeout_s
        found: int | None = None
        attempt = 0
        while True:
            # Fresh metadata each time: a broker's image may not have had the latest cut yet.
            self._refresh(force=True)
            info = self.metadata.partition(*tp)
            if info is not None:
                found = self._offset_in_chunks(tp, info, timestamp_ms)
                if found is not None:
                    break
                offset = self._fetcher.list_offset(tp[0], tp[1], timestamp_ms)
                if offset is not None:  # the leader answered: -1 is "no record that late"
                    found = offset if offset >= 0 else None
                    break
            attempt += 1
            self._pause_before_retry(attempt, deadline, lambda: (
                f"no answer for {tp[0]}-{tp[1]} at timestamp {timestamp_ms}"))
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
