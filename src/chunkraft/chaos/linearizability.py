"""The history checker: are a history's writes linearizable, and do its reads see what
docs/api.md promises?

The search is Wing and Gong's, with Lowe's memoization ("Testing for Linearizability", 2017)
and Porcupine's P-compositionality: topics are independent, so each topic's operations are
checked alone, against :mod:`chunkraft.chaos.model`, from "absent". A configuration is (the set
of operations linearized so far, the model state); from each, any operation may come next whose
real-time predecessors are all linearized, if the model accepts it with the answer the client
got. Configurations already seen are not searched again, which makes the search polynomial on
the histories a nemesis produces (little concurrency per topic).

- *ok* operations must be linearized, with the model giving the same answer (a create's topic
  id is remembered for later reads).
- *fail* operations with an error the model predicts (TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
  ...) are observations: they must be linearized at a point where the model answers that
  error, and change nothing. Other failures are opaque and left out; they cannot have taken
  effect, so a later read or write that needs them to have happened is the violation.
- *info* operations (outcome unknown) may be linearized anywhere after their invoke, or never.

Reads come in two levels (:class:`ReadLevel`). ``LINEARIZABLE`` orders a read like a write.
``READ_YOUR_WRITES`` is what docs/api.md and docs/controller.md promise: any controller answers
from its own committed image, so a read may be stale, but a client that passes its last write's
``X-Metadata-Offset`` as ``min_offset`` sees that write. Such a read must see a state of the one
write order (a prefix) that includes every earlier write of its own process (ok, or refused
with a modelled error: its offset is the one it was validated against) and no write invoked
after the read completed. It need not follow other clients' writes, nor its own process's
earlier reads: two reads through two controllers may go back in time, and nothing documented
forbids it.

The search is bounded (states and seconds): a history it could not finish is ``UNKNOWN``,
never a hang and never a false verdict.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from chunkraft.chaos.history import CreateTopic, Describe, Operation, TopicView
from chunkraft.chaos.model import (
    MODELLED_ERRORS,
    State,
    step,
    summary,
    view_mismatch,
    with_topic_id,
)


class ReadLevel(enum.Enum):
    """The guarantee reads are checked against."""

    LINEARIZABLE = "linearizable"
    READ_YOUR_WRITES = "read-your-writes"


class Verdict(enum.Enum):
    """``VALID``: a linearization exists; ``VIOLATION``: none does; ``UNKNOWN``: the search hit
    its bound first."""

    VALID = "valid"
    VIOLATION = "violation"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Violation:
    """Why one topic's history has no linearization, from the deepest configuration found.

    ``first_violating`` is the operation that had to be linearized soonest (earliest
    completion) but could not be; ``blocked`` is every operation that could have come next,
    each with the model's reason for refusing it; ``prefix`` is the linearization up to there
    (the last operations only) and ``state`` the model state it led to.
    """

    topic: str
    first_violating: Operation
    blocked: tuple[tuple[Operation, str], ...]
    prefix: tuple[Operation, ...]
    state: State

    def explain(self) -> str:
        """A few lines for a campaign's report."""
        lines = [f"topic {self.topic!r}: no linearization; first violating operation:",
                 f"  {self.first_violating.describe()}",
                 f"after {len(self.prefix)} linearized operation(s), last ones:"]
        lines += [f"  {o.describe()}" for o in self.prefix[-5:]]
        lines.append(f"model state: {summary(self.state)}")
        lines += [f"cannot come next: {o.describe()}: {why}" for o, why in self.blocked]
        return "\n".join(lines)


@dataclass(frozen=True)
class TopicResult:
    """The verdict on one topic's operations."""

    topic: str
    verdict: Verdict
    operations: int
    states: int
    violation: Violation | None = None


@dataclass(frozen=True)
class CheckResult:
    """The verdict on a whole history: ``VIOLATION`` if any topic has one, else ``UNKNOWN`` if
    any search hit its bound, else ``VALID``. ``violations`` are in topic order."""

    verdict: Verdict
    topics: tuple[TopicResult, ...]
    violations: tuple[Violation, ...] = field(default=())

    @property
    def valid(self) -> bool:
        """True only when every topic was shown linearizable."""
        return self.verdict is Verdict.VALID

    @property
    def operations(self) -> int:
        """Operations checked (opaque failures and unknown reads are not counted)."""
        return sum(t.operations for t in self.topics)

    def explain(self) -> str:
        """The summary line, then each violation."""
        head = (f"{self.verdict.value}: {len(self.topics)} topic(s), "
                f"{self.operations} operation(s) checked")
        unknown = [t.topic for t in self.topics if t.verdict is Verdict.UNKNOWN]
        if unknown:
            head += f"; search bound hit on {unknown}"
        return "\n".join([head, *(v.explain() for v in self.violations)])


