"""Server-sent events of the metadata log, for the console's pages to follow it live.

``GET /ui/api/events?after=N`` (or the ``Last-Event-ID`` the browser resends on reconnecting)
answers ``text/event-stream``: one ``change`` event per committed batch run this node applies,
whose id is the last offset it holds and whose data is ``{"offset", "topics", "other"}``:
the names of the topics it touched that the principal may DESCRIBE, and whether it changed
anything else (brokers, ACLs, configurations, a topic the principal cannot see: only that
something did). A page that shows one of those topics reads it again with ``min_offset`` set to
the event's offset. A reader too far behind the retained log gets ``{"offset", "reset": true}``.

Every stream of a node shares one :class:`BatchSummaries`: a committed batch is decoded once,
in a worker thread, however many consoles follow the log, so a large batch (a topic of 10,000
partitions) costs the event loop a lookup per open page, not a decoding.

A stream ends after :data:`STREAM_SECONDS` (the browser reconnects after ``retry``, resuming at
the last id it got, so nothing is missed): a controller stopping never waits long for a console
left open.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass

from chunkraft.api.context import ControllerContext
from chunkraft.console.access import ConsoleAccess
from chunkraft.controller.raft.state_machine import CommittedBatch
from chunkraft.records import TopicRecord, decode_record

__all__ = ["RETRY_MS", "STREAM_SECONDS", "BatchSummaries", "BatchTopics", "change_event",
           "event_stream"]

STREAM_SECONDS = 25.0
RETRY_MS = 300
WAIT_SECONDS = 5.0
MAX_RECORDS = 20_000
MAX_BYTES = 8 * 1024 * 1024
_DECODE_WAIT_SECONDS = 5.0
"""How long a stream waits for another's decoding of a batch before looking again."""


@dataclass(frozen=True, slots=True)
class BatchTopics:
    """What one committed batch touched: the ids of the topics its records name, the names its
    TopicRecords give (a topic deleted since is found by nothing else), and whether any record
    named no topic."""

    ids: frozenset[uuid.UUID]
    names: Mapping[uuid.UUID, str]
    other: bool


def batch_topics(batch: CommittedBatch) -> BatchTopics:
    """Decodes ``batch`` to what it touched."""
    ids: set[uuid.UUID] = set()
    names: dict[uuid.UUID, str] = {}
    other = False
    for blob in batch.records:
        record = decode_record(blob)
        topic_id = getattr(record, "topic_id", None)
        if isinstance(topic_id, uuid.UUID):
            ids.add(topic_id)
            if isinstance(record, TopicRecord):
                names[topic_id] = record.name
        else:
            other = True
    return BatchTopics(frozenset(ids), names, other)


class BatchSummaries:
    """What each recent committed batch touched, shared by every event stream of one node.

    Contract: :meth:`touched` answers what decoding the batches would, decoding each batch at
    most once while it stays among the last ``capacity`` batches asked about (a committed batch
    never changes, so its base offset names it). Thread-safe: streams ask from worker threads.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._summaries: OrderedDict[tuple[int, int], BatchTopics] = OrderedDict()
        self._decoding: dict[tuple[int, int], threading.Event] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(batch: CommittedBatch) -> tuple[int, int]:
        return batch.base_offset, len(batch.records)

    def known(self, batches: Iterable[CommittedBatch]) -> bool:
        """Whether every batch is summarized already (then :meth:`touched` decodes nothing)."""
        with self._lock:
            return all(self._key(batch) in self._summaries for batch in batches)

    def summary(self, batch: CommittedBatch) -> BatchTopics:
        """What ``batch`` touched: from the cache, or decoded here. A batch another thread is
        decoding is waited for, not decoded again (the streams of a node all ask about a new
        batch at the same moment)."""
        key = self._key(batch)
        while True:
            with self._lock:
                found = self._summaries.get(key)
                if found is not None:
                    self._summaries.move_to_end(key)
                    return found
                decoding = self._decoding.get(key)
                if decoding is None:
                    decoding = self._decoding[key] = threading.Event()
                    break
            decoding.wait(_DECODE_WAIT_SECONDS)  # then look again (or decode it ourselves)
        try:
            summary = batch_topics(batch)  # outside the lock: other batches go on meanwhile
            with self._lock:
                self._summaries[key] = summary
                while len(self._summaries) > self.capacity:
                    self._summaries.popitem(last=False)
            return summary
        finally:
            with self._lock:
                self._decoding.pop(key, None)
            decoding.set()

    def touched(self, batches: Iterable[CommittedBatch]
                ) -> tuple[set[uuid.UUID], dict[uuid.UUID, str], bool]:
        """The union of the batches' summaries: topic ids, names, and whether anything else."""
        ids: set[uuid.UUID] = set()
        names: dict[uuid.UUID, str] = {}
        other = False
        for batch in batches:
            summary = self.summary(batch)
            ids |= summary.ids
            names.update(summary.names)
            other = other or summary.other
        return ids, names, other


def change_event(offset: int, topics: list[str], other: bool, *, reset: bool = False) -> bytes:
    """One SSE message (``id`` is the offset, so a reconnect resumes after it)."""
    body: dict[str, object] = {"offset": offset, "topics": topics, "other": other}
    if reset:
        body["reset"] = True
    return f"id: {offset}\nevent: change\ndata: {json.dumps(body)}\n\n".encode()


async def event_stream(context: ControllerContext, access_of: Callable[[], ConsoleAccess],
                       after: int, *, seconds: float = STREAM_SECONDS,
                       summaries: BatchSummaries | None = None) -> AsyncIterator[bytes]:
    """The events after offset ``after`` (-1: from this node's current offset) for as long as
    ``seconds``; ``access_of()`` judges each event on the image then current. ``summaries``
    is the node's shared cache (a private one when None)."""
    controller = context.controller
    if summaries is None:
        summaries = BatchSummaries()
    deadline = time.monotonic() + seconds
    last = after if after >= 0 else controller.image.offset
    yield f"retry: {RETRY_MS}\n\n".encode()
    yield change_event(last, [], False)  # where the stream starts, at once
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        wait = min(WAIT_SECONDS, remaining)
        asked = time.monotonic()
        read = await controller.read_after(last, max_records=MAX_RECORDS, max_bytes=MAX_BYTES,
                                           wait=wait)
        if read.snapshot_needed:
            last = controller.image.offset
            yield change_event(last, [], True, reset=True)
            continue
        if not read.batches:
            if time.monotonic() - asked < wait / 2:
                # Nothing, long before the wait was over: the node is stopping (it releases
                # every waiter, and every later wait returns at once). End the stream rather
                # than spin; the browser reconnects.
                return
            yield b": idle\n\n"
            continue
        if summaries.known(read.batches):
            ids, names, other = summaries.touched(read.batches)
        else:  # decoding takes a while for a large batch: never on the event loop
            ids, names, other = await asyncio.to_thread(summaries.touched, read.batches)
        last = read.batches[-1].next_offset - 1
        access = access_of()
        shown: list[str] = []
        for topic_id in ids:
            topic = access.image.topics.get(topic_id)
            name = topic.name if topic is not None else names.get(topic_id)
            if name is not None and access.topic(name):
                shown.append(name)
            else:
                other = True
        yield change_event(last, sorted(shown), other)
