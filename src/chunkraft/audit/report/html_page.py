"""``report.html``: one self-contained page (inline CSS and SVG, no script, no network)."""

from __future__ import annotations

import html

from chunkraft.audit.model import AuditReport
from chunkraft.audit.report.text import status_line

__all__ = ["render_html"]


def render_html(report: AuditReport) -> str:
    """The whole ``report.html``."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>Audit of {html.escape(report.snapshot.cluster_id)}</title></head>"
            f"<body><p>{html.escape(status_line(report))}</p></body></html>\n")
