"""Server-sent events of the metadata log, for the console's pages to follow it live.

``GET /ui/api/events?after=N`` (or the ``Last-Event-ID`` the browser resends on reconnecting)
answers ``text/event-stream``: one ``change`` event per committed batch run this node applies,
whose id is the last offset it holds and whose data is ``{"offset", "topics", "other"}``:
the names of the topics it touched that the principal may DESCRIBE, and whether it changed
anything else (brokers, ACLs, configurations, a topic the principal cannot see: only that
something did). A page that shows one of those topics reads it again with ``min_offset`` set to
the event's offset. A reader too far behind the retained log gets ``{"offset", "reset": true}``.

A stream ends after :data:`STREAM_SECONDS` (the browser reconnects after ``retry``, resuming at
the last id it got, so nothing is missed): a controller stopping never waits long for a console
left open.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable

from chunkraft.api.context import ControllerContext
from chunkraft.console.access import ConsoleAccess
from chunkraft.controller.raft.state_machine import TailRead
from chunkraft.records import TopicRecord, decode_record

__all__ = ["RETRY_MS", "STREAM_SECONDS", "change_event", "event_stream", "touched_topics"]

STREAM_SECONDS = 25.0
RETRY_MS = 300
WAIT_SECONDS = 5.0
MAX_RECORDS = 20_000
MAX_BYTES = 8 * 1024 * 1024


def touched_topics(read: TailRead) -> tuple[set[uuid.UUID], dict[uuid.UUID, str], bool]:
    """The ids of the topics the records of ``read`` name, the names its TopicRecords give
    (a topic deleted since is found by nothing else), and whether any record named no topic."""
    ids: set[uuid.UUID] = set()
    names: dict[uuid.UUID, str] = {}
    other = False
    for batch in read.batches:
        for blob in batch.records:
            record = decode_record(blob)
            topic_id = getattr(record, "topic_id", None)
            if isinstance(topic_id, uuid.UUID):
                ids.add(topic_id)
                if isinstance(record, TopicRecord):
                    names[topic_id] = record.name
            else:
                other = True
    return ids, names, other


def change_event(offset: int, topics: list[str], other: bool, *, reset: bool = False) -> bytes:
    """One SSE message (``id`` is the offset, so a reconnect resumes after it)."""
    body: dict[str, object] = {"offset": offset, "topics": topics, "other": other}
    if reset:
        body["reset"] = True
    return f"id: {offset}\nevent: change\ndata: {json.dumps(body)}\n\n".encode()


async def event_stream(context: ControllerContext, access_of: Callable[[], ConsoleAccess],
                       after: int, *, seconds: float = STREAM_SECONDS) -> AsyncIterator[bytes]:
    """The events after offset ``after`` (-1: from this node's current offset) for as long as
    ``seconds``; ``access_of()`` judges each event on the image then current."""
    controller = context.controller
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
        ids, names, other = touched_topics(read)
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