def check(
    history: Iterable[Operation],
    reads: ReadLevel = ReadLevel.READ_YOUR_WRITES,
    max_states: int = 1_000_000,
    time_limit: float = 60.0,
) -> CheckResult:
    """Check ``history`` (paired operations), one topic at a time.

    ``max_states`` bounds each topic's search, ``time_limit`` (seconds) the whole check.
    """
    deadline = time.monotonic() + time_limit
    by_topic: dict[str, list[Operation]] = {}
    for o in history:
        by_topic.setdefault(o.op.topic, []).append(o)
    results = tuple(
        _Search(topic, _relevant(ops), reads, max_states, deadline).run()
        for topic, ops in sorted(by_topic.items())
    )
    violations = tuple(r.violation for r in results if r.violation is not None)
    if violations:
        verdict = Verdict.VIOLATION
    elif any(r.verdict is Verdict.UNKNOWN for r in results):
        verdict = Verdict.UNKNOWN
    else:
        verdict = Verdict.VALID
    return CheckResult(verdict, results, violations)


def _relevant(ops: list[Operation]) -> list[Operation]:
    """Leave out what constrains nothing: opaque failures and reads of unknown outcome."""
    kept = []
    for o in ops:
        if o.outcome == "fail" and o.error not in MODELLED_ERRORS[type(o.op)]:
            continue
        if o.outcome == "info" and isinstance(o.op, Describe):
            continue
        kept.append(o)
    return kept


# A linearization as a linked list (index, parent), so configurations share their prefixes.
Path = tuple[int, object] | None


