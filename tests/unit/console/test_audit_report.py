"""Finding the newest report.html under the export directory."""

from __future__ import annotations

import os
from pathlib import Path

from chunkraft.console.audit_report import newest_report


def report(path: Path, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("<html></html>")
    os.utime(path, (mtime, mtime))
    return path


def test_the_newest_report_within_the_depth_wins(tmp_path: Path) -> None:
    assert newest_report(tmp_path / "missing") is None
    assert newest_report(tmp_path) is None
    report(tmp_path / "audit-1" / "report.html", 1000)
    newer = report(tmp_path / "runs" / "audit-2" / "report.html", 2000)
    report(tmp_path / "a" / "b" / "c" / "d" / "report.html", 3000)  # too deep
    (tmp_path / "audit-3").mkdir()
    (tmp_path / "audit-3" / "report.md").write_text("not html")
    assert newest_report(tmp_path) == newer


def test_a_directory_named_report_html_is_not_a_report(tmp_path: Path) -> None:
    (tmp_path / "report.html").mkdir()
    assert newest_report(tmp_path) is None
