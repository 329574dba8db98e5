"""``report.md``: the audit as Markdown tables, readable raw in a terminal and rendered in a PR.

Every value that comes from the data (topic names above all: user input) goes through
:func:`md`, which escapes Markdown and inline HTML, so a topic name cannot break a table or
inject markup into a rendered page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from chunkraft.audit.catalog import RULES_BY_ID
from chunkraft.audit.model import AuditReport, DiffSummary, LoadSummary, Timeline, TimelineChunk
from chunkraft.audit.report.text import (
    DIFF_KINDS,
    SAMPLE_COLUMNS,
    cell,
    format_bytes,
    format_count,
    format_ms,
    format_ratio,
    partition_name,
    plural,
    status_line,
    summary_rows,
    timeline_brokers,
)

__all__ = ["md", "render_markdown", "timeline_cells"]

_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[",
            "]": "\\]", "#": "\\#", "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def md(value: Any) -> str:
    """``value`` as text safe inside a Markdown table cell or paragraph."""
    text = cell(value)
    text = "".join(_ESCAPES.get(char, char) for char in text)
    return " ".join(text.splitlines()) if text else text


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return [*lines, ""]


def render_markdown(report: AuditReport) -> str:
    """The whole ``report.md``."""
    lines = [f"# Audit of cluster {md(report.snapshot.cluster_id)}", "",
             f"**{md(status_line(report))}**", ""]
    lines += _table(["", ""], [(label, md(value)) for label, value in summary_rows(report)])
    lines += _rules(report)
    lines += _samples(report)
    lines += _load(report.load)
    if report.diff is not None:
        lines += _diff(report.diff)
    lines += _timelines(report.timelines)
    return "\n".join(lines).rstrip("\n") + "\n"


def _rules(report: AuditReport) -> list[str]:
    rows = []
    for result in report.rules:
        rule = RULES_BY_ID[result.rule_id]
        count = "-" if result.skipped else format_count(result.count)
        rows.append((f"`{rule.id}`", rule.severity.value, md(rule.title), count,
                     md(result.skipped) if result.skipped else ""))
    return ["## Rules", "", *_table(["rule", "severity", "title", "count", "skipped"], rows)]


def _samples(report: AuditReport) -> list[str]:
    fired = [result for result in report.rules if result.fired]
    if not fired:
        return []
    lines = ["## Violations", ""]
    for result in fired:
        rule = RULES_BY_ID[result.rule_id]
        shown = len(result.sample)
        lines += [f"### `{rule.id}` ({rule.severity.value}): {md(rule.title)}", "",
                  plural(result.count, "row")
                  + (f", the first {shown} below." if shown < result.count else "."), ""]
        if result.sample:
            lines += _table(list(SAMPLE_COLUMNS),
                            ([md(row.get(column)) for column in SAMPLE_COLUMNS]
                             for row in result.sample))
    return lines


def _load(load: LoadSummary) -> list[str]:
    lines = ["## Load", "", "### Brokers", ""]
    lines += _table(
        ["broker", "rack", "fenced", "partition replicas", "chunk replicas", "leaders",
         "offsets", "bytes"],
        ((str(b.broker_id), md(b.rack), "yes" if b.fenced else "no",
          format_count(b.partition_replicas), format_count(b.chunk_replicas),
          format_count(b.leaders), format_count(b.offsets), format_bytes(b.bytes))
         for b in load.brokers))
    lines += ["### Racks", ""]
    lines += _table(
        ["rack", "brokers", "partition replicas", "chunk replicas", "offsets", "bytes"],
        ((md(r.rack), format_count(r.brokers), format_count(r.partition_replicas),
          format_count(r.chunk_replicas), format_count(r.offsets), format_bytes(r.bytes))
         for r in load.racks))
    lines += ["### Skew (max / mean over brokers)", ""]
    lines += _table(["measure", "skew"],
                    ((md(measure), format_ratio(value)) for measure, value in load.skew.items()))
    lines += ["### Hottest partitions", ""]
    lines += _table(
        ["partition", "topic id", "chunks", "offsets", "bytes"],
        ((md(partition_name(p.topic, p.partition_id)), md(p.topic_id), format_count(p.chunks),
          format_count(p.offsets), format_bytes(p.bytes)) for p in load.hottest))
    return lines


def _diff(diff: DiffSummary) -> list[str]:
    lines = ["## Changes since the previous snapshot", "",
             f"Previous snapshot: {md(diff.previous.path)} (offset {diff.previous.offset:,}, "
             f"taken {format_ms(diff.previous.snapshot_time_ms)}).", ""]
    kinds = [kind for kind in DIFF_KINDS if kind in diff.counts]
    kinds += sorted(kind for kind in diff.counts if kind not in DIFF_KINDS)
    lines += _table(["change", "count"],
                    ((md(kind), format_count(diff.counts[kind])) for kind in kinds))
    columns = ["topic", "topic_id", "partition_id", "start_offset", "replicas_before",
               "replicas_after"]
    for kind in kinds:
        sample = diff.samples.get(kind) or []
        if sample:
            lines += [f"### {md(kind)}", ""]
            lines += _table(columns, ([md(row.get(c)) for c in columns] for row in sample))
    return lines


def timeline_cells(chunk: TimelineChunk) -> tuple[str, str]:
    """The offsets of a chunk as its row label and as the cell of each of its replicas.

    A consumer reads ``start..stop``; ``(stop+1..end)`` is held too (an open transaction at
    the cut) and read from the next chunk. The active chunk has no end yet: ``start..``.
    """
    if chunk.active:
        return f"{chunk.start_offset:,}.. (active)", f"{chunk.start_offset:,}.."
    held = f"{chunk.start_offset:,}..{chunk.stop_offset:,}"
    if chunk.end_offset > chunk.stop_offset:
        held += f" (+{chunk.stop_offset + 1:,}..{chunk.end_offset:,})"
    return held, held


def _timelines(timelines: list[Timeline]) -> list[str]:
    if not timelines:
        return []
    lines = ["## Chunk timelines", "",
             "One row per chunk, oldest first; a broker's cell shows the offsets it holds "
             "(`start..stop`, then in brackets the offsets held past the stop offset).", ""]
    for timeline in timelines:
        brokers = timeline_brokers(timeline)
        lines += [f"### {md(partition_name(timeline.topic, timeline.partition_id))} "
                  f"({md(timeline.why)})", ""]
        rows = []
        for chunk in timeline.chunks:
            label, held = timeline_cells(chunk)
            replicas = set(chunk.replicas)
            rows.append([label, format_ms(chunk.start_timestamp)]
                        + [held if broker in replicas else "" for broker in brokers])
        lines += _table(["offsets", "start time"] + [f"broker {b}" for b in brokers], rows)
    return lines
