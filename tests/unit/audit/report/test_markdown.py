"""report.md: summary, rules table, samples, load, diff and KIP-style chunk timelines."""

from __future__ import annotations

from dataclasses import replace

from chunkraft.audit.catalog import RULES
from chunkraft.audit.report.markdown import md, render_markdown
from tests.unit.audit.report.builders import clean_report, diff_report, violations_report


def test_rules_table_lists_every_rule_with_severity_count_and_skips() -> None:
    text = render_markdown(clean_report())
    assert "| rule | severity | title | count | skipped |" in text
    for rule in RULES:
        assert f"| `{rule.id}` | {rule.severity.value} |" in text
    assert "| `producer_ids.grow` | error | producer ids only grow | - | needs --previous |" \
        in text
    assert f"Clean: {len(RULES)} rules checked, none fired" in text
    assert "## Violations" not in text


def test_summary_names_cluster_offset_engine_and_timings() -> None:
    text = render_markdown(clean_report())
    assert "| cluster | cluster-1 |" in text
    assert "| offset | 1,200 |" in text
    assert "| engine | spark |" in text
    assert "| status | clean |" in text
    assert "read 1.50 s, rules 3.25 s, load 0.50 s, total 5.25 s" in text


def test_samples_per_fired_rule_are_escaped_tables() -> None:
    text = render_markdown(violations_report())
    assert "### `chunks.contiguous` (error)" in text
    assert "25 rows, the first 2 below." in text
    assert "| topic_id | topic | partition_id | start_offset | broker_id | detail |" in text
    assert "a&amp;b | 0 | 4 | - | starts at 4, previous stops at 2 |" in text
    assert "<script>" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "### `replicas.registered` (error)" in text
    assert "1 row." in text


def test_load_and_diff_sections() -> None:
    text = render_markdown(diff_report())
    assert "| 1 | rack-a | no | 2 | 4 | 1 | 650 | 8.0 KiB |" in text
    assert "| 2 | - | yes | 2 | 1 | 0 | 100 | - |" in text
    assert "| chunk\\_replicas | 1.50x |" in text
    assert "## Changes since the previous snapshot" in text
    assert "| chunks\\_created | 3 |" in text
    assert ("| a&amp;b | 5f0c1d2e-0000-4000-8000-000000000001 | 0 | - | \\[0, 1\\] "
            "| \\[1, 2\\] |") in text


def test_timeline_is_the_kips_table_of_offsets_per_broker() -> None:
    text = render_markdown(replace(clean_report(), timelines=violations_report().timelines))
    assert "| offsets | start time | broker 0 | broker 1 | broker 2 |" in text
    assert "| 0..3 | 2025-11-22 08:10:00.000 UTC | 0..3 | 0..3 | 0..3 |" in text
    held = "4..7 (+8..9)"
    assert f"| {held} | 2025-11-22 08:11:40.000 UTC | {held} | {held} | {held} |" in text
    assert "| 8.. (active) | 2025-11-22 08:13:20.000 UTC | 8.. |  | 8.. |" in text


def test_md_escapes_table_breakers_and_markup() -> None:
    assert md("a|b") == "a\\|b"
    assert md("x\ny") == "x y"
    assert md("<i>") == "&lt;i&gt;"
    assert md(None) == "-"
    assert md([1, 2]) == "\\[1, 2\\]"
