"""report.html: one parseable self-contained page, a chart per section, everything escaped."""

from __future__ import annotations

from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from chunkraft.audit.model import AuditReport
from chunkraft.audit.report import write_reports
from chunkraft.audit.report.html_page import render_html
from tests.unit.audit.report.builders import (
    AMP,
    EVIL,
    clean_report,
    diff_report,
    rules,
    violation,
    violations_report,
)


class _Page(HTMLParser):
    """Collects tags, each chart's rects by class, and all text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.charts: list[dict[str, object]] = []
        self.text: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        self.attributes.extend(v for v in values.values() if v)
        if tag == "svg":
            self.charts.append({"chart": values.get("data-chart"), "chunk": 0, "tail": 0,
                                "bar": 0})
        elif tag == "rect" and self.charts and values.get("class") in {"chunk", "tail", "bar"}:
            chart = self.charts[-1]
            key = str(values["class"])
            chart[key] = int(str(chart[key])) + 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(report: AuditReport) -> _Page:
    page = _Page()
    page.feed(render_html(report))
    page.close()
    return page


def _charts(page: _Page, name: str) -> list[dict[str, object]]:
    return [c for c in page.charts if c["chart"] == name]


def test_page_is_self_contained() -> None:
    text = render_html(diff_report())
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text and "@import" not in text


def test_one_svg_per_chart() -> None:
    page = _parse(diff_report())
    names = [c["chart"] for c in page.charts]
    assert names == ["violations", "brokers", "broker-bytes", "broker-offsets", "racks", "skew",
                     "hottest", "timeline", "diff"]
    assert page.tags.count("svg") == len(names)


def test_clean_banner_and_no_bytes_chart_without_states() -> None:
    page = _parse(clean_report())
    text = "".join(page.text)
    assert "CLEAN: cluster cluster-1" in text
    assert "broker-bytes" not in [c["chart"] for c in page.charts]
    assert not _charts(page, "timeline")
    assert "Offending rows" not in text


def test_violations_bars_one_per_fired_rule() -> None:
    page = _parse(violations_report())
    (violations,) = _charts(page, "violations")
    assert violations["bar"] == 3  # chunks.contiguous, replicas.no_leader, replicas.registered
    text = "".join(page.text)
    assert "VIOLATIONS: cluster cluster-1" in text
    assert "skipped: needs --previous" in text


def test_data_is_escaped_everywhere() -> None:
    report = violations_report()
    raw = render_html(report)
    assert "<script>" not in raw and "<b>bold</b>" not in raw
    page = _parse(report)
    assert "script" not in page.tags and "b" not in page.tags
    text = "".join(page.text)
    assert EVIL in text  # shown as text, in samples, timelines and the hottest chart
    assert f"{EVIL}-1 (hottest)" in text
    assert AMP in text and "a&amp;b" not in text  # escaped once, not twice
    # in attributes too (the timeline's aria-label): escaped in the markup, intact when parsed
    assert f'aria-label="chunk timeline of {EVIL.replace("<", "&lt;").replace(">", "&gt;")}-1"' \
        in raw
    assert f"chunk timeline of {EVIL}-1" in page.attributes


def test_timelines_draw_one_rect_per_chunk_replica_and_hatch_the_tail() -> None:
    report = violations_report()
    page = _parse(report)
    timelines = _charts(page, "timeline")
    assert len(timelines) == len(report.timelines) == 2
    for chart, timeline in zip(timelines, report.timelines, strict=True):
        assert chart["chunk"] == sum(len(c.replicas) for c in timeline.chunks)
        assert chart["tail"] == sum(len(c.replicas) for c in timeline.chunks
                                    if not c.active and c.end_offset > c.stop_offset)
    text = "".join(page.text)
    assert "violation" in text and "4..7 (+..9)" in text


def test_hatch_patterns_have_unique_ids() -> None:
    raw = render_html(violations_report())
    assert raw.count('id="hatch-0"') == 1 and raw.count('id="hatch-1"') == 1


def test_written_page_parses(tmp_path: Path) -> None:
    write_reports(diff_report(), tmp_path)
    page = _Page()
    page.feed((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert page.tags[0] == "html"
    assert "Changes since the previous snapshot" in "".join(page.text)


def test_banner_is_orange_for_warnings_only_and_red_for_errors() -> None:
    warnings_only = replace(clean_report(), rules=rules(
        {"replicas.no_leader": [violation("replicas.no_leader", AMP, 0, 0)]}))
    assert '<header class="banner warnings"' in render_html(warnings_only)
    assert '<header class="banner violations"' in render_html(violations_report())
    assert '<header class="banner clean"' in render_html(clean_report())


def test_summary_box_then_violations_table_then_charts() -> None:
    raw = render_html(violations_report())
    summary, table, chart = (raw.index('id="summary"'), raw.index('class="findings"'),
                             raw.index("<svg"))
    assert summary < table < chart
    box = raw[summary:table]
    assert "Decided by:" in box and "exit 1: 3 rules of severity warning or above fired" in box
    assert "1 error rule fired" not in box and "held" in box  # rule counts per severity
    # each row links to its partition's timeline when drawn, says so when not
    rows = raw[table:raw.index("</table>", table)].split("<tr>")[2:]
    assert len(rows) == 4  # every sample row, errors first: 2 + 1, then the warning's 1
    assert 'href="#timeline-0"' in rows[0]  # AMP-0 is the first timeline
    assert 'href="#timeline-1"' in rows[1]  # EVIL-1 the second
    assert "replicas.registered" in rows[2] and "not drawn" in rows[2]  # not drawn
    assert "replicas.no_leader" in rows[3] and 'href="#timeline-1"' in rows[3]
    assert 'id="timeline-0"' in raw and 'id="timeline-1"' in raw


def test_passing_with_findings_below_fail_on_says_so_and_is_not_green() -> None:
    from chunkraft.audit.catalog import Severity

    only_warnings = replace(violations_report(), fail_on=Severity.ERROR, rules=rules(
        {"replicas.no_leader": [violation("replicas.no_leader", "t", 1, 8, None, "leader -1")]}))
    raw = render_html(only_warnings)
    page = _parse(only_warnings)
    text = "".join(page.text)
    assert "CLEAN" in text and 'class="banner warnings"' in raw
    assert ("exit 0: only rules below --fail-on error fired: replicas.no_leader (1, warning)"
            in text)
    assert "Passed at --fail-on error, with findings below it: 1 warning rule (1 row)." in text


def test_notices_are_in_the_summary_box() -> None:
    raw = render_html(replace(clean_report(), notices=["/x/chunks/part-9.parquet: ignored <b>"]))
    box = raw[raw.index('id="summary"'):raw.index("</section>")]
    assert "Notices about the inputs" in box and "part-9.parquet: ignored &lt;b&gt;" in box
