"""Chart primitives: an inline SVG built from escaped parts (no script, no external reference).

Every string that reaches the markup goes through :func:`esc` (text and attribute values
alike): topic names are user input and end up in labels and tooltips.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["Svg", "esc"]

FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"


def esc(value: Any) -> str:
    """``value`` as text safe in HTML or SVG content and in a double-quoted attribute."""
    return html.escape(str(value), quote=True)


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


class Svg:
    """One ``<svg>`` element being built; :meth:`render` returns its markup.

    Coordinates are user units; the element scales to its container's width (viewBox).
    Not thread-safe (a chart is built by one caller).
    """

    def __init__(self, width: float, height: float, label: str, *, chart: str) -> None:
        self.width = width
        self.height = height
        self.label = label
        self.chart = chart
        self._defs: list[str] = []
        self._parts: list[str] = []

    def define(self, markup: str) -> None:
        """Adds trusted markup (built here, never from data) to ``<defs>``."""
        self._defs.append(markup)

    def rect(self, x: float, y: float, width: float, height: float, *, fill: str,
             css: str | None = None, tip: str | None = None, stroke: str | None = None,
             opacity: float | None = None) -> None:
        """A rectangle; ``tip`` becomes its ``<title>`` (the browser's tooltip)."""
        attributes = (f'x="{_number(x)}" y="{_number(y)}" width="{_number(max(width, 0))}" '
                      f'height="{_number(height)}" fill="{esc(fill)}"')
        if css:
            attributes += f' class="{esc(css)}"'
        if stroke:
            attributes += f' stroke="{esc(stroke)}" stroke-width="2"'
        if opacity is not None:
            attributes += f' fill-opacity="{opacity:g}"'
        if tip:
            self._parts.append(f"<rect {attributes}><title>{esc(tip)}</title></rect>")
        else:
            self._parts.append(f"<rect {attributes}/>")

    def text(self, x: float, y: float, content: Any, *, anchor: str = "start",
             size: float = 12, weight: str = "normal", fill: str = "#222",
             tip: str | None = None) -> None:
        """A text label (``anchor``: start, middle or end)."""
        title = f"<title>{esc(tip)}</title>" if tip else ""
        self._parts.append(
            f'<text x="{_number(x)}" y="{_number(y)}" text-anchor="{esc(anchor)}" '
            f'font-size="{size:g}" font-weight="{esc(weight)}" fill="{esc(fill)}">'
            f"{title}{esc(content)}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, *, stroke: str = "#999",
             dash: str | None = None, width: float = 1) -> None:
        dashed = f' stroke-dasharray="{esc(dash)}"' if dash else ""
        self._parts.append(
            f'<line x1="{_number(x1)}" y1="{_number(y1)}" x2="{_number(x2)}" '
            f'y2="{_number(y2)}" stroke="{esc(stroke)}" stroke-width="{width:g}"{dashed}/>')

    def render(self) -> str:
        defs = f"<defs>{''.join(self._defs)}</defs>" if self._defs else ""
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" '
                f'data-chart="{esc(self.chart)}" viewBox="0 0 {_number(self.width)} '
                f'{_number(self.height)}" width="{_number(self.width)}" '
                f'role="img" aria-label="{esc(self.label)}" font-family="{esc(FONT)}">'
                f"<title>{esc(self.label)}</title>{defs}{''.join(self._parts)}</svg>")
