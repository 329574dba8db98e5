"""The audit's reports: ``report.json`` (machine-readable), ``report.md`` and ``report.html``.

:func:`write_reports` writes all three into a directory, each file atomically; the job calls
:func:`write_error_report` when the audit could not run. ``docs/audit.md`` documents the JSON.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from chunkraft.audit.model import AuditReport
from chunkraft.audit.report.atomic import write_text_atomic
from chunkraft.audit.report.html_page import render_html
from chunkraft.audit.report.json_report import error_json, report_json
from chunkraft.audit.report.markdown import render_markdown

__all__ = ["JSON_NAME", "render_html", "render_markdown", "report_json", "write_error_report",
           "write_reports"]

JSON_NAME = "report.json"
MARKDOWN_NAME = "report.md"
HTML_NAME = "report.html"


def write_reports(report: AuditReport, out: Path) -> list[Path]:
    """Creates ``out`` if needed and writes report.json, report.md and report.html into it
    (each atomically); returns their paths in that order."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # JSON first: a scheduler that reads only report.json sees the new result soonest.
    return [
        write_text_atomic(out / JSON_NAME, report_json(report)),
        write_text_atomic(out / MARKDOWN_NAME, render_markdown(report)),
        write_text_atomic(out / HTML_NAME, render_html(report)),
    ]


def write_error_report(out: Path, message: str, *, engine: str,
                       snapshot_path: str | None) -> Path:
    """Writes ``out/report.json`` with ``"status": "error"`` and ``message``; returns its path.

    The report.md and report.html of an earlier run are removed, so the directory never shows
    an old result next to this run's error.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = write_text_atomic(out / JSON_NAME,
                             error_json(message, engine=engine, snapshot_path=snapshot_path))
    for stale in (MARKDOWN_NAME, HTML_NAME):
        with contextlib.suppress(FileNotFoundError):
            (out / stale).unlink()
    return path
