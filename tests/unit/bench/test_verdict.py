"""Which rows fail a run of bench_controller.py, and why."""

from __future__ import annotations

from typing import Any

from _controller.verdict import figure_problem, problems, row_problem
from _steady import summary_fields
from tests.unit.bench.leaderships import MOVED, STEADY
from tests.unit.bench.rows import load, system_rows


def test_a_clean_run_has_no_problem() -> None:
    rows = [*system_rows("chunkraft", 1.0), *system_rows("etcd", 1.0),
            *system_rows("pysyncobj", 1.0)]
    assert problems(rows) == []


def test_a_row_of_ours_with_errors_fails_the_run() -> None:
    problem = row_problem(load("chunkraft", "single", 32, ops=600, errors=3,
                               first_error="503 leader changed"))
    assert problem is not None
    assert "3 errors" in problem and "503 leader changed" in problem
    assert "reference" not in problem


def test_a_reference_row_with_errors_is_a_broken_comparison() -> None:
    row = load("etcd", "single", 32, ops=0, errors=6057,
               first_error='401 {"error":"etcdserver: invalid auth token"}')
    problem = row_problem(row)
    assert problem is not None
    assert problem.startswith("broken comparison: reference etcd")
    assert "6,057 errors" in problem and "invalid auth token" in problem


def test_a_reference_row_that_measured_nothing_fails_the_run() -> None:
    problem = row_problem(load("pysyncobj", "single", 32, ops=0))
    assert problem is not None and "nothing measured" in problem
    assert problem.startswith("broken comparison: reference pysyncobj")


def test_summaries_are_not_counted_twice() -> None:
    rows = [load("etcd", "single", 32, ops=0, errors=5),
            load("etcd", "single", 32, ops=0, errors=5, summary=True)]
    assert len(problems(rows)) == 1


def test_errors_are_what_failover_measures() -> None:
    rows = [{"item": "failover", "system": "chunkraft", "run": 0, "failover_s": 0.7,
             "errors_after_kill": 40, "errors": 40},
            {"item": "failover", "system": "etcd", "runs": 2, "succeeded": 2,
             "median_s": 1.1, "summary": True}]
    assert problems(rows) == []


def test_a_failover_that_never_recovered_fails_the_run() -> None:
    row = {"item": "failover", "system": "etcd", "runs": 2, "succeeded": 0, "summary": True}
    problem = row_problem(row)
    assert problem is not None and "no run saw a successful write" in problem


def test_a_step_that_raised_fails_the_run() -> None:
    problem = row_problem({"item": "failure", "step": "etcd", "error": "TimeoutError()"})
    assert problem == "the etcd step raised TimeoutError()"


def test_a_pool_that_ran_out_fails_the_run() -> None:
    row = load("chunkraft", "batched", 32, ops=300)
    row["pool_exhausted"] = True
    problem = row_problem(row)
    assert problem is not None and "pool ran out" in problem


def test_rows_without_figures_pass() -> None:
    assert problems([{"item": "plan", "items": ["throughput"]},
                     {"item": "partitions", "first_op_records": 1002},
                     {"item": "ceiling", "system": "pysyncobj", "mode": "sync",
                      "calls_per_s": 580.0, "errors": 0}]) == []


def moved_run(system: str) -> list[dict[str, Any]]:
    """A system's rows of one run in which the 32-client single-op window's leader moved (and
    its summary counts it)."""
    rows = system_rows(system, 1.0)
    for row in rows:
        if (row["item"], row["clients"], row["processes"]) == ("single", 32, 1):
            row.update(MOVED.fields() if not row.get("summary") else summary_fields([
                MOVED.fields()]))
        elif not row.get("summary"):
            row.update(STEADY.fields())
    return rows


def test_a_window_whose_leader_moved_fails_the_run_with_the_sentence() -> None:
    found = problems(moved_run("chunkraft"))
    assert found == [f"chunkraft, single, create-topic, 32 client(s), run 0: the leader moved "
                     f"during the window: {MOVED.moved}"]


def test_a_reference_whose_leader_moved_is_a_broken_comparison() -> None:
    found = problems(moved_run("etcd"))
    assert len(found) == 1
    assert found[0].startswith("broken comparison: reference etcd, single, etcd-put")
    assert "1 leadership change(s) and a term 1 higher" in found[0]


def test_a_summary_of_a_moved_run_has_no_sound_figure() -> None:
    summary = next(r for r in moved_run("pysyncobj") if r.get("summary"))
    assert row_problem(summary) is None  # its run says why, once
    problem = figure_problem(summary)
    assert problem is not None and "the leader moved during 1 of its 1 runs" in problem


def test_steady_windows_pass() -> None:
    rows = [{**row, **STEADY.fields()} for row in system_rows("etcd", 1.0)
            if not row.get("summary")]
    assert problems(rows) == []


def test_a_partitions_summary_whose_leader_moved_fails_the_run() -> None:
    row = {"item": "partitions", "system": "chunkraft", "ops": 30, "p50_ms": 90.0,
           "summary": True, **MOVED.fields()}
    problem = row_problem(row)
    assert problem is not None and problem.startswith("chunkraft, partitions: the leader moved")


def test_a_ceiling_whose_leader_moved_fails_the_run() -> None:
    row = {"item": "ceiling", "system": "pysyncobj", "mode": "sync", "calls_per_s": 580.0,
           "errors": 0, **MOVED.fields()}
    problem = row_problem(row)
    assert problem is not None
    assert problem.startswith("broken comparison: reference pysyncobj, ceiling, sync")
