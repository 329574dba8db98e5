"""bench_propagation.py: a run whose leader moved fails the bench."""

from __future__ import annotations

from typing import Any

from _steady import failed_rows
from bench_propagation import describe
from tests.unit.bench.leaderships import MOVED, STEADY


def run_row(rate: int, per_request: int, **fields: Any) -> dict[str, Any]:
    return {"bench": "propagation", "target_ops_per_s": rate, "ops_per_request": per_request,
            "seconds": 10.0, "requests": 1000, "failed": 0, **fields}


def test_only_the_run_whose_leader_moved_fails() -> None:
    rows = [run_row(100, 1, **STEADY.fields()), run_row(1000, 10, **MOVED.fields())]
    assert failed_rows(rows, describe) == [
        f"1000 operations/s, 10 a request: the leader moved during the window: {MOVED.moved}"]
