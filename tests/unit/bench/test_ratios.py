"""The ratio table ours/etcd and ours/raw of one run."""

from __future__ import annotations

import pytest

from _controller.ratios import MEASURES, compare, markdown
from tests.unit.bench.rows import system_rows


def run(**etcd_broken: object) -> list[dict[str, object]]:
    return [*system_rows("chunkraft", 1.0), *system_rows("etcd", 2.0, **etcd_broken),
            *system_rows("pysyncobj", 0.5)]


def test_each_measure_has_a_ratio_for_each_reference() -> None:
    comparison = compare(run(), ["etcd", "pysyncobj"])
    assert comparison.problems == []
    assert len(comparison.ratios) == len(MEASURES) * 2
    by = {(r.measure.key, r.measure.clients, r.measure.processes, r.reference): r.value
          for r in comparison.ratios}
    assert by[("ops_per_s", 32, 1, "etcd")] == pytest.approx(0.5)
    assert by[("ops_per_s", 32, 1, "pysyncobj")] == pytest.approx(2.0)
    assert by[("ops_per_s", 32, 2, "etcd")] == pytest.approx(0.5)
    assert by[("records_per_s", 32, 1, "etcd")] == pytest.approx(0.5)


def test_the_p50_ratio_says_lower_is_better() -> None:
    comparison = compare(run(), ["etcd", "pysyncobj"])
    p50 = next(r for r in comparison.ratios if r.measure.key == "p50_ms"
               and r.reference == "etcd")
    assert p50.ours == 2.0 and p50.theirs == 1.0 and p50.value == pytest.approx(2.0)
    assert p50.row()["better"] == "lower"
    assert "lower is better" in p50.measure.label


def test_a_missing_reference_fails_the_run() -> None:
    rows = [*system_rows("chunkraft", 1.0), *system_rows("pysyncobj", 0.5)]
    comparison = compare(rows, ["etcd", "pysyncobj"])
    assert len(comparison.problems) == len(MEASURES)
    assert all(p.startswith("reference missing: no etcd 3.4 row") for p in comparison.problems)
    assert {r.reference for r in comparison.ratios} == {"pysyncobj"}


def test_a_reference_with_errors_gives_no_ratio_and_no_zero() -> None:
    comparison = compare(run(ops_per_s=0.0, errors=6057, first_error="invalid auth token"),
                         ["etcd", "pysyncobj"])
    assert any("6,057 errors" in p and "invalid auth token" in p
               for p in comparison.problems)
    single32 = MEASURES[0]
    assert comparison.ratio(single32, "etcd") is None
    assert comparison.ratio(single32, "pysyncobj") is not None
    table = "\n".join(markdown(comparison))
    line = next(x for x in table.splitlines() if x.startswith(f"| {single32.label} |"))
    assert line == f"| {single32.label} | 1,000 | broken | - | 500 | 2.00 |"
    assert "| 0 |" not in table and "| 0.00 |" not in table


def test_our_missing_row_fails_the_run_too() -> None:
    rows = [r for r in run() if r["system"] != "chunkraft" or r["item"] != "batched"]
    comparison = compare(rows, ["etcd", "pysyncobj"])
    assert comparison.problems == [
        f'our row is missing: no chunkraft row for "{MEASURES[3].label}"']


def test_a_skipped_reference_is_neither_a_problem_nor_a_zero() -> None:
    rows = [*system_rows("chunkraft", 1.0), *system_rows("pysyncobj", 0.5)]
    comparison = compare(rows, ["pysyncobj"])
    assert comparison.problems == []
    table = markdown(comparison)
    assert table[0] == ("| measure | chunkraft | etcd 3.4 | ours/etcd | raw pysyncobj | "
                        "ours/raw |")
    assert all("| skipped | - |" in line for line in table[2:])