class _Search:
    """One topic's Wing-Gong search. Not thread-safe; used once."""

    def __init__(
        self, topic: str, ops: list[Operation], reads: ReadLevel, max_states: int,
        deadline: float,
    ) -> None:
        self.topic = topic
        self.ops = sorted(ops, key=lambda o: (o.invoke, o.index))
        self.max_states = max_states
        self.deadline = deadline
        n = len(self.ops)
        self.required = sum(1 << i for i, o in enumerate(self.ops) if o.outcome != "info")
        done = [math.inf if o.complete is None else o.complete for o in self.ops]
        # pred[i]: the operations that must be linearized before i. In real time, those that
        # completed before i was invoked; a read-your-writes read only follows its own
        # process's writes (every other operation still follows it if invoked after it
        # completed).
        self.pred = [0] * n
        self.weak = [
            isinstance(o.op, Describe) and reads is ReadLevel.READ_YOUR_WRITES for o in self.ops
        ]
        self.weak_indices = [i for i in range(n) if self.weak[i]]
        # One sweep in invoke order over the operations by completion (a real-time predecessor
        # set only grows), so a topic of thousands of operations is not n * n Python steps.
        by_done = sorted(range(n), key=lambda j: done[j])
        finished = 0  # the operations completed so far, as a mask
        own: dict[int | str, int] = {}  # the same, per process, writes only
        k = 0
        for i, o in enumerate(self.ops):
            while k < n and done[by_done[k]] < o.invoke:
                j = by_done[k]
                finished |= 1 << j
                if not isinstance(self.ops[j].op, Describe):
                    own[self.ops[j].process] = own.get(self.ops[j].process, 0) | 1 << j
                k += 1
            self.pred[i] = own.get(o.process, 0) if self.weak[i] else finished

    def apply(self, state: State, o: Operation) -> tuple[bool, State, str]:
        """Linearize ``o`` in ``state``: (allowed, state after, the model's reason)."""
        if isinstance(o.op, Describe):
            seen = o.value if isinstance(o.value, TopicView) else None
            why = view_mismatch(state, seen)
            return why is None, state, why or "reads"
        s = step(state, o.op)
        if o.outcome == "ok":
            if s.error is not None:
                return False, state, f"answered ok, but the model answers {s.error}: {s.why}"
            after = s.after
            if isinstance(o.op, CreateTopic) and isinstance(o.value, str):
                after = with_topic_id(after, o.value)
            return True, after, s.why
        if o.outcome == "fail":
            if s.error != o.error:
                told = "succeeds" if s.error is None else f"answers {s.error}"
                return False, state, f"answered {o.error}, but the model {told}: {s.why}"
            return True, state, s.why
        # info: linearizing one that the model refuses would change nothing, so only the
        # ones that take effect are tried.
        return s.error is None, s.after, s.why

    def candidates(self, mask: int) -> list[int]:
        """The operations that may come next: not linearized, all predecessors linearized."""
        left = ~mask
        out: list[int] = []
        # Operations are in invoke order and a real-time predecessor set only grows with the
        # invoke, so after the first one still waiting, only read-your-writes reads remain.
        first = (left & (mask + 1)).bit_length() - 1
        for i in range(first, len(self.ops)):
            if mask >> i & 1:
                continue
            if self.pred[i] & left:
                if not self.weak[i]:
                    out += (j for j in self.weak_after(i) if not mask >> j & 1
                            and not self.pred[j] & left)
                    return out
                continue
            out.append(i)
        return out

    def weak_after(self, i: int) -> list[int]:
        return [j for j in self.weak_indices if j > i]

    def order(self, mask: int, state: State) -> Iterator[int]:
        """The candidates in the order tried. Known outcomes go by invoke; unknown ones, the
        latest invoked first (the one an observation needs is most often a recent one), come
        after them, except when the earliest known operation is refused here: then it is
        probably waiting for an unknown one to take effect, and going on past it would only
        bury the choice under every later step (just-in-time linearization; on random
        histories of 600 operations on one topic it turned 20 s without an answer into 2 to
        14 s for half of them)."""
        cands = self.candidates(mask)
        known = [i for i in cands if self.required >> i & 1]
        unknown = [i for i in reversed(cands) if not self.required >> i & 1]
        if known and not self.apply(state, self.ops[known[0]])[0]:
            yield from unknown
            yield from known
        else:
            yield from known
            yield from unknown

    def run(self) -> TopicResult:
        # Depth first, children made lazily: a valid history usually linearizes along the
        # first path tried, so computing every sibling up front would be most of the work.
        stack: list[tuple[int, State, Path, Iterator[int]]] = [
            (0, None, None, self.order(0, None))
        ]
        seen: set[tuple[int, State]] = {(0, None)}
        best: tuple[int, State, Path] = (0, None, None)
        best_count = 0
        states = 1
        if self.required == 0:  # only unknown outcomes: "none took effect" explains it
            return TopicResult(self.topic, Verdict.VALID, len(self.ops), states)
        while stack:
            mask, state, path, children = stack[-1]
            i = next(children, None)
            if i is None:
                stack.pop()
                continue
            ok, after, _ = self.apply(state, self.ops[i])
            key = (mask | 1 << i, after)
            if not ok or key in seen:
                continue
            seen.add(key)
            states += 1
            child = (key[0], after, (i, path))
            if child[0] & self.required == self.required:
                return TopicResult(self.topic, Verdict.VALID, len(self.ops), states)
            count = (child[0] & self.required).bit_count()
            if count > best_count:
                best, best_count = child, count
            if states >= self.max_states or (states % 256 == 0
                                             and time.monotonic() > self.deadline):
                return TopicResult(self.topic, Verdict.UNKNOWN, len(self.ops), states)
            stack.append((*child, self.order(child[0], after)))
        return TopicResult(self.topic, Verdict.VIOLATION, len(self.ops), states,
                           self.violation(*best))

    def violation(self, mask: int, state: State, path: object) -> Violation:
        prefix: list[Operation] = []
        while path is not None:
            assert isinstance(path, tuple)
            index, path = path
            prefix.append(self.ops[index])
        prefix.reverse()
        left = [i for i in range(len(self.ops)) if self.required >> i & 1 and not mask >> i & 1]
        first = min(left, key=lambda i: (self.ops[i].complete or 0, i))
        blocked = tuple(
            (self.ops[i], self.apply(state, self.ops[i])[2])
            for i in self.candidates(mask) if self.required >> i & 1
        )
        return Violation(self.topic, self.ops[first], blocked, tuple(prefix), state)
