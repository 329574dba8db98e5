"""bench_hostile.py's verdict: a baseline with errors, or any window whose leader moved, fails;
each row's targets, the leader's Raft tick gaps among them, and the table that shows them."""

from __future__ import annotations

from typing import Any

from _steady import WindowLeadership
from bench_hostile import TICK_GAP_P99_TARGET_MS, _table, _target_lines, _target_met, problems
from tests.unit.bench.leaderships import MOVED, STEADY


def row(attack: str, leadership: WindowLeadership = STEADY, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bench": "hostile", "attack": attack, "hostile_seconds": 0.4, "hostile_status": 413,
        "hostile_outcome": "too large", "raft_term_increases": leadership.term_increments(),
        "brokers_fenced": 0, "good_ops": 900, "good_errors": 0, "good_first_error": "",
        "good_p50_ms": 20.0, "good_p99_ms": 80.0, "window_s": 20.0, **leadership.fields()}
    return {**out, **fields}


def test_steady_windows_pass_and_meet_the_target() -> None:
    rows = [row("baseline"), row("admin-8mb")]
    assert problems(rows) == []
    assert all(_target_met(r) for r in rows)


def test_an_attack_that_moved_the_leader_fails_the_run_naming_the_counts() -> None:
    moved = row("raft-junk-64mib", MOVED)
    assert moved["raft_term_increases"] == 1
    assert not _target_met(moved)
    assert problems([row("baseline"), moved]) == [
        f"attack raft-junk-64mib: the leader moved during the window: {MOVED.moved}"]


def test_a_baseline_with_errors_fails_the_run() -> None:
    found = problems([row("baseline", good_errors=3)])
    assert found == ["attack baseline: the baseline row has 3 errors and 900 ops"]


TICK_TARGET = f"leader's Raft tick gap p99 <= {TICK_GAP_P99_TARGET_MS} ms"


def ticks(p99: float | None, highest: float | None = 60.0, beyond: int = 0) -> dict[str, Any]:
    return {"leader_tick_gap_p99_ms": p99, "leader_tick_gap_max_ms": highest,
            "leader_tick_gap_beyond_count": beyond}


def test_the_leader_s_tick_gap_p99_is_held_to_its_target() -> None:
    assert TICK_GAP_P99_TARGET_MS == 50
    assert _target_met(row("admin-8mb", **ticks(12.5)))
    assert _target_met(row("admin-8mb", **ticks(50.0)))  # at the target is within it
    assert not _target_met(row("admin-8mb", **ticks(50.1, 100.0)))
    # Gaps that could not be scraped prove nothing: missed, never passed by default.
    assert not _target_met(row("admin-8mb", **ticks(None, None)))


def test_the_table_shows_the_leader_s_tick_gaps_p99_and_max() -> None:
    rows = [row("baseline", **ticks(4.2)), row("admin-8mb", **ticks(75.0, 100.0)),
            row("raft-junk-64mib", **ticks(2500.0, 2500.0, beyond=3)),
            row("slowloris-500", **ticks(None, None))]
    header, rule, *lines = _table(rows)
    columns = [c.strip() for c in header.strip("|").split("|")]
    at = columns.index("leader tick gap p99 / max ms")
    assert columns[-1] == "target" and rule.count("|") == header.count("|")
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert [c[at] for c in cells] == ["4.2 / 60", "75 / 100", "2500 / >2500", "n/a"]
    assert [c[-1] for c in cells] == ["met", "MISSED", "MISSED", "MISSED"]
    older = [c.strip() for c in _table([row("baseline")])[2].strip("|").split("|")]
    assert older[at] == "" and older[-1] == "met"  # a row that never measured them


def test_one_line_per_target_says_which_attacks_missed_it() -> None:
    rows = [row("baseline", **ticks(4.2)), row("admin-8mb", **ticks(75.0, 100.0)),
            row("unauthorized-8mb", hostile_seconds=3.0, **ticks(3.0))]
    lines = _target_lines(rows)
    assert lines[:2] == ["| target | windows met | missed by |", "|---|---|---|"]
    by_name = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert by_name[TICK_TARGET] == f"| {TICK_TARGET} | 2 of 3 | admin-8mb |"
    # The baseline sends no hostile request: that target judges the other two windows only.
    assert by_name["hostile request answered within 2 s"] == (
        "| hostile request answered within 2 s | 1 of 2 | unauthorized-8mb |")
    assert by_name["leader and term unmoved, no broker fenced"].endswith("| 3 of 3 | none |")
