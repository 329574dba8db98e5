"""Operation histories: what clients asked, when, and what they were told.

A history is Jepsen's: every operation is an *invoke* event and, later, one completion
event of the same process, *ok*, *fail* (it certainly did not happen) or *info* (the outcome
is unknown: a timeout, a lost connection; it may take effect at any time after its invoke, or
never). A process runs one operation at a time, so events pair by process; a client that got
*info* should continue under a new process id, as Jepsen's do, because its old operation may
still be in flight.

Times are ``time.monotonic_ns()`` taken under the recorder's lock, so the file's order is the
order of the times: an invoke is stamped before the request leaves, a completion after the
answer arrived, and real-time order between operations is therefore never overstated.

The operations are the metadata writes the nemesis campaign drives (create topic,
createPartitions, chunk cut, chunk move) and the read, a describe of one topic.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

Replicas = tuple[int, ...]
EventType = Literal["invoke", "ok", "fail", "info"]
Outcome = Literal["ok", "fail", "info"]


@dataclass(frozen=True)
class CreateTopic:
    """Create ``topic``; ok answers the topic id, fail TOPIC_ALREADY_EXISTS (or an opaque error)."""

    topic: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True)
class CreatePartitions:
    """Raise ``topic``'s partition count to ``count`` (KIP-195, an absolute count)."""

    topic: str
    count: int


@dataclass(frozen=True)
class CutChunk:
    """Cut the active chunk of a partition at ``start_offset``; ``replicas`` are the new active
    chunk's, or None when the caller does not want them checked."""

    topic: str
    partition: int
    start_offset: int
    replicas: Replicas | None = None


@dataclass(frozen=True)
class MoveChunk:
    """Move the inactive chunk starting at ``chunk_start`` to ``replicas`` (the target set)."""

    topic: str
    partition: int
    chunk_start: int
    replicas: Replicas


@dataclass(frozen=True)
class Describe:
    """Read one topic; ok answers a :class:`TopicView`, or None when the topic is not found."""

    topic: str


Op = CreateTopic | CreatePartitions | CutChunk | MoveChunk | Describe

ChunkView = tuple[int, Replicas | None]


@dataclass(frozen=True)
class TopicView:
    """What a describe saw: the topic id, the partition count and, optionally, each partition's
    chunks as ``(start_offset, target replicas or None)``, inactive ones by start, active last.

    A field left None is not compared, so a client may record only what it wants checked.
    """

    topic_id: str | None
    partitions: int
    chunks: tuple[tuple[ChunkView, ...], ...] | None = None


@dataclass(frozen=True)
class Event:
    """One line of a history file."""

    type: EventType
    process: int | str
    time: int
    op: Op
    value: TopicView | str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Operation:
    """An invoke paired with its completion. ``complete`` is None for *info* (never known)."""

    index: int
    process: int | str
    op: Op
    outcome: Outcome
    invoke: int
    complete: int | None
    value: TopicView | str | None = None
    error: str | None = None

    def describe(self) -> str:
        """One line for a report: ``#3 p1 CreateTopic(...) -> ok 'id' [10, 20]``."""
        told = self.error if self.outcome == "fail" else repr(self.value)
        if self.outcome == "info":
            told = "unknown"
        return (
            f"#{self.index} p{self.process} {self.op!r} -> {self.outcome} {told} "
            f"[{self.invoke}, {'?' if self.complete is None else self.complete}]"
        )


_OP_TYPES: dict[str, type[Op]] = {
    t.__name__: t for t in (CreateTopic, CreatePartitions, CutChunk, MoveChunk, Describe)
}


def _op_to_json(op: Op) -> dict[str, Any]:
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(op).items()}
    return {"f": type(op).__name__, **fields}


def _op_from_json(d: dict[str, Any]) -> Op:
    fields: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k != "f"
    }
    return _OP_TYPES[d["f"]](**fields)


def _value_to_json(value: TopicView | str | None) -> Any:
    if isinstance(value, TopicView):
        chunks = None
        if value.chunks is not None:
            chunks = [[[s, None if r is None else list(r)] for s, r in p] for p in value.chunks]
        return {"topic_id": value.topic_id, "partitions": value.partitions, "chunks": chunks}
    return value


def _value_from_json(value: Any) -> TopicView | str | None:
    if not isinstance(value, dict):
        return None if value is None else str(value)
    chunks = None
    if value["chunks"] is not None:
        chunks = tuple(
            tuple((int(s), None if r is None else tuple(r)) for s, r in p)
            for p in value["chunks"]
        )
    return TopicView(value["topic_id"], int(value["partitions"]), chunks)


