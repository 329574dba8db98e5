"""The consumer's reads: one fetch position ("stream") at a time, routed by chunk (KIP-1114).

A stream is a whole partition or one key-hash range of it. :class:`StreamFetcher` sends one
fetch for it to the broker :func:`chunk_router.route_offset` names (an ISR replica of an
inactive chunk, the leader of the active chunk), decodes the records (leaving out control
records and, read_committed, aborted transactions) and moves the stream's fetch offset past
the last batch the broker returned (so aborted batches, markers and batches a key-range filter
emptied are not read twice). An inactive chunk's answer is cut at its ``chunk_stop_offset``;
a stream that read an inactive chunk to its stop moves to ``stop + 1``, the next chunk.

A key-range fetch that comes back empty although the chunk holds more below its upper bound
(the broker read a window whose batches had none of the range's keys) is read once more without
the key range and filtered here, so the stream always progresses.

Errors become :class:`Outcome` values the consumer acts on: REFRESH (refresh the metadata and
retry: NOT_LEADER_OR_FOLLOWER, a leader or chunk that moved, a broker that did not answer) and
OUT_OF_RANGE (no chunk serves the offset, or the broker said OFFSET_OUT_OF_RANGE).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import NamedTuple

import httpx

from chunkraft.client.broker_client import (
    BrokerClient,
    BrokerClientError,
    decode_partition,
    fetch_request,
    list_offsets_request,
)
from chunkraft.client.chunk_router import ChunkRoute, PartitionView, route_offset
from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import Record, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import FetchPartitionResponse

__all__ = ["ConsumerRecord", "FetchStream", "Outcome", "StreamFetcher", "key_in_range"]

KeyRange = tuple[int, int]


class ConsumerRecord(NamedTuple):
    """A record as the consumer hands it out; ``broker_id`` is the broker that served it (the
    active chunk's leader or an inactive chunk's ISR replica). Immutable."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    broker_id: int


@dataclass
class FetchStream:
    """One fetch position: a partition, or one key range ``[lo, hi]`` of it.

    ``fetch_offset`` is where the next fetch starts (-1: not positioned yet); records fetched
    but not yet handed out wait in ``buffer``, so :attr:`position` (the next offset the
    application gets) is the first buffered record's offset, else ``fetch_offset``. Not
    thread-safe (the consumer's state).
    """

    topic: str
    partition: int
    key_range: KeyRange | None = None
    fetch_offset: int = -1
    buffer: deque[ConsumerRecord] = field(default_factory=deque)
    attempt: int = 0
    out_of_range: int = 0

    @property
    def position(self) -> int:
        return self.buffer[0].offset if self.buffer else self.fetch_offset

    def seek(self, offset: int) -> None:
        self.fetch_offset = offset
        self.buffer.clear()
        self.out_of_range = 0


class Outcome(enum.Enum):
    """What a fetch did: DATA (records buffered), EMPTY (nothing new), REFRESH (metadata is
    stale or the broker failed: refresh, retry), OUT_OF_RANGE (no chunk serves the offset)."""

    DATA = "data"
    EMPTY = "empty"
    REFRESH = "refresh"
    OUT_OF_RANGE = "out_of_range"


def key_in_range(key: bytes | None, key_range: KeyRange) -> bool:
    """The broker's key-range rule: the positive murmur2 hash of the key (0 for no key)."""
    hashed = 0 if key is None else positive_hash(key)
    return key_range[0] <= hashed <= key_range[1]


def batches_end(partition: FetchPartitionResponse) -> int:
    """The offset after the last batch of a fetch answer, -1 when it holds none."""
    if not partition.records:
        return -1
    end = -1
    for header, _ in iter_batches(partition.records):
        end = header.last_offset + 1
    return end


