"""bench_hostile.py's verdict: a baseline with errors, or any window whose leader moved, fails."""

from __future__ import annotations

from typing import Any

from _steady import WindowLeadership
from bench_hostile import _target_met, problems
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