def event_to_json(event: Event) -> str:
    """One JSON line (no newline) for ``event``."""
    return json.dumps(
        {
            "type": event.type,
            "process": event.process,
            "time": event.time,
            "op": _op_to_json(event.op),
            "value": _value_to_json(event.value),
            "error": event.error,
        },
        separators=(",", ":"),
    )


def event_from_json(line: str) -> Event:
    """The event of one JSON line written by :func:`event_to_json`."""
    d = json.loads(line)
    return Event(
        d["type"], d["process"], int(d["time"]), _op_from_json(d["op"]),
        _value_from_json(d["value"]), d["error"],
    )


def read_events(path: Path) -> list[Event]:
    """Every event of a history file. A torn last line (the writer was killed) is skipped."""
    events: list[Event] = []
    with path.open(encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines):
        if not line:
            continue
        try:
            events.append(event_from_json(line))
        except (ValueError, KeyError, TypeError):
            if number == len(lines) - 1:  # only the unterminated last line may be torn
                break
            raise
    return events


def pair(events: Iterable[Event]) -> list[Operation]:
    """Pair each invoke with its process's next completion, in invoke order.

    An invoke with no completion (the history ended first) is *info*: its outcome is unknown.
    """
    pending: dict[int | str, tuple[int, Event]] = {}
    done: dict[int, Operation] = {}
    count = 0
    for e in events:
        if e.type == "invoke":
            if e.process in pending:
                raise ValueError(f"process {e.process} invoked twice without a completion")
            pending[e.process] = (count, e)
            count += 1
            continue
        if e.process not in pending:
            raise ValueError(f"process {e.process} completed an operation it never invoked")
        index, inv = pending.pop(e.process)
        complete = None if e.type == "info" else e.time
        done[index] = Operation(
            index, e.process, inv.op, e.type, inv.time, complete, e.value, e.error
        )
    for index, inv in pending.values():
        done[index] = Operation(index, inv.process, inv.op, "info", inv.time, None)
    return [done[i] for i in sorted(done)]


def read_history(path: Path) -> list[Operation]:
    """The paired operations of a history file."""
    return pair(read_events(path))


class HistoryRecorder:
    """An append-only history, in memory and optionally in a JSON-lines file.

    Thread-safe: one lock orders the events, stamps their times and writes each line (flushed,
    so a killed campaign still leaves every event it recorded). Use :meth:`invoke` before the
    request leaves and :meth:`ok` / :meth:`fail` / :meth:`info` once its outcome is known.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._pending: dict[int | str, Op] = {}
        self._file: IO[str] | None = path.open("a", encoding="utf-8") if path else None

    def invoke(self, process: int | str, op: Op) -> None:
        """Record that ``process`` is about to send ``op``."""
        with self._lock:
            if process in self._pending:
                raise ValueError(f"process {process} already has an operation in flight")
            self._pending[process] = op
            self._append(Event("invoke", process, time.monotonic_ns(), op))

    def ok(self, process: int | str, value: TopicView | str | None = None) -> None:
        """The operation succeeded; ``value`` is a create's topic id or a describe's view."""
        self._complete("ok", process, value=value)

    def fail(self, process: int | str, error: str) -> None:
        """The operation certainly did not happen; ``error`` is the Kafka error name."""
        self._complete("fail", process, error=error)

    def info(self, process: int | str, reason: str | None = None) -> None:
        """The outcome is unknown (a timeout); the process should not be reused."""
        self._complete("info", process, error=reason)

    def _complete(
        self, kind: Outcome, process: int | str,
        value: TopicView | str | None = None, error: str | None = None,
    ) -> None:
        with self._lock:
            op = self._pending.pop(process, None)
            if op is None:
                raise ValueError(f"process {process} has no operation in flight")
            self._append(Event(kind, process, time.monotonic_ns(), op, value, error))

    def _append(self, event: Event) -> None:
        self._events.append(event)
        if self._file is not None:
            self._file.write(event_to_json(event) + "\n")
            self._file.flush()

    def events(self) -> list[Event]:
        """A copy of the events so far."""
        with self._lock:
            return list(self._events)

    def operations(self) -> list[Operation]:
        """The events so far, paired (operations still in flight are *info*)."""
        return pair(self.events())

    def close(self) -> None:
        """Close the file; the in-memory events stay readable."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> HistoryRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_topics(ops: Iterable[Operation]) -> Iterator[str]:
    """The topics of ``ops``, each once, sorted."""
    yield from sorted({o.op.topic for o in ops})
