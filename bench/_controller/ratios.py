"""One table of ratios, ours over each reference, from the summaries of one run.

:data:`MEASURES` are the comparable rows: the same client code, concurrency and payload for
every system. A ratio is only computed from two sound figures: a reference that was to run but
has no row, or whose row has errors or no figure, is a broken comparison and the run fails
(:func:`compare` returns why). A reference skipped on purpose (``--skip-etcd``) is "skipped".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from _controller.verdict import OURS, REFERENCES, figure_problem


@dataclass(frozen=True)
class Measure:
    """A figure compared across systems: which summary row, and which of its fields."""

    label: str
    item: str
    clients: int
    processes: int
    variant: str | None
    key: str
    lower_is_better: bool = False

    def matches(self, row: dict[str, Any], system: str) -> bool:
        return (row.get("summary") is True and row.get("system") == system
                and row.get("item") == self.item and row.get("clients") == self.clients
                and row.get("processes", 1) == self.processes
                and row.get("variant") == self.variant)


MEASURES = (
    Measure("single op (createTopics RF 3 / put / 1 value), 32 clients, ops/s",
            "single", 32, 1, None, "ops_per_s"),
    Measure("the same, 2 client processes, ops/s", "single", 32, 2, "two client processes",
            "ops_per_s"),
    Measure("single op, 1 client, p50 ms (lower is better: a ratio < 1 means ours is faster)",
            "single", 1, 1, None, "p50_ms", lower_is_better=True),
    Measure("100-record operations, 32 clients, records/s", "batched", 32, 1, None,
            "records_per_s"),
)


@dataclass(frozen=True)
class Ratio:
    measure: Measure
    reference: str
    ours: float
    theirs: float

    @property
    def value(self) -> float:
        return self.ours / self.theirs

    def row(self) -> dict[str, Any]:
        """The ratio as a JSON line's fields."""
        return {"item": "ratio", "measure": self.measure.label, "reference": self.reference,
                "ours": self.ours, "theirs": self.theirs, "ratio": round(self.value, 3),
                "better": "lower" if self.measure.lower_is_better else "higher"}


@dataclass
class Comparison:
    """The ratios of a run, the figures they came from, and why any could not be computed."""

    references: tuple[str, ...]
    ratios: list[Ratio]
    figures: dict[tuple[str, str], float]
    """Every sound figure, by (measure label, system)."""
    problems: list[str]

    def ratio(self, measure: Measure, reference: str) -> Ratio | None:
        return next((r for r in self.ratios if r.measure == measure
                     and r.reference == reference), None)


def _find(summaries: Sequence[dict[str, Any]], measure: Measure,
          system: str) -> dict[str, Any] | None:
    return next((r for r in summaries if measure.matches(r, system)), None)


def _sound(row: dict[str, Any] | None, measure: Measure, system: str) -> tuple[float | None,
                                                                              str | None]:
    """The row's figure for ``measure``, or why there is none."""
    name = REFERENCES.get(system, system)
    if row is None:
        kind = "reference missing" if system in REFERENCES else "our row is missing"
        return None, f"{kind}: no {name} row for \"{measure.label}\""
    problem = figure_problem(row)
    if problem is not None:
        return None, f"no ratio for \"{measure.label}\": {problem}"
    figure = row.get(measure.key)
    if not isinstance(figure, (int, float)) or figure <= 0:
        return None, f"no ratio for \"{measure.label}\": {name}'s {measure.key} is {figure!r}"
    return float(figure), None


def compare(rows: Iterable[dict[str, Any]], references: Sequence[str]) -> Comparison:
    """Ours over each of ``references`` (the systems that were to run) for every measure."""
    summaries = [r for r in rows if r.get("summary")]
    comparison = Comparison(tuple(references), [], {}, [])
    for measure in MEASURES:
        for system in (OURS, *references):
            figure, problem = _sound(_find(summaries, measure, system), measure, system)
            if problem:
                comparison.problems.append(problem)
            if figure is not None:
                comparison.figures[(measure.label, system)] = figure
        ours = comparison.figures.get((measure.label, OURS))
        for reference in references:
            theirs = comparison.figures.get((measure.label, reference))
            if ours is not None and theirs is not None:
                comparison.ratios.append(Ratio(measure, reference, ours, theirs))
    return comparison


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def markdown(comparison: Comparison) -> list[str]:
    """The table: one line per measure; a column pair per reference system. A figure that
    could not be measured soundly is "broken" (the reasons are listed with the run's
    problems), a reference not run is "skipped": never a 0."""
    header = ["measure", OURS]
    for system in REFERENCES:
        short = "raw" if system == "pysyncobj" else system
        header += [REFERENCES[system], f"ours/{short}"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for measure in MEASURES:
        ours = comparison.figures.get((measure.label, OURS))
        cells = [measure.label, _fmt(ours) if ours is not None else "broken"]
        for system in REFERENCES:
            theirs = comparison.figures.get((measure.label, system))
            ratio = comparison.ratio(measure, system)
            if system not in comparison.references:
                cells += ["skipped", "-"]
            else:
                cells += [_fmt(theirs) if theirs is not None else "broken",
                          f"{ratio.value:.2f}" if ratio is not None else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
