"""Property: any history made from a sequential execution, with random overlap, is valid.

A sequential run on the model decides every answer; operation k takes effect at time 10k and
its invoke and completion are drawn around that point, so neighbours overlap at random.
Unknown outcomes take effect or not; opaque failures take none. Such a history has a
linearization by construction, whatever read level is checked; changing one read to a count
nobody wrote must make it a violation.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.chaos.history import (
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    MoveChunk,
    Op,
    Operation,
    TopicView,
)
from chunkraft.chaos.linearizability import ReadLevel, Verdict, check
from chunkraft.chaos.model import State, step

TOPICS = ("a", "b", "c")
T = TypeVar("T")


def _view(state: State, topic: str) -> TopicView | None:
    if state is None:
        return None
    # A real describe shows every chunk's replicas; where the controller placed them (the
    # model has None), broker 9 stands for its choice, which no request in this test names.
    chunks = tuple(
        tuple((start, (9,) if r is None else r) for start, r in p.chunks())
        for p in state.partitions
    )
    return TopicView(state.topic_id, len(state.partitions), chunks)


class Chooser(Protocol):
    """Where the generator's choices come from: Hypothesis, or a seeded ``random.Random``."""

    def integer(self, lo: int, hi: int) -> int: ...
    def choice(self, options: Sequence[T]) -> T: ...


class DrawChooser:
    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def choice(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))


class RandomChooser:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)


def _replicas(c: Chooser) -> tuple[int, ...]:
    return tuple(sorted({c.integer(1, 5) for _ in range(c.integer(1, 3))}))


def operation(c: Chooser, state: dict[str, State], topics: Sequence[str]) -> Op:
    topic = c.choice(topics)
    s = state[topic]
    parts = 1 if s is None else len(s.partitions)
    partition = c.integer(0, parts)  # one past the end now and then
    kind = c.choice(["create", "expand", "cut", "move", "read", "read"])
    if kind == "create":
        return CreateTopic(topic, c.integer(1, 3), 1)
    if kind == "expand":
        return CreatePartitions(topic, c.integer(1, parts + 2))
    start = 0
    if s is not None and partition < parts:
        start = s.partitions[partition].active_start
    if kind == "cut":
        offset = c.choice([start + 10, start + 10, start, max(start - 5, 0)])
        return CutChunk(topic, partition, offset, c.choice([None, _replicas(c)]))
    if kind == "move":
        chunk = c.choice([0, start, max(start - 10, 0)])
        return MoveChunk(topic, partition, chunk, _replicas(c))
    return Describe(topic)


def sequential_history(
    c: Chooser, count: int, topics: Sequence[str] = TOPICS, overlap: int = 40
) -> list[Operation]:
    """``count`` operations of a sequential run, each stretched up to ``overlap`` either side of
    its point (10 apart), so up to ``2 * overlap / 10`` operations run at once."""
    state: dict[str, State] = dict.fromkeys(topics)
    ops: list[Operation] = []
    for k in range(count):
        op = operation(c, state, topics)
        at = 10 * k + 10
        invoke = at - c.integer(0, overlap)
        complete = at + c.integer(0, overlap)
        # A few processes share the operations, so a read-your-writes read also has its own
        # process's writes to follow.
        process = c.integer(0, 3)
        s = step(state[op.topic], op)
        fate = c.choice(["told", "told", "told", "unknown", "opaque"])
        if isinstance(op, Describe):
            if fate == "opaque":
                ops.append(Operation(k, process, op, "fail", invoke, complete,
                                     error="REQUEST_TIMED_OUT"))
            else:
                ops.append(Operation(k, process, op, "ok", invoke, complete,
                                     _view(s.after, op.topic)))
            continue
        if fate == "opaque" or (fate == "unknown" and c.choice([True, False])):
            # It never happened: an opaque failure, or a timeout whose request was lost.
            outcome = Operation(k, process, op, "fail", invoke, complete, error="NOT_CONTROLLER")
            if fate == "unknown":
                outcome = Operation(k, process, op, "info", invoke, None)
            ops.append(outcome)
            continue
        after = s.after
        if s.error is None and isinstance(op, CreateTopic) and fate == "told":
            assert after is not None
            after = replace(after, topic_id=f"id-{op.topic}-{k}")
        state[op.topic] = after
        if fate == "unknown":
            ops.append(Operation(k, process, op, "info", invoke, None))
        elif s.error is None:
            value = f"id-{op.topic}-{k}" if isinstance(op, CreateTopic) else None
            ops.append(Operation(k, process, op, "ok", invoke, complete, value))
        else:
            ops.append(Operation(k, process, op, "fail", invoke, complete, error=s.error))
    return ops


@st.composite
def valid_history(draw: st.DrawFn) -> list[Operation]:
    c = DrawChooser(draw)
    return sequential_history(c, c.integer(1, 60))


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(valid_history(), st.sampled_from(list(ReadLevel)))
def test_a_history_of_a_sequential_execution_is_valid(
    ops: list[Operation], reads: ReadLevel
) -> None:
    result = check(ops, reads, time_limit=30)
    assert result.verdict is Verdict.VALID, result.explain()


@SETTINGS
@given(valid_history(), st.data())
def test_a_read_of_a_count_nobody_wrote_is_a_violation(
    ops: list[Operation], data: st.DataObject
) -> None:
    reads = [i for i, o in enumerate(ops) if o.outcome == "ok" and isinstance(o.value, TopicView)]
    if not reads:
        return
    i = data.draw(st.sampled_from(reads))
    ops[i] = replace(ops[i], value=TopicView(None, 99))
    level = data.draw(st.sampled_from(list(ReadLevel)))
    result = check(ops, level, time_limit=30)
    assert result.verdict is Verdict.VIOLATION, result.explain()
    assert result.violations[0].topic == ops[i].op.topic


def test_a_large_random_history_is_checked_quickly() -> None:
    # 3,000 operations on 10 topics, about 8 at once, a fifth of them of unknown outcome.
    ops = sequential_history(RandomChooser(16), 3000, [f"t{i}" for i in range(10)])
    started = time.monotonic()
    result = check(ops, ReadLevel.LINEARIZABLE)
    assert result.verdict is Verdict.VALID, result.explain()
    assert time.monotonic() - started < 20
    assert result.operations > 2000


@SETTINGS
@given(valid_history(), st.data())
def test_a_writer_that_reads_back_fewer_partitions_is_a_violation(
    ops: list[Operation], data: st.DataObject
) -> None:
    # Partition counts never go down, so after its own expansion to N completed, a client that
    # reads fewer than N missed its own write: a violation at both read levels.
    writes = [o for o in ops if o.outcome == "ok" and isinstance(o.op, CreatePartitions)]
    if not writes:
        return
    w = data.draw(st.sampled_from(writes))
    assert isinstance(w.op, CreatePartitions) and w.complete is not None
    seen = data.draw(st.integers(1, w.op.count - 1))
    read = Operation(len(ops), w.process, Describe(w.op.topic), "ok", w.complete + 1,
                     w.complete + data.draw(st.integers(2, 100)), TopicView(None, seen))
    level = data.draw(st.sampled_from(list(ReadLevel)))
    result = check([*ops, read], level, time_limit=30)
    assert result.verdict is Verdict.VIOLATION, result.explain()
