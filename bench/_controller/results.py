"""Results: the rows and notes one run of bench_controller.py collects, in order.

Each row is printed as a JSON line as it is recorded (``_report.emit``), so a run's stdout holds
everything, and ``--report-from`` rebuilds the same :class:`Results` from those lines. Rows that
are derived from others (ratios, problems) are recomputed from the rows, never read back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from _report import emit

BENCH = "controller"
DERIVED_ITEMS = frozenset({"ratio", "problem"})
"""Items computed from the other rows at the end of a run; ``from_lines`` skips them."""


class Results:
    """The rows and notes of one run. Not thread-safe: a run records from one thread."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.notes: list[str] = []

    def record(self, row: dict[str, Any]) -> dict[str, Any]:
        """Prints ``row`` (tagged with the bench's name) as a JSON line and keeps it."""
        row = {"bench": BENCH, **row}
        emit(row)
        self.rows.append(row)
        return row

    def note(self, text: str) -> None:
        """A sentence for the RESULTS.md section (also printed as a JSON line)."""
        self.notes.append(text)
        emit({"bench": BENCH, "item": "note", "text": text})

    def summaries(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("summary")]

    def plan(self) -> dict[str, Any]:
        """The run's ``plan`` row (what it set out to measure), or an empty dict."""
        return next((r for r in self.rows if r.get("item") == "plan"), {})

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> Results:
        """The rows and notes of earlier runs' stdout (lines that are not JSON are skipped)."""
        results = cls()
        for line in lines:
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if row.get("bench") != BENCH or row.get("item") in DERIVED_ITEMS:
                continue
            if row.get("item") == "note":
                results.notes.append(row["text"])
            else:
                results.rows.append(row)
        return results
