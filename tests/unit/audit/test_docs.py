"""docs/audit.md stays in step with the catalog and with report.json."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from chunkraft.audit.catalog import RULES, Rule
from tests.unit.audit.report.builders import diff_report, violations_report

DOC = Path(__file__).resolve().parents[3] / "docs" / "audit.md"
# objects whose keys are data (tables, kinds of change, phases, settings, measures, columns)
MAPS = {"snapshot.rows", "diff.counts", "diff.samples", "seconds", "settings", "load.skew"}
# objects with the fields of `snapshot`, documented once there
EXPORTS = ("broker_states[]", "diff.previous")


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.id)
def test_every_rule_is_documented_with_its_severity_and_title(doc: str, rule: Rule) -> None:
    assert f"#### `{rule.id}` ({rule.severity.value})" in doc
    rows = [line for line in doc.splitlines()
            if line.startswith("| [`") and f"`{rule.id}`]" in line]
    assert len(rows) == 1, f"{rule.id} is not once in the rules table"
    assert f"| {rule.severity.value} |" in rows[0]
    assert rows[0].endswith(f"| {rule.title} |")
    section = doc.split(f"#### `{rule.id}` ({rule.severity.value})", 1)[1].split("####", 1)[0]
    assert " ".join(rule.example.split()) in " ".join(section.split())


def test_no_rule_is_documented_that_the_catalog_lacks(doc: str) -> None:
    documented = set(re.findall(r"^#### `([a-z_]+\.[a-z_]+)`", doc, re.M))
    assert documented == {rule.id for rule in RULES}


def _paths(value: Any, prefix: str = "") -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            name = _canonical(f"{prefix}.{key}" if prefix else key)
            if prefix in MAPS:
                name = f"{prefix}.<{_placeholder(prefix)}>"
            elif prefix.endswith("rules[].sample[]"):
                name = f"{prefix[:-2]}[].<column>"
            found.add(name)
            found |= _paths(item, name)
    elif isinstance(value, list):
        for item in value:
            found |= _paths(item, f"{prefix}[]")
    return found


def _canonical(path: str) -> str:
    for export in EXPORTS:  # documented once, with the fields of `snapshot`
        if path.startswith(export + "."):
            return "snapshot" + path[len(export):]
    return path


def _placeholder(prefix: str) -> str:
    return {"snapshot.rows": "table", "diff.counts": "kind", "diff.samples": "kind",
            "seconds": "phase", "settings": "name", "load.skew": "measure"}[prefix]


def test_every_report_json_field_is_documented(doc: str) -> None:
    paths = _paths(diff_report().to_json()) | _paths(violations_report().to_json())
    missing = sorted(p for p in paths if f"| `{p}` |" not in doc)
    assert not missing, f"report.json fields missing from docs/audit.md: {missing}"


def test_error_report_fields_are_documented(doc: str) -> None:
    for field in ("message", "snapshot_path", "engine", "status", "generated_at_ms"):
        assert f"| `{field}` |" in doc
