"""The RESULTS.md section: the verdict first, the ratio table with its run, no broken figure."""

from __future__ import annotations

from _controller.ratios import compare
from _controller.report import report
from _controller.results import Results
from _controller.verdict import problems
from tests.unit.bench.leaderships import MOVED, STEADY
from tests.unit.bench.rows import system_rows

PLAN = {"item": "plan", "items": ["throughput"], "references": ["etcd", "pysyncobj"],
        "duration_s": 1.0, "code": "commit abc1234", "command": "python bench/x.py --quick"}


def results_of(rows: list[dict[str, object]]) -> Results:
    results = Results()
    results.rows = [dict(PLAN), *rows]
    results.notes = ["Code measured: commit abc1234."]
    return results


def test_a_sound_run_records_the_ratios_with_its_command_and_commit() -> None:
    results = results_of([*system_rows("chunkraft", 1.0), *system_rows("etcd", 2.0),
                          *system_rows("pysyncobj", 0.5)])
    comparison = compare(results.rows, ["etcd", "pysyncobj"])
    text = "\n".join(report(results, comparison, problems(results.rows)))
    assert text.startswith("Verdict: every row measured without errors")
    assert ("### Ratios ours/reference, from this run (commit abc1234, "
            "`python bench/x.py --quick`)") in text
    assert "| measure | chunkraft | etcd 3.4 | ours/etcd | raw pysyncobj | ours/raw |" in text
    assert "1 s windows" in text
    assert text.index("### Ratios") < text.index("### 2-4.")


def test_a_broken_reference_heads_the_section_and_its_row_is_left_out() -> None:
    results = results_of([*system_rows("chunkraft", 1.0),
                          *system_rows("etcd", 2.0, ops_per_s=0.0, records_per_s=0.0,
                                       errors=6057, first_error="invalid auth token"),
                          *system_rows("pysyncobj", 0.5)])
    comparison = compare(results.rows, ["etcd", "pysyncobj"])
    found = [*problems(results.rows), *comparison.problems]
    lines = report(results, comparison, found)
    assert lines[0].startswith("**This run FAILED**")
    assert any("broken comparison: reference etcd" in line and "6,057 errors" in line
               for line in lines[:6])
    etcd_lines = [line for line in lines if line.startswith("| etcd | put | 32 |")]
    assert etcd_lines == []  # its 32-client put row (0 ops/s) is not shown
    assert any(line.startswith("| etcd | put | 1 |") for line in lines)


def test_a_partitions_window_whose_leader_moved_has_no_table() -> None:
    part = {"item": "partitions", "system": "chunkraft", "ops": 30, "p50_ms": 90.0,
            "p99_ms": 120.0, "min_ms": 80.0, "max_ms": 130.0, "leader_changes": 0,
            "summary": True}
    steady = results_of([{**part, **STEADY.fields()}])
    assert any(line.startswith("### 1. createPartitions") for line in report(steady, None, []))
    moved = results_of([{**part, **MOVED.fields()}])
    lines = report(moved, None, problems(moved.rows))
    assert lines[0].startswith("**This run FAILED**") and MOVED.moved in lines[2]
    assert not any(line.startswith("### 1. createPartitions") for line in lines)


def test_rows_read_back_skip_what_is_derived() -> None:
    lines = ['{"bench": "controller", "item": "single", "system": "etcd"}',
             '{"bench": "controller", "item": "ratio", "ratio": 0.5}',
             '{"bench": "controller", "item": "problem", "text": "x"}',
             '{"bench": "controller", "item": "note", "text": "a note"}',
             '{"bench": "api", "item": "single"}', "| a | markdown | line |"]
    results = Results.from_lines(lines)
    assert results.rows == [{"bench": "controller", "item": "single", "system": "etcd"}]
    assert results.notes == ["a note"]
