"""Whether a run's rows may be reported: the rows that fail the run, and why.

A measured window with errors fails the run, unless errors are what the item measures
(failover: the writes between the kill and the new leader). A window whose quorum's leader or
term moved (``_steady``: its row's ``leadership``) fails the run too, a reference's as much as
ours, naming what moved; a summary of runs of which one moved is no sound figure either (it is
left out of the ratios and tables, and its runs say why). A reference system's row (etcd, raw
pysyncobj) with errors, or with nothing measured, is a broken comparison: the run fails and says
why, and no 0 is ever printed next to our figure. A step that raised fails the run too.
Pure functions of the rows; the caller prints the problems and sets the exit status.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from _steady import leadership_problem, window_problem

OURS = "chunkraft"
REFERENCES = {"etcd": "etcd 3.4", "pysyncobj": "raw pysyncobj"}
"""The systems compared with ours, and how the tables name them."""
ERRORS_MEASURED = frozenset({"failover"})
"""Items whose errors are the measurement, not a fault of it."""


def describe(row: dict[str, Any]) -> str:
    """A row's place in the run, in words: system, item, workload, clients, variant, run."""
    parts = [str(row.get("system", "?")), str(row.get("item", "?"))]
    if "workload" in row:
        parts.append(str(row["workload"]))
    if "clients" in row:
        parts.append(f"{row['clients']} client(s)")
    if row.get("processes", 1) != 1:
        parts.append(f"{row['processes']} client processes")
    if row.get("variant"):
        parts.append(str(row["variant"]))
    if "mode" in row:
        parts.append(str(row["mode"]))
    if "run" in row and not row.get("summary"):
        parts.append(f"run {row['run']}")
    return ", ".join(parts)


def _broken(row: dict[str, Any]) -> str:
    """How a reason about ``row`` opens: a reference's row is a broken comparison."""
    return "broken comparison: reference " if row.get("system") in REFERENCES else ""


def figure_problem(row: dict[str, Any]) -> str | None:
    """Why the figures of a measured row (one run, or the summary of runs) cannot be shown:
    errors in its window, nothing measured, a pool that ran out, or a leader that moved
    (in its window, or in one of the runs it summarises); None if they can."""
    what = _broken(row)
    errors = row.get("errors")
    if isinstance(errors, int) and errors > 0:
        first = str(row.get("first_error") or "")[:200]
        return f"{what}{describe(row)}: {errors:,} errors" + (f" (first: {first})" if first
                                                               else "")
    figure = row.get("ops_per_s", row.get("calls_per_s"))
    if isinstance(figure, (int, float)) and figure <= 0:
        return f"{what}{describe(row)}: nothing measured (0 per second)"
    if row.get("pool_exhausted"):
        return (f"{describe(row)}: its topic pool ran out before the window ended, "
                "so the figure is too low")
    moved = leadership_problem(row)
    if moved is not None:
        return f"{what}{describe(row)}: {moved}"
    return None


def row_problem(row: dict[str, Any]) -> str | None:
    """Why ``row`` fails the run, or None if it does not."""
    item = row.get("item")
    if item == "failure":
        return f"the {row.get('step')} step raised {str(row.get('error', ''))[:300]}"
    if item in ERRORS_MEASURED:
        if row.get("summary") and row.get("runs") and not row.get("succeeded"):
            return f"{describe(row)}: no run saw a successful write after the kill"
        return None
    if row.get("summary"):
        moved = window_problem(row)  # a summary with a window of its own (partitions)
        if moved is None:
            return None  # the runs it summarises are checked one by one
        return f"{_broken(row)}{describe(row)}: {moved}"
    return figure_problem(row)


def problems(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Every reason the run fails, one per failing row, in the rows' order."""
    return [p for p in (row_problem(r) for r in rows) if p is not None]
