"""The steady-leader rule of every bench window that measures a steady state (shared/BENCH.md).

A window that measures a steady state is valid only if the quorum's leader and term are the same
at its start and at its end. Every such window is wrapped in a :class:`LeadershipWindow` (or
samples its edges itself) with a :data:`Sampler` of its quorum: ``LocalCluster.leadership`` for
chunkraft, ``EtcdCluster.leadership`` and ``RawCluster.leadership`` for the references. The
window's row then carries ``"leadership": {"start": ..., "end": ..., "moved": null | "..."}``
(:meth:`WindowLeadership.as_json`), and :func:`leadership_problem` turns a row whose leadership
moved into the reason it fails the run (the sentence of ``steady_leader.leadership_moved``,
which names the counts). A summary of several windows carries ``leadership_moved_runs``
(:func:`summary_fields`), so that its figure is never shown as sound either.

Benches that measure a fault (a kill, a restart, a replacement) do not use this: a moving
leader is what they measure. Everything here but the sampling is a pure function of samples and
rows; nothing is thread-safe beyond what a frozen dataclass is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from chunkraft.local.steady_leader import LeadershipSample, leadership_moved

__all__ = [
    "KEY",
    "MOVED_RUNS",
    "LeadershipWindow",
    "Sampler",
    "WindowLeadership",
    "exit_status",
    "failed_rows",
    "leadership_problem",
    "summary_fields",
    "window_moved",
    "window_problem",
]

Sampler = Callable[[], LeadershipSample]
"""Samples every node of one quorum now (it never raises for a node that does not answer)."""
KEY = "leadership"
"""The field of a row that holds its window's leadership."""
MOVED_RUNS = "leadership_moved_runs"
"""The field of a summary row that counts its runs whose leadership moved."""


def window_moved(start: LeadershipSample, end: LeadershipSample) -> str | None:
    """What moved between the window's two samples, in words, or None if nothing did.

    ``leadership_moved``'s rule, plus one: a sample in which no node answered cannot show a
    steady leader, so it fails the window too (never a silent pass)."""
    silent = [name for name, sample in (("at the start", start), ("at the end", end))
              if not sample.nodes]
    if silent:
        return (f"no node of the quorum answered {' nor '.join(silent)}: the leadership "
                "could not be checked")
    return leadership_moved(start, end)


def _largest_rise(start: LeadershipSample, end: LeadershipSample, field: str) -> int:
    """The largest rise of a node's counter (``field``) between the samples, over the nodes
    in both that did not restart (another incarnation, or a counter that fell: its counts
    began again)."""
    rises = [getattr(end.nodes[n], field) - getattr(first, field)
             for n, first in start.nodes.items()
             if n in end.nodes and end.nodes[n].incarnation == first.incarnation]
    return max((rise for rise in rises if rise >= 0), default=0)


@dataclass(frozen=True, slots=True)
class WindowLeadership:
    """A quorum's leadership at a window's start and end, and what moved between them."""

    start: LeadershipSample
    end: LeadershipSample

    @property
    def moved(self) -> str | None:
        """The sentence that fails the window, or None when its leader was steady."""
        return window_moved(self.start, self.end)

    def leadership_changes(self) -> int:
        """Changes of leader in the window, as the node that saw most of them counted."""
        return _largest_rise(self.start, self.end, "leadership_changes")

    def term_increments(self) -> int:
        """By how much the term rose in the window (one election raises it by one)."""
        return _largest_rise(self.start, self.end, "term_increments")

    def as_json(self) -> dict[str, object]:
        """The row's ``leadership`` field: both samples, per node, and the sentence."""
        return {"start": self.start.as_json(), "end": self.end.as_json(), "moved": self.moved}

    def fields(self) -> dict[str, object]:
        """``{"leadership": ...}``, to merge into the window's row."""
        return {KEY: self.as_json()}


class LeadershipWindow:
    """A context manager that samples the quorum as the window opens and as it closes.

    ``with LeadershipWindow(cluster.leadership) as window: ...`` then ``window.result()``. The
    end is sampled even when the body raised (cheap, and the caller decides what to keep).
    Not thread-safe: one window, one thread."""

    def __init__(self, sample: Sampler) -> None:
        self._sample = sample
        self._start: LeadershipSample | None = None
        self._end: LeadershipSample | None = None

    def __enter__(self) -> LeadershipWindow:
        self._start = self._sample()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._end = self._sample()

    def result(self) -> WindowLeadership:
        """Both samples; only once the window has closed."""
        if self._start is None or self._end is None:
            raise RuntimeError("the window has not closed yet")
        return WindowLeadership(self._start, self._end)


def window_problem(row: Mapping[str, Any]) -> str | None:
    """Why the row's own window (its ``leadership`` field) was not steady, or None (steady, or
    the row has no window of its own)."""
    leadership = row.get(KEY)
    if isinstance(leadership, Mapping) and leadership.get("moved"):
        return f"the leader moved during the window: {leadership['moved']}"
    return None


def leadership_problem(row: Mapping[str, Any]) -> str | None:
    """Why ``row``'s figures do not measure a steady state, or None.

    A row with its own window (``leadership``) fails with the sentence of what moved; a
    summary (``leadership_moved_runs``) with the count of its runs that did. A row with
    neither (no quorum to check, or a bench measuring a fault) has no such problem."""
    own = window_problem(row)
    if own is not None:
        return own
    moved_runs = row.get(MOVED_RUNS)
    if isinstance(moved_runs, int) and moved_runs > 0:
        runs = row.get("runs")
        which = f"of its {runs} runs" if isinstance(runs, int) else "of the runs it summarises"
        return f"the leader moved during {moved_runs} {which}"
    return None


def summary_fields(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{"leadership_moved_runs": n}`` for a summary of ``rows`` (n: those whose own window
    moved)."""
    return {MOVED_RUNS: sum(1 for row in rows if window_problem(row) is not None)}


def failed_rows(rows: Iterable[Mapping[str, Any]],
                describe: Callable[[Mapping[str, Any]], str]) -> list[str]:
    """One reason per row whose own window's leadership moved, each led by
    ``describe(row)`` (the bench's words for where the row stands in its run); a summary's
    count is left out, its runs are among ``rows``."""
    return [f"{describe(row)}: {problem}" for row in rows
            if (problem := window_problem(row)) is not None]


def exit_status(problems: Sequence[str]) -> int:
    """Prints each reason the run fails on stderr (``the run fails: ...``); 1 if there is
    any, else 0: the exit status of a bench whose rows follow this rule."""
    for problem in problems:
        print(f"the run fails: {problem}", file=sys.stderr, flush=True)
    return 1 if problems else 0