class StreamFetcher:
    """Fetches for streams (see the module). ``partition_of(topic, p)`` and ``live()`` read the
    client's metadata; ``client_for(broker_id)`` gives a BrokerClient (None: unknown broker).
    Not thread-safe."""

    def __init__(self, partition_of: Callable[[str, int], PartitionView | None],
                 live: Callable[[], Collection[int]],
                 client_for: Callable[[int], BrokerClient | None], *, client_id: str,
                 isolation_level: int, max_bytes: int = 1024 * 1024) -> None:
        self._partition_of = partition_of
        self._live = live
        self._client_for = client_for
        self.client_id = client_id
        self.isolation_level = isolation_level
        self.max_bytes = max_bytes
        self.last_failure: str | None = None
        """Why the last offset lookup that failed did (for the error a caller raises)."""

    def route(self, stream: FetchStream) -> ChunkRoute | Outcome:
        info = self._partition_of(stream.topic, stream.partition)
        if info is None:
            return Outcome.REFRESH
        route = route_offset(info, stream.fetch_offset, self.client_id, live=self._live(),
                             attempt=stream.attempt)
        if route is None:
            return Outcome.OUT_OF_RANGE
        if route.broker_id < 0:
            return Outcome.REFRESH
        return route

    def _fetch(self, client: BrokerClient, stream: FetchStream, max_wait_ms: int,
               key_range: KeyRange | None) -> FetchPartitionResponse:
        answer = client.fetch(fetch_request(
            stream.topic, stream.partition, stream.fetch_offset, max_bytes=self.max_bytes,
            max_wait_ms=max_wait_ms, isolation_level=self.isolation_level,
            key_range=key_range))
        return answer.responses[0].partitions[0]

    def fetch(self, stream: FetchStream, max_wait_ms: int) -> Outcome:
        """One fetch for ``stream`` (positioned); new records go to its buffer."""
        route = self.route(stream)
        if isinstance(route, Outcome):
            return route
        client = self._client_for(route.broker_id)
        if client is None:
            return Outcome.REFRESH
        # An inactive chunk never grows: waiting on it would only delay the other streams.
        wait = max_wait_ms if route.active else 0
        try:
            part = self._fetch(client, stream, wait, stream.key_range)
            error = Errors.for_code(part.error_code)
            filtered_locally = False
            if (error is Errors.NONE and stream.key_range is not None and not part.records
                    and stream.fetch_offset < _upper(part, self.isolation_level)):
                part = self._fetch(client, stream, 0, None)
                error = Errors.for_code(part.error_code)
                filtered_locally = True
        except (httpx.TransportError, BrokerClientError):
            stream.attempt += 1
            return Outcome.REFRESH
        if error is Errors.OFFSET_OUT_OF_RANGE:
            return Outcome.OUT_OF_RANGE
        if error is not Errors.NONE:
            stream.attempt += 1
            return Outcome.REFRESH
        stream.out_of_range = 0
        return self._take(stream, route, part, filtered_locally)

    def _take(self, stream: FetchStream, route: ChunkRoute, part: FetchPartitionResponse,
              filtered_locally: bool) -> Outcome:
        start = stream.fetch_offset
        records: list[Record] = [r for r in decode_partition(part) if r.offset >= start]
        end = batches_end(part)
        stop = part.chunk_stop_offset if part.chunk_stop_offset >= 0 else (
            -1 if route.active else route.stop_offset)
        if stop >= 0:
            # Past its stop offset an inactive chunk may hold an open transaction's records
            # (the cut copied them to the next chunk): those are read there, once.
            records = [r for r in records if r.offset <= stop]
            end = stop + 1 if end < 0 else min(end, stop + 1)
        if filtered_locally and stream.key_range is not None:
            key_range = stream.key_range
            records = [r for r in records if key_in_range(r.key, key_range)]
        if end > stream.fetch_offset:
            stream.fetch_offset = end
        for r in records:
            stream.buffer.append(ConsumerRecord(stream.topic, stream.partition, r.offset,
                                                r.timestamp, r.key, r.value, r.headers,
                                                route.broker_id))
        return Outcome.DATA if records else Outcome.EMPTY

    # ------------------------------------------------------------------ offsets lookups

    def list_offset(self, topic: str, partition: int, timestamp: int,
                    broker_id: int | None = None) -> int | None:
        """ListOffsets of one partition on ``broker_id`` (default: the active chunk's leader):
        the offset, -1 when the broker found none, None when it failed (refresh, retry; the
        reason is in :attr:`last_failure`)."""
        if broker_id is None:
            info = self._partition_of(topic, partition)
            if info is None or info.leader < 0:
                self.last_failure = (f"{topic}-{partition} is not in the metadata" if info is None
                                     else f"{topic}-{partition} has no leader")
                return None
            broker_id = info.leader
        client = self._client_for(broker_id)
        if client is None:
            self.last_failure = f"broker {broker_id} is not in the metadata"
            return None
        try:
            answer = client.list_offsets(list_offsets_request(
                topic, partition, timestamp, isolation_level=self.isolation_level))
        except (httpx.TransportError, BrokerClientError) as error:
            self.last_failure = f"broker {broker_id}: {error or type(error).__name__}"
            return None
        result = answer.topics[0].partitions[0]
        if result.error_code:
            self.last_failure = (f"broker {broker_id} answered "
                                 f"{Errors.for_code(result.error_code).name}")
            return None
        return result.offset

    def first_at_or_after(self, topic: str, partition: int, broker_id: int, start: int,
                          stop: int, timestamp: int, *, max_fetches: int = 1000) -> int | None:
        """Scans ``start .. stop`` on ``broker_id`` for the first record whose timestamp is
        >= ``timestamp``; None when no record of the range is (or the broker failed)."""
        client = self._client_for(broker_id)
        if client is None:
            return None
        offset = start
        for _ in range(max_fetches):
            if offset > stop:
                return None
            try:
                part, records = client.fetch_records(topic, partition, offset, max_wait_ms=0,
                                                     max_bytes=self.max_bytes,
                                                     isolation_level=self.isolation_level)
            except (httpx.TransportError, BrokerClientError):
                return None
            if part.error_code:
                return None
            for record in records:
                if record.offset > stop:
                    return None
                if record.timestamp >= timestamp:
                    return record.offset
            end = batches_end(part)
            if end <= offset:
                return None
            offset = end
        return None


def _upper(part: FetchPartitionResponse, isolation_level: int) -> int:
    """The offset a consumer's read of this answer could reach: an inactive chunk's stop + 1,
    else the high watermark (read_committed: the last stable offset)."""
    if part.chunk_stop_offset >= 0:
        return part.chunk_stop_offset + 1
    return part.last_stable_offset if isolation_level == 1 else part.high_watermark
