"""The report's charts as inline SVG: bars (violations, load, skew, hottest, diff) and chunk
timelines (offsets across brokers, like the table of KIP-1114)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chunkraft.audit.catalog import RULES_BY_ID, Severity
from chunkraft.audit.model import AuditReport, LoadSummary, Timeline
from chunkraft.audit.report.svg import Svg
from chunkraft.audit.report.text import (
    DIFF_KINDS,
    format_bytes,
    format_count,
    format_ratio,
    partition_name,
    plural,
    timeline_brokers,
)

__all__ = [
    "SEVERITY_COLOURS",
    "Series",
    "broker_charts",
    "diff_chart",
    "horizontal_bars",
    "hottest_chart",
    "rack_chart",
    "skew_chart",
    "timeline_chart",
    "violations_chart",
]

SEVERITY_COLOURS: dict[Severity, str] = {
    Severity.ERROR: "#c62828", Severity.WARNING: "#ef8f00", Severity.INFO: "#1e88e5"}
_SERIES_COLOURS = ("#3f51b5", "#26a69a", "#8d6e63", "#ab47bc")
_WIDTH = 900.0
_BAR = 14.0
_CHUNK_COLOURS = ("#3f51b5", "#00897b", "#8e24aa", "#6d4c41", "#1e88e5", "#546e7a")


@dataclass(frozen=True)
class Series:
    """One measure of a bar chart: a value (null: not known) and its label per category;
    ``colours`` overrides ``colour`` per category."""

    name: str
    colour: str
    values: Sequence[float | None]
    labels: Sequence[str]
    colours: Sequence[str] | None = None


def horizontal_bars(categories: Sequence[str], series: Sequence[Series], *, label: str,
                    chart: str, legend: Sequence[tuple[str, str]] | None = None,
                    markers: Sequence[tuple[float, str]] = (),
                    tips: Sequence[str] | None = None, shared_scale: bool = True) -> str:
    """Grouped horizontal bars, one group per category and one bar per series, each labelled
    with its value; ``markers`` draws dashed reference lines at given values. Without
    ``shared_scale`` each series is scaled to its own maximum (measures of different units
    side by side: the bars compare categories, the labels give the values)."""
    # A one-series chart keeps its legend too: it is the only visible name of what the bars
    # measure (``label`` is for screen readers).
    legend = list(legend) if legend is not None else [(s.name, s.colour) for s in series]
    left = min(260.0, 16.0 + 7.0 * max((len(c) for c in categories), default=4))
    top = 26.0 if legend else 8.0
    group = _BAR * len(series) + 8.0
    height = top + group * max(len(categories), 1) + 8.0
    longest = max((len(text) for s in series for text in s.labels), default=4)
    area = _WIDTH - left - min(320.0, 12.0 + 6.5 * longest)  # room for the value labels
    highest = max([v for s in series for v in s.values if v is not None]
                  + [m for m, _ in markers] + [0.0])
    scale = area / highest if highest > 0 else 0.0
    scales = [scale if shared_scale else _scale(area, measure) for measure in series]
    svg = Svg(_WIDTH, height, label, chart=chart)
    x = left
    for name, colour in legend:
        svg.rect(x, 6, 10, 10, fill=colour)
        svg.text(x + 14, 15, name, size=11)
        x += 24 + 7 * len(name)
    for index, category in enumerate(categories):
        y = top + index * group
        svg.text(left - 6, y + group / 2 + 2, category, anchor="end",
                 tip=tips[index] if tips else None)
        for position, measure in enumerate(series):
            value = measure.values[index]
            bar_y = y + position * _BAR
            colour = measure.colours[index] if measure.colours else measure.colour
            if value is not None and value > 0:
                # the smallest non-zero value stays visible
                width = max(value * scales[position], 2.0)
                svg.rect(left, bar_y + 1, width, _BAR - 2, fill=colour, css="bar",
                         tip=f"{category}: {measure.name} {measure.labels[index]}")
            else:
                width = 0.0
            svg.text(left + width + 4, bar_y + _BAR - 3, measure.labels[index], size=11,
                     fill="#444")
    for value, name in markers:
        svg.line(left + value * scale, top - 4, left + value * scale, height - 4,
                 stroke="#555", dash="4 3")
        svg.text(left + value * scale + 3, height - 1, name, size=10, fill="#555")
    svg.line(left, top - 4, left, height - 4, stroke="#bbb")
    return svg.render()


def _scale(area: float, series: Series) -> float:
    highest = max([v for v in series.values if v is not None] + [0.0])
    return area / highest if highest > 0 else 0.0


def violations_chart(report: AuditReport) -> str:
    """Violating rows per rule, coloured by severity; skipped rules say so."""
    results = report.rules
    colours = [SEVERITY_COLOURS[r.severity] for r in results]
    labels = [f"skipped: {r.skipped}" if r.skipped else format_count(r.count) for r in results]
    series = Series("violating rows", "#c62828", [float(r.count) for r in results], labels,
                    colours)
    legend = [(severity.value, colour) for severity, colour in SEVERITY_COLOURS.items()]
    tips = [f"{RULES_BY_ID[r.rule_id].severity.value}: {RULES_BY_ID[r.rule_id].title}"
            for r in results]
    return horizontal_bars([r.rule_id for r in results], [series],
                           label="violating rows by rule", chart="violations", legend=legend,
                           tips=tips)


def broker_charts(load: LoadSummary) -> list[str]:
    """Replicas and leaders per broker; then bytes on disk (or offsets held, without states)."""
    if not load.brokers:
        return []
    names = [f"broker {b.broker_id}" + (" (fenced)" if b.fenced else "") for b in load.brokers]
    counts = [
        Series("chunk replicas", _SERIES_COLOURS[0],
               [float(b.chunk_replicas) for b in load.brokers],
               [format_count(b.chunk_replicas) for b in load.brokers]),
        Series("partition replicas", _SERIES_COLOURS[1],
               [float(b.partition_replicas) for b in load.brokers],
               [format_count(b.partition_replicas) for b in load.brokers]),
        Series("leaders", _SERIES_COLOURS[2], [float(b.leaders) for b in load.brokers],
               [format_count(b.leaders) for b in load.brokers]),
    ]
    charts = [horizontal_bars(names, counts, label="replicas and leaders per broker",
                              chart="brokers")]
    if any(b.bytes is not None for b in load.brokers):
        data = Series("bytes on disk", _SERIES_COLOURS[3],
                      [None if b.bytes is None else float(b.bytes) for b in load.brokers],
                      [format_bytes(b.bytes) for b in load.brokers])
        charts.append(horizontal_bars(names, [data], label="bytes on disk per broker",
                                      chart="broker-bytes"))
    offsets = Series("offsets held in inactive chunks", _SERIES_COLOURS[3],
                     [float(b.offsets) for b in load.brokers],
                     [format_count(b.offsets) for b in load.brokers])
    charts.append(horizontal_bars(names, [offsets],
                                  label="offsets of inactive chunks held per broker",
                                  chart="broker-offsets"))
    return charts


def rack_chart(load: LoadSummary) -> str | None:
    if not load.racks:
        return None
    names = [f"{r.rack if r.rack is not None else '(no rack)'} ({r.brokers} brokers)"
             for r in load.racks]
    series = [
        Series("chunk replicas", _SERIES_COLOURS[0], [float(r.chunk_replicas) for r in load.racks],
               [format_count(r.chunk_replicas) for r in load.racks]),
        Series("partition replicas", _SERIES_COLOURS[1],
               [float(r.partition_replicas) for r in load.racks],
               [format_count(r.partition_replicas) for r in load.racks]),
    ]
    if any(r.bytes is not None for r in load.racks):
        series.append(Series("bytes", _SERIES_COLOURS[3],
                             [None if r.bytes is None else float(r.bytes) for r in load.racks],
                             [format_bytes(r.bytes) for r in load.racks]))
    return horizontal_bars(names, series, label="load per rack (each measure to its own scale)",
                           chart="racks", shared_scale=False)


def skew_chart(load: LoadSummary, max_skew: float | None) -> str | None:
    """max / mean per measure, with the even spread (1.0) and the load.skew threshold marked."""
    if not load.skew:
        return None
    measures = list(load.skew)
    values = [load.skew[m] for m in measures]
    colours = ["#c62828" if max_skew is not None and v is not None and v > max_skew
               else _SERIES_COLOURS[0] for v in values]
    markers = [(1.0, "even")]
    if max_skew is not None:
        markers.append((max_skew, f"--max-skew {max_skew:g}"))
    return horizontal_bars(measures, [Series("max / mean", _SERIES_COLOURS[0], values,
                                             [format_ratio(v) for v in values], colours)],
                           label="skew: max / mean over brokers", chart="skew", markers=markers)


def hottest_chart(load: LoadSummary) -> str | None:
    if not load.hottest:
        return None
    names = [partition_name(p.topic, p.partition_id) for p in load.hottest]
    series = Series("offsets in inactive chunks", _SERIES_COLOURS[0],
                    [float(p.offsets) for p in load.hottest],
                    [f"{plural(p.offsets, 'offset')}, {plural(p.chunks, 'chunk')}"
                     + (f", {format_bytes(p.bytes)}" if p.bytes is not None else "")
                     for p in load.hottest])
    return horizontal_bars(names, [series], label="hottest partitions by offsets",
                           chart="hottest")


def diff_chart(counts: dict[str, int]) -> str:
    kinds = [k for k in DIFF_KINDS if k in counts] + sorted(k for k in counts
                                                             if k not in DIFF_KINDS)
    colours = ["#2e7d32" if k.endswith("created") else "#c62828" if k.endswith("removed")
               else "#ef8f00" for k in kinds]
    series = Series("changes", "#2e7d32", [float(counts[k]) for k in kinds],
                    [format_count(counts[k]) for k in kinds], colours)
    legend = [("created", "#2e7d32"), ("moved", "#ef8f00"), ("removed", "#c62828")]
    return horizontal_bars([k.replace("_", " ") for k in kinds], [series],
                           label="changes since the previous snapshot", chart="diff",
                           legend=legend)


def timeline_chart(timeline: Timeline, flagged: set[int], index: int) -> str:
    """A partition's chunks on one lane per broker: each chunk drawn on its replicas' lanes,
    ``[start, stop]`` solid, ``(stop, end]`` hatched, the active chunk open to the right.

    ``flagged`` holds the start offsets of chunks named by a violation (outlined in red);
    ``index`` makes the hatch pattern's id unique in the page.
    """
    brokers = timeline_brokers(timeline)
    left, lane, top = 80.0, 24.0, 34.0
    height = top + lane * max(len(brokers), 1) + 32.0
    area = _WIDTH - left - 20.0
    inactive = [c for c in timeline.chunks if not c.active]
    first = min((c.start_offset for c in timeline.chunks), default=0)
    last = max([c.end_offset for c in inactive] + [c.start_offset for c in timeline.chunks]
               + [first])
    span = max(last - first + 1, 1)
    if any(c.active for c in timeline.chunks):
        span += max(span // 8, 1)  # room for the open-ended active chunk
    scale = area / span

    def at(offset: int) -> float:
        return left + (offset - first) * scale

    name = partition_name(timeline.topic, timeline.partition_id)
    svg = Svg(_WIDTH, height, f"chunk timeline of {name}", chart="timeline")
    hatch = f"hatch-{index}"
    # The hatch has no background: over another chunk's colour it shows the overlap.
    svg.define(f'<pattern id="{hatch}" width="6" height="6" patternUnits="userSpaceOnUse" '
               f'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" '
               f'stroke="#212121" stroke-opacity="0.6" stroke-width="2"/></pattern>')
    svg.text(left, 14, f"{name} ({timeline.why})", weight="bold")
    for position, broker in enumerate(brokers):
        y = top + position * lane
        svg.rect(left, y, area, lane - 4, fill="#eceff1")
        svg.text(left - 6, y + lane / 2 + 2, f"broker {broker}", anchor="end", size=11)
    axis = top + lane * len(brokers)
    tails: list[tuple[float, float, float, str, str]] = []
    labelled_until = -1e9
    for number, chunk in enumerate(timeline.chunks):
        colour = _CHUNK_COLOURS[number % len(_CHUNK_COLOURS)]
        x0 = at(chunk.start_offset)
        if chunk.active:
            solid_end, tail_end = left + area, None
            tip = f"active chunk from offset {chunk.start_offset:,}"
        else:
            solid_end = at(chunk.stop_offset + 1)
            tail_end = at(chunk.end_offset + 1) if chunk.end_offset > chunk.stop_offset else None
            tip = (f"chunk {chunk.start_offset:,}..{chunk.stop_offset:,}"
                   + (f", held up to {chunk.end_offset:,}" if tail_end is not None else ""))
        bad = chunk.start_offset in flagged
        for broker in chunk.replicas:
            y = top + brokers.index(broker) * lane
            # 1 unit short of the next chunk, so neighbours on a lane stay apart
            svg.rect(x0, y + 2, max(solid_end - x0 - 1, 2.0), lane - 8, fill=colour,
                     css="chunk", tip=f"broker {broker}: {tip}",
                     stroke="#c62828" if bad else None,
                     opacity=0.6 if chunk.active else None)
            if tail_end is not None:
                tails.append((solid_end, tail_end, y, colour,
                              f"broker {broker}: offsets {chunk.stop_offset + 1:,}.."
                              f"{chunk.end_offset:,} held past the stop offset"))
        svg.line(x0, top - 4, x0, axis, stroke="#9e9e9e", dash="2 2")
        label = f"{chunk.start_offset:,}" + ("…" if chunk.active else "")
        if x0 >= labelled_until:  # offsets labelled where there is room
            svg.text(x0, top - 8, label, size=10, fill="#444")
            labelled_until = x0 + 7 * len(label) + 6
        span_label = (f"{chunk.start_offset:,}.." if chunk.active else
                      f"{chunk.start_offset:,}..{chunk.stop_offset:,}"
                      + (f" (+..{chunk.end_offset:,})" if tail_end is not None else ""))
        if 7 * len(span_label) < (tail_end or solid_end) - x0:  # the range, where it fits
            svg.text(x0 + 2, axis + 12, span_label, size=10, fill="#444")
        if bad:
            svg.text(x0 + 2, axis + 24, "violation", size=10, fill="#c62828")
    for start, end, y, colour, tip in tails:  # last: over the chunk that overlaps them
        svg.rect(start, y + 2, max(end - start, 2.0), lane - 8, fill=f"url(#{hatch})",
                 css="tail", tip=tip, stroke=colour)
    return svg.render()
