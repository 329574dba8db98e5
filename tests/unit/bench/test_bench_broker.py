"""bench_broker.py's verdict: produce errors, or a window whose controllers' leader moved."""

from __future__ import annotations

from typing import Any

from bench_broker import problems
from tests.unit.bench.leaderships import MOVED, STEADY


def produce(**fields: Any) -> dict[str, Any]:
    return {"item": "produce", "records": 200_000, "records_per_s": 90_000, "errors": {},
            **STEADY.fields(), **fields}


def fetch(**fields: Any) -> dict[str, Any]:
    return {"item": "fetch", "records": 200_000, "records_per_s": 300_000, **STEADY.fields(),
            **fields}


def test_steady_windows_without_errors_pass() -> None:
    assert problems([produce(), fetch()]) == []


def test_a_fetch_window_whose_leader_moved_fails_the_run() -> None:
    assert problems([produce(), fetch(**MOVED.fields())]) == [
        f"the fetch window: the leader moved during the window: {MOVED.moved}"]


def test_produce_errors_still_fail_the_run() -> None:
    found = problems([produce(errors={"NOT_LEADER_OR_FOLLOWER": 2}), fetch()])
    assert found == ["produce errors {'NOT_LEADER_OR_FOLLOWER': 2}: not a measurement"]
