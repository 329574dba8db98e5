"""``report.html``: one self-contained page an operator looks at rather than reads.

Inline CSS and inline SVG only: no script, no font or style sheet from the network, so the file
can be mailed, attached to a ticket or opened offline. What a person opening it after a failed
audit wants comes first, inside the first screen: a status banner and a summary box (status,
what decided the exit status, rule counts, notices about the inputs), then the violations
table (rule, topic, partition, chunk, broker, detail; each row linking to its partition's
timeline when that partition is drawn). The charts follow: violations by rule, the load, the
chunk timelines, the diff; then every rule's offending rows and the run's details. Every value
from the data is escaped (:func:`esc`), in text and in attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from chunkraft.audit.catalog import RULES_BY_ID, Severity
from chunkraft.audit.model import AuditReport, DiffSummary, LoadSummary
from chunkraft.audit.report.charts import (
    SEVERITY_COLOURS,
    broker_charts,
    diff_chart,
    hottest_chart,
    rack_chart,
    skew_chart,
    timeline_chart,
    violations_chart,
)
from chunkraft.audit.report.svg import esc
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
    rule_counts,
    status_line,
    summary_rows,
)

__all__ = ["render_html"]

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#222;
background:#fafafa}
main{max-width:960px;margin:0 auto;padding:0 16px 48px}
.banner{padding:18px 24px;color:#fff}
.banner h1{margin:0 0 4px;font-size:22px}.banner p{margin:0;font-size:15px}
.clean{background:#2e7d32}.violations{background:#c62828}.warnings{background:#ef8f00}
h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
.sev{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px}
svg.chart{display:block;max-width:100%;height:auto;background:#fff;margin:8px 0 16px}
details{margin:4px 0 12px}summary{cursor:pointer;color:#555}
.muted{color:#666;font-size:13px}
.box{background:#fff;border:1px solid #ddd;border-radius:4px;margin:12px 0;padding:8px 14px;
font-size:14px}.box p{margin:4px 0}.box ul{margin:4px 0;padding-left:20px;font-size:13px}
table.findings{width:100%}table.findings td.detail{max-width:420px}
"""

VIOLATION_ROWS = 50
"""Rows of the violations table at the top (the samples of every rule, in catalog order)."""


def render_html(report: AuditReport) -> str:
    """The whole ``report.html``."""
    body = [_banner(report), "<main>", _summary_box(report), _violations(report),
            _rules(report), _load(report)]
    body.append(_timelines(report))
    if report.diff is not None:
        body.append(_diff(report.diff))
    body.append(_samples(report))
    body.append(_summary(report))
    body.append("</main>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Audit of {esc(report.snapshot.cluster_id)}: "
            f"{esc(report.to_json()['status'])}</title><style>{_CSS}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]],
           numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    lines = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{esc(cell(v))}</td>' if i in numeric else f"<td>{esc(cell(v))}</td>"
            for i, v in enumerate(row))
        lines.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def _banner(report: AuditReport) -> str:
    status = report.to_json()["status"]
    css = "clean"
    if status != "clean":
        css = "violations" if report.violations(Severity.ERROR) else "warnings"
    elif report.below_fail_on():
        css = "warnings"  # passed, but something was found: not green
    snapshot = report.snapshot
    return (f'<header class="banner {css}" id="status"><h1>{esc(status.upper())}: cluster '
            f"{esc(snapshot.cluster_id)}</h1><p>{esc(status_line(report))}</p>"
            f"<p>snapshot at offset {snapshot.offset:,}, epoch {snapshot.epoch}, taken "
            f"{esc(format_ms(snapshot.snapshot_time_ms))}; {esc(report.engine)} engine</p>"
            "</header>")


def _summary(report: AuditReport) -> str:
    rows = "".join(f"<tr><th>{esc(label)}</th><td>{esc(value)}</td></tr>"
                   for label, value in summary_rows(report))
    return f'<h2 id="details">Run details</h2><table><tbody>{rows}</tbody></table>'


