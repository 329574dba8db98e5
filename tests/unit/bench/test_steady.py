"""The steady-leader rule of the benches (bench/_steady.py): a window whose leader moved fails."""

from __future__ import annotations

import json

import pytest

from _steady import (
    KEY,
    MOVED_RUNS,
    LeadershipWindow,
    WindowLeadership,
    exit_status,
    failed_rows,
    leadership_problem,
    summary_fields,
    window_moved,
)
from chunkraft.local.steady_leader import LeadershipSample
from tests.unit.bench.leaderships import MOVED, STEADY, sample


def test_a_steady_window_has_nothing_moved() -> None:
    assert STEADY.moved is None
    assert STEADY.leadership_changes() == 0 and STEADY.term_increments() == 0
    assert leadership_problem({"item": "x", **STEADY.fields()}) is None


def test_a_moved_window_names_the_counts() -> None:
    assert MOVED.moved is not None
    assert MOVED.moved.startswith("1 leadership change(s) and a term 1 higher")
    assert "node 1 saw leader 1 at term 3, then leader 2 at term 4" in MOVED.moved
    assert MOVED.leadership_changes() == 1 and MOVED.term_increments() == 1


def test_the_row_field_is_start_end_and_the_sentence() -> None:
    row = json.loads(json.dumps({"item": "x", **MOVED.fields()}))
    assert set(row[KEY]) == {"start", "end", "moved"}
    assert row[KEY]["moved"] == MOVED.moved
    assert row[KEY]["start"]["2"] == {"leader_id": 1, "epoch": 3, "leadership_changes": 1,
                                      "term_increments": 0}
    assert row[KEY]["end"]["2"]["leader_id"] == 2
    assert json.loads(json.dumps(STEADY.as_json()))["moved"] is None


def test_a_moved_row_fails_with_the_sentence() -> None:
    problem = leadership_problem({"item": "x", **MOVED.fields()})
    assert problem == f"the leader moved during the window: {MOVED.moved}"


def test_a_term_that_rose_without_a_new_leader_is_a_move() -> None:
    moved = window_moved(sample(), sample(epoch=5, changes=2, increments=2))
    assert moved is not None and "a term 2 higher" in moved


def test_controllers_that_disagree_on_the_leader_fail_the_window() -> None:
    split = LeadershipSample({**sample().nodes, **sample(leader=2, nodes=(3,)).nodes})
    moved = window_moved(sample(), split)
    assert moved is not None and "did not agree on a leader at the end" in moved


def test_a_sample_in_which_nobody_answered_cannot_pass() -> None:
    moved = window_moved(sample(), LeadershipSample({}))
    assert moved is not None and "no node of the quorum answered at the end" in moved
    assert "could not be checked" in moved


def test_a_restarted_node_s_counts_are_left_out() -> None:
    start = sample()
    end = LeadershipSample({**sample().nodes,
                            **sample(changes=0, nodes=(3,), incarnation="b").nodes})
    window = WindowLeadership(start, end)
    assert window.moved is None and window.leadership_changes() == 0


def test_a_summary_counts_its_moved_runs() -> None:
    runs = [{"run": 0, **STEADY.fields()}, {"run": 1, **MOVED.fields()}, {"run": 2}]
    fields = summary_fields(runs)
    assert fields == {MOVED_RUNS: 1}
    problem = leadership_problem({"runs": 3, **fields})
    assert problem == "the leader moved during 1 of its 3 runs"
    assert leadership_problem({"runs": 3, **summary_fields(runs[:1])}) is None


def test_failed_rows_names_each_moved_window_once() -> None:
    rows = [{"run": 0, **STEADY.fields()}, {"run": 1, **MOVED.fields()},
            {"summary": True, "runs": 2, MOVED_RUNS: 1}]
    found = failed_rows(rows, lambda row: f"run {row.get('run')}")
    assert found == [f"run 1: the leader moved during the window: {MOVED.moved}"]


def test_the_window_samples_both_edges_even_when_its_body_raised() -> None:
    samples = iter([sample(), sample(leader=2, epoch=4, changes=2, increments=1)])
    window = LeadershipWindow(lambda: next(samples))
    with pytest.raises(RuntimeError, match="not closed"):
        window.result()
    with pytest.raises(ValueError), window:
        raise ValueError("the load failed")
    assert window.result().moved == MOVED.moved


def test_the_exit_status_is_1_with_each_reason_on_stderr(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    assert exit_status([]) == 0
    assert exit_status(["run 1: the leader moved during the window: 1 leadership change(s)"]) == 1
    assert capsys.readouterr().err == ("the run fails: run 1: the leader moved during the "
                                       "window: 1 leadership change(s)\n")
