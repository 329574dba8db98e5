"""Report files are replaced atomically: no temporary file survives, a failure keeps the old."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.audit.report import write_reports
from chunkraft.audit.report.atomic import write_text_atomic
from tests.unit.audit.report.builders import clean_report, violations_report


def test_write_reports_writes_three_files_and_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    paths = write_reports(clean_report(), out)
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html"]
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
    write_reports(violations_report(), out)  # over an earlier run
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
    assert '"status": "violations"' in (out / "report.json").read_text(encoding="utf-8")


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    write_text_atomic(target, "old\n")

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("chunkraft.audit.report.atomic.os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(target, "new\n")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