def _summary_box(report: AuditReport) -> str:
    """Status, what decided the exit status, the rule counts and the inputs' notices."""
    status = report.to_json()["status"]
    lines = [f"<p><strong>Status:</strong> {esc(status)} (exit status "
             f"{report.exit_code()})</p>",
             f"<p><strong>Decided by:</strong> {esc(report.decision())}</p>",
             f"<p><strong>Rules:</strong> {esc(rule_counts(report))}</p>"]
    if report.notices:
        items = "".join(f"<li>{esc(n)}</li>" for n in report.notices)
        lines.append(f"<p><strong>Notices about the inputs:</strong></p><ul>{items}</ul>")
    return f'<section class="box" id="summary">{"".join(lines)}</section>'


def _anchors(report: AuditReport) -> dict[tuple[str, int], str]:
    return {(t.topic_id, t.partition_id): f"timeline-{index}"
            for index, t in enumerate(report.timelines)}


def _violations(report: AuditReport) -> str:
    """Every fired rule's sample rows, most severe rules first, each with a link to its
    partition's timeline when it is drawn."""
    fired = sorted((r for r in report.rules if r.fired),
                   key=lambda r: -r.severity.rank)  # stable: catalog order within a severity
    if not fired:
        return ""
    anchors = _anchors(report)
    rows: list[str] = []
    for result in fired:
        for row in result.sample:
            if len(rows) >= VIOLATION_ROWS:
                break
            partition = row.get("partition_id")
            anchor = (anchors.get((str(row.get("topic_id")), partition))
                      if isinstance(partition, int) else None)
            if anchor is not None:
                link = f'<a href="#{anchor}">timeline</a>'
            elif row.get("partition_id") is None:
                link = ""
            else:
                link = '<span class="muted">not drawn</span>'
            topic = row.get("topic") if row.get("topic") is not None else row.get("topic_id")
            cells = [_severity(result.severity), f"<code>{esc(result.rule_id)}</code>",
                     esc(cell(topic)), esc(cell(row.get("partition_id"))),
                     esc(cell(row.get("start_offset"))), esc(cell(row.get("broker_id"))),
                     esc(cell(row.get("detail"))), link]
            classes = ["", "", "", "num", "num", "num", "detail", ""]
            rows.append("<tr>" + "".join(f'<td class="{c}">{v}</td>' if c else f"<td>{v}</td>"
                                         for c, v in zip(classes, cells, strict=True)) + "</tr>")
    shown = len(rows)
    total = sum(r.count for r in fired)
    sampled = sum(len(r.sample) for r in fired)
    note = (f"{plural(total, 'violating row')}; {shown} shown here"
            + (f" (the samples hold {sampled:,}; see Offending rows)" if sampled > shown else "")
            + (" (counts are exact, samples capped at --sample-size per rule)"
               if total > sampled else "")
            + f". {len(report.timelines)} partitions are drawn as timelines, those named here "
              "first.")
    head = "".join(f"<th>{h}</th>" for h in ("severity", "rule", "topic", "partition", "chunk",
                                             "broker", "detail", ""))
    return (f'<h2 id="violations">Violations</h2><p class="muted">{esc(note)}</p>'
            f'<table class="findings"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _severity(severity: Severity) -> str:
    return (f'<span class="sev" style="background:{SEVERITY_COLOURS[severity]}">'
            f"{esc(severity.value)}</span>")


def _rules(report: AuditReport) -> str:
    rows = []
    for result in report.rules:
        rule = RULES_BY_ID[result.rule_id]
        count = "-" if result.skipped else format_count(result.count)
        rows.append(f"<tr><td><code>{esc(rule.id)}</code></td><td>{_severity(rule.severity)}"
                    f"</td><td>{esc(rule.title)}</td><td class=\"num\">{esc(count)}</td>"
                    f"<td>{esc(result.skipped or '')}</td></tr>")
    table = ("<table><thead><tr><th>rule</th><th>severity</th><th>title</th><th>count</th>"
             f"<th>skipped</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return (f'<h2 id="rules">Violations by rule</h2>{violations_chart(report)}'
            f"<details><summary>the rules as a table</summary>{table}</details>")


def _load(report: AuditReport) -> str:
    load: LoadSummary = report.load
    parts = ['<h2 id="load">Load</h2>', "<h3>Per broker</h3>", *broker_charts(load)]
    parts.append("<details><summary>per broker, as a table</summary>" + _table(
        ["broker", "rack", "fenced", "partition replicas", "chunk replicas", "leaders",
         "offsets", "bytes"],
        ([b.broker_id, b.rack, "yes" if b.fenced else "no", format_count(b.partition_replicas),
          format_count(b.chunk_replicas), format_count(b.leaders), format_count(b.offsets),
          format_bytes(b.bytes)] for b in load.brokers), numeric=(3, 4, 5, 6, 7))
        + "</details>")
    rack = rack_chart(load)
    if rack:
        parts += ["<h3>Per rack</h3>", rack]
    max_skew = report.settings.get("max_skew")
    skew = skew_chart(load, float(max_skew) if isinstance(max_skew, int | float) else None)
    if skew:
        parts += ["<h3>Skew</h3>", skew, _table(
            ["measure", "max / mean"], ([m, format_ratio(v)] for m, v in load.skew.items()),
            numeric=(1,))]
    hottest = hottest_chart(load)
    if hottest:
        parts += ["<h3>Hottest partitions</h3>", hottest, _table(
            ["partition", "topic id", "chunks", "offsets", "bytes"],
            ([partition_name(p.topic, p.partition_id), p.topic_id, format_count(p.chunks),
              format_count(p.offsets), format_bytes(p.bytes)] for p in load.hottest),
            numeric=(2, 3, 4))]
    return "".join(parts)


def _timelines(report: AuditReport) -> str:
    if not report.timelines:
        return ""
    flagged: dict[tuple[str, int], set[int]] = {}
    for result in report.rules:
        for row in result.sample:
            if row.get("start_offset") is not None and row.get("partition_id") is not None:
                key = (str(row.get("topic_id")), int(row["partition_id"]))
                flagged.setdefault(key, set()).add(int(row["start_offset"]))
    charts = [f'<div id="timeline-{index}">'
              + timeline_chart(t, flagged.get((t.topic_id, t.partition_id), set()), index)
              + "</div>" for index, t in enumerate(report.timelines)]
    return ('<h2 id="timelines">Chunk timelines</h2><p class="muted">One lane per broker; '
            "each chunk is drawn on its replicas' lanes: solid up to its stop offset (what "
            "consumers read from it), hatched up to its end offset (held past the cut), the "
            "active chunk open to the right. Chunks named by a violation are outlined in "
            "red.</p>" + "".join(charts))


def _diff(diff: DiffSummary) -> str:
    parts = ['<h2 id="diff">Changes since the previous snapshot</h2>',
             f'<p class="muted">previous snapshot {esc(diff.previous.path)} at offset '
             f"{diff.previous.offset:,}, taken {esc(format_ms(diff.previous.snapshot_time_ms))}"
             "</p>", diff_chart(diff.counts)]
    columns = ["topic", "topic_id", "partition_id", "start_offset", "replicas_before",
               "replicas_after"]
    kinds = [k for k in DIFF_KINDS if k in diff.samples] + sorted(
        k for k in diff.samples if k not in DIFF_KINDS)
    for kind in kinds:
        sample = diff.samples[kind]
        if sample:
            parts.append(f"<h3>{esc(kind.replace('_', ' '))} ({diff.counts.get(kind, 0):,})"
                         "</h3>")
            parts.append(_table(columns, ([row.get(c) for c in columns] for row in sample)))
    return "".join(parts)


def _samples(report: AuditReport) -> str:
    fired = [result for result in report.rules if result.fired]
    if not fired:
        return ""
    parts = ['<h2 id="samples">Offending rows</h2>']
    for result in fired:
        rule = RULES_BY_ID[result.rule_id]
        shown = len(result.sample)
        parts.append(f"<h3>{_severity(rule.severity)} <code>{esc(rule.id)}</code>: "
                     f"{esc(rule.title)}</h3><p class=\"muted\">{plural(result.count, 'row')}"
                     + (f", the first {shown} shown" if shown < result.count else "")
                     + f". {esc(rule.description)}</p>")
        if result.sample:
            parts.append(_table(list(SAMPLE_COLUMNS),
                                ([row.get(c) for c in SAMPLE_COLUMNS] for row in result.sample)))
    return "".join(parts)
