"""Finding the newest audit report (``report.html``) under the export directory.

The console does not run the audit: ``chunkraft audit --out DIR`` writes the report, and when
``DIR`` is inside the controller's ``metadata.snapshot.export.dir`` the console shows the newest
one. The search is bounded (a few levels, a few thousand entries) so a large export directory
never makes a page slow.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MAX_DEPTH", "REPORT_NAME", "newest_report"]

REPORT_NAME = "report.html"
MAX_DEPTH = 3
MAX_ENTRIES = 5000


def newest_report(root: Path, *, max_depth: int = MAX_DEPTH,
                  max_entries: int = MAX_ENTRIES) -> Path | None:
    """The most recently modified ``report.html`` at most ``max_depth`` directories below
    ``root`` (``root`` itself is depth 0), None when there is none or ``root`` is missing."""
    best: tuple[float, Path] | None = None
    seen = 0
    pending: list[tuple[Path, int]] = [(root, 0)]
    while pending and seen < max_entries:
        directory, depth = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < max_depth:
                        pending.append((Path(entry.path), depth + 1))
                elif entry.name == REPORT_NAME and entry.is_file(follow_symlinks=False):
                    modified = entry.stat().st_mtime
                    if best is None or modified > best[0]:
                        best = (modified, Path(entry.path))
            except OSError:
                continue
    return best[1] if best is not None else None
