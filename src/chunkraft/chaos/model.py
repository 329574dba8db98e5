"""A small, pure, hashable model of one topic's metadata, for the linearizability checker.

Topics are independent (no operation touches two), so the checker checks each topic's
history alone against this model, starting from "absent". The model knows only what a client
can predict from its own requests: whether the topic exists, its id once a create told it,
the partition count, and per partition the chunks (start offsets and, where a request set
them, target replicas). Replica placement and broker state are not modelled, so the errors
that depend on them (INVALID_REPLICATION_FACTOR, REASSIGNMENT_IN_PROGRESS, ...) are *opaque*:
such a failed operation constrains nothing and the checker leaves it out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from chunkraft.chaos.history import (
    ChunkView,
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    MoveChunk,
    Op,
    Replicas,
    TopicView,
)

# The errors the model can predict, per operation; any other failure is opaque.
MODELLED_ERRORS: dict[type[Op], frozenset[str]] = {
    CreateTopic: frozenset({"TOPIC_ALREADY_EXISTS"}),
    CreatePartitions: frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "INVALID_PARTITIONS"}),
    CutChunk: frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "INVALID_CHUNK_OFFSETS", "INVALID_REQUEST"}),
    MoveChunk: frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_CHUNK"}),
    # A describe of a missing topic may be an error answer rather than an ok None.
    Describe: frozenset({"UNKNOWN_TOPIC_OR_PARTITION"}),
}


@dataclass(frozen=True)
class PartitionState:
    """The active chunk's start and replicas (None: placed by the controller, not known) and the
    inactive chunks as ``(start, replicas)`` by start."""

    active_start: int = 0
    active_replicas: Replicas | None = None
    inactive: tuple[ChunkView, ...] = ()

    def chunks(self) -> tuple[ChunkView, ...]:
        """Every chunk as a describe lists them: inactive by start, the active one last."""
        return (*self.inactive, (self.active_start, self.active_replicas))


@dataclass(frozen=True)
class TopicState:
    """An existing topic. Immutable and hashable, so the search can memoize on it."""

    topic_id: str | None
    partitions: tuple[PartitionState, ...]


State = TopicState | None


@dataclass(frozen=True)
class Step:
    """The model's answer to an operation in a state: the state after it, and the error name it
    answers (None: success, with the state changed). ``why`` says so in words for reports."""

    after: State
    error: str | None
    why: str


def step(state: State, op: Op) -> Step:
    """What ``op`` does in ``state``, in the controller's validation order."""
    if isinstance(op, CreateTopic):
        if state is not None:
            return Step(state, "TOPIC_ALREADY_EXISTS", f"topic {op.topic!r} already exists")
        parts = tuple(PartitionState() for _ in range(op.partitions))
        return Step(TopicState(None, parts), None, f"creates {op.topic!r}")
    if isinstance(op, Describe):
        return Step(state, None, "reads")
    if state is None:
        return Step(state, "UNKNOWN_TOPIC_OR_PARTITION", f"topic {op.topic!r} does not exist")
    if isinstance(op, CreatePartitions):
        have = len(state.partitions)
        if op.count <= have:
            return Step(state, "INVALID_PARTITIONS", f"topic has {have} partition(s)")
        more = tuple(PartitionState() for _ in range(op.count - have))
        return Step(replace(state, partitions=state.partitions + more), None,
                    f"{have} -> {op.count} partitions")
    if not 0 <= op.partition < len(state.partitions):
        return Step(state, "UNKNOWN_TOPIC_OR_PARTITION", f"no partition {op.partition}")
    p = state.partitions[op.partition]
    if isinstance(op, CutChunk):
        if op.start_offset == p.active_start:
            return Step(state, "INVALID_REQUEST", f"active chunk is empty at {p.active_start}")
        if op.start_offset < p.active_start:
            return Step(state, "INVALID_CHUNK_OFFSETS",
                        f"{op.start_offset} is before the active chunk's {p.active_start}")
        new = PartitionState(
            op.start_offset, op.replicas, (*p.inactive, (p.active_start, p.active_replicas))
        )
        return Step(_with(state, op.partition, new), None,
                    f"cuts partition {op.partition} at {op.start_offset}")
    # MoveChunk
    starts = [s for s, _ in p.inactive]
    if op.chunk_start not in starts:
        return Step(state, "UNKNOWN_CHUNK", f"no inactive chunk at {op.chunk_start}")
    i = starts.index(op.chunk_start)
    inactive = (*p.inactive[:i], (op.chunk_start, op.replicas), *p.inactive[i + 1:])
    return Step(_with(state, op.partition, replace(p, inactive=inactive)), None,
                f"moves chunk {op.chunk_start} to {list(op.replicas)}")


def _with(state: TopicState, index: int, p: PartitionState) -> TopicState:
    parts = state.partitions
    return replace(state, partitions=(*parts[:index], p, *parts[index + 1:]))


def with_topic_id(state: State, topic_id: str) -> State:
    """``state`` after a create that answered ``topic_id``."""
    return None if state is None else replace(state, topic_id=topic_id)


def summary(state: State) -> str:
    """The state in a few words for a report: ``absent`` or ``id X, 2 partition(s); p0 chunks
    [0, 10@[1, 2]]`` (partitions with only their first, empty chunk are not listed)."""
    if state is None:
        return "absent"
    text = f"id {state.topic_id or '?'}, {len(state.partitions)} partition(s)"
    for index, p in enumerate(state.partitions):
        chunks = p.chunks()
        if chunks != ((0, None),):
            listed = ", ".join(f"{s}" if r is None else f"{s}@{list(r)}" for s, r in chunks)
            text += f"; p{index} chunks [{listed}]"
    return text


def view_mismatch(state: State, seen: TopicView | None) -> str | None:
    """Why a describe that saw ``seen`` cannot have read ``state``; None when it can.

    Fields the view or the model leaves None (an id never told, replicas never set) match
    anything: the checker must not invent violations from what nobody recorded.
    """
    if state is None or seen is None:
        if state is None and seen is None:
            return None
        return "saw the topic, which does not exist" if state is None else "topic not found"
    if seen.topic_id is not None and state.topic_id not in (None, seen.topic_id):
        return f"topic id {seen.topic_id}, model has {state.topic_id}"
    if seen.partitions != len(state.partitions):
        return f"{seen.partitions} partition(s), model has {len(state.partitions)}"
    if seen.chunks is None:
        return None
    if len(seen.chunks) != len(state.partitions):
        return f"chunks of {len(seen.chunks)} partition(s), model has {len(state.partitions)}"
    for index, (part, chunks) in enumerate(zip(state.partitions, seen.chunks, strict=True)):
        model = part.chunks()
        if [s for s, _ in chunks] != [s for s, _ in model]:
            return f"partition {index}: chunks {[s for s, _ in chunks]}, model has " \
                   f"{[s for s, _ in model]}"
        for (start, seen_r), (_, model_r) in zip(chunks, model, strict=True):
            if seen_r is not None and model_r is not None and set(seen_r) != set(model_r):
                return f"partition {index} chunk {start}: replicas {list(seen_r)}, " \
                       f"model has {list(model_r)}"
    return None
