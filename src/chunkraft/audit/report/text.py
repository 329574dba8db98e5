"""Formatting shared by the Markdown and HTML reports: times, numbers, rule and sample columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

from chunkraft.audit.model import VIOLATION_COLUMNS, AuditReport, ExportSummary, Timeline

__all__ = [
    "DIFF_KINDS",
    "SAMPLE_COLUMNS",
    "cell",
    "format_bytes",
    "format_count",
    "format_ms",
    "format_ratio",
    "format_seconds",
    "partition_name",
    "plural",
    "rule_counts",
    "status_line",
    "summary_rows",
    "timeline_brokers",
]

SAMPLE_COLUMNS: tuple[str, ...] = tuple(c for c in VIOLATION_COLUMNS if c != "rule_id")
"""The columns of a violation sample as shown (the rule is the section's heading)."""

DIFF_KINDS: tuple[str, ...] = (
    "topics_created", "topics_removed", "partitions_created", "partitions_removed",
    "partitions_moved", "chunks_created", "chunks_removed", "chunks_moved",
)
"""The kinds of change of :class:`DiffSummary`, in the order the reports show them."""


def format_ms(ms: int | None) -> str:
    """A wall-clock time in ms since the epoch as UTC; ``unknown`` for -1 or null."""
    if ms is None or ms < 0:
        return "unknown"
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def format_count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def format_bytes(value: int | None) -> str:
    """Bytes in binary units; ``-`` when unknown (no broker state)."""
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{value:,} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def plural(count: int, word: str) -> str:
    """``1 row``, ``2 rows``: the count with thousands separators and the word agreeing."""
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def format_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def format_seconds(seconds: dict[str, float]) -> str:
    return ", ".join(f"{phase} {value:.2f} s" for phase, value in seconds.items()) or "-"


def partition_name(topic: str | None, partition_id: int | None) -> str:
    """``topic-3``, as Kafka names a partition (``?`` for a topic not in the snapshot)."""
    return f"{topic if topic is not None else '?'}-{partition_id}"


def status_line(report: AuditReport) -> str:
    """One sentence: clean, or how many rows violate how many rules at each severity."""
    fired = [rule for rule in report.rules if rule.fired]
    if not fired:
        skipped = sum(1 for rule in report.rules if rule.skipped)
        tail = f" ({skipped} rules skipped for want of input)" if skipped else ""
        return f"Clean: {len(report.rules)} rules checked, none fired{tail}."
    by_severity: dict[str, list[int]] = {}
    for rule in fired:
        by_severity.setdefault(rule.severity.value, []).append(rule.count)
    parts = [f"{len(counts)} {severity} rule{'s' if len(counts) > 1 else ''} "
             f"({plural(sum(counts), 'row')})"
             for severity in ("error", "warning", "info")
             if (counts := by_severity.get(severity))]
    if report.exit_code() == 0:  # all below --fail-on: found, but the audit passes
        return (f"Passed at --fail-on {report.fail_on.value}, with findings below it: "
                + ", ".join(parts) + ".")
    return "Violations: " + ", ".join(parts) + "."


def rule_counts(report: AuditReport) -> str:
    """How many rules fired per severity, how many held and how many were skipped."""
    fired: dict[str, list[int]] = {}
    for rule in report.rules:
        if rule.fired:
            fired.setdefault(rule.severity.value, []).append(rule.count)
    parts = [f"{len(counts)} {severity} rule{'s' if len(counts) > 1 else ''} fired "
             f"({plural(sum(counts), 'row')})"
             for severity in ("error", "warning", "info") if (counts := fired.get(severity))]
    held = sum(1 for r in report.rules if not r.fired and not r.skipped)
    skipped = sum(1 for r in report.rules if r.skipped)
    parts.append(f"{held} held")
    if skipped:
        parts.append(f"{skipped} skipped for want of input")
    return ", ".join(parts)


def _export(summary: ExportSummary) -> str:
    broker = f", broker {summary.broker_id}" if summary.broker_id is not None else ""
    return (f"{summary.path}{broker} (offset {summary.offset:,}, epoch {summary.epoch}, "
            f"taken {format_ms(summary.snapshot_time_ms)})")


def summary_rows(report: AuditReport) -> list[tuple[str, str]]:
    """The report's summary as (label, value) pairs, for both renderings."""
    status = report.to_json()["status"]
    rows = [
        ("status", status),
        ("exit status", report.decision()),
        ("cluster", report.snapshot.cluster_id),
        ("snapshot", _export(report.snapshot)),
        ("offset", f"{report.snapshot.offset:,}"),
        ("epoch", str(report.snapshot.epoch)),
        ("snapshot time", format_ms(report.snapshot.snapshot_time_ms)),
        ("engine", report.engine),
        ("generated", format_ms(report.generated_at_ms)),
        ("timings", format_seconds(report.seconds)),
        ("previous snapshot", _export(report.diff.previous) if report.diff else "-"),
        ("broker states", "; ".join(_export(s) for s in report.broker_states) or "-"),
        ("rows", ", ".join(f"{name} {count:,}"
                           for name, count in sorted(report.snapshot.rows.items())) or "-"),
    ]
    if report.notices:
        rows.append(("notices", "; ".join(report.notices)))
    if report.settings:
        rows.append(("settings", ", ".join(f"{key}={value}"
                                           for key, value in sorted(report.settings.items()))))
    return rows


def timeline_brokers(timeline: Timeline) -> list[int]:
    """Every broker that holds a replica of one of the timeline's chunks, ascending."""
    return sorted({broker for chunk in timeline.chunks for broker in chunk.replicas})


def cell(value: Any) -> str:
    """A sample value as text (null as ``-``)."""
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return str(value)
