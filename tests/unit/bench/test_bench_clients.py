"""bench_clients.py: a window whose controllers' leader moved fails the run, once."""

from __future__ import annotations

from typing import Any

from _steady import failed_rows, leadership_problem, summary_fields
from bench_clients import describe
from tests.unit.bench.leaderships import MOVED, STEADY


def read(attempt: int, **fields: Any) -> dict[str, Any]:
    return {"bench": "clients", "measure": "consumer_throughput", "layout": "spread",
            "read": attempt, "records": 50_000, "records_per_s": 40_000, **fields}


def test_a_read_whose_leader_moved_fails_and_its_median_says_so() -> None:
    reads = [read(0, **STEADY.fields()), read(1, **MOVED.fields())]
    median = {"measure": "consumer_throughput_median", "layout": "spread", "runs": 2,
              **summary_fields(reads)}
    assert failed_rows([*reads, median], describe) == [
        "consumer throughput, spread layout, read 1: the leader moved during the window: "
        f"{MOVED.moved}"]
    assert leadership_problem(median) == "the leader moved during 1 of its 2 runs"


def test_the_latency_row_is_named_by_its_measure() -> None:
    row = {"measure": "produce_consume_latency", "p99_ms": 30.0, **MOVED.fields()}
    (problem,) = failed_rows([row], describe)
    assert problem.startswith("produce consume latency: the leader moved during the window")
