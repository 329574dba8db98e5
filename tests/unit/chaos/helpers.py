"""Building histories by hand: one line per operation, with its times."""

from __future__ import annotations

from chunkraft.chaos.history import Op, Operation, Outcome, TopicView


class H:
    """A hand-written history: ``h.ok(p, op, invoke, complete, value)`` and friends."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def _add(
        self, process: int | str, op: Op, outcome: Outcome, invoke: int, complete: int | None,
        value: TopicView | str | None = None, error: str | None = None,
    ) -> H:
        index = len(self.ops)
        self.ops.append(Operation(index, process, op, outcome, invoke, complete, value, error))
        return self

    def ok(
        self, process: int | str, op: Op, invoke: int, complete: int,
        value: TopicView | str | None = None,
    ) -> H:
        return self._add(process, op, "ok", invoke, complete, value)

    def fail(self, process: int | str, op: Op, invoke: int, complete: int, error: str) -> H:
        return self._add(process, op, "fail", invoke, complete, error=error)

    def info(self, process: int | str, op: Op, invoke: int) -> H:
        return self._add(process, op, "info", invoke, None)
