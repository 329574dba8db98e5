"""bench_controller.py's flags and its verdict on a run's rows (exit status)."""

from __future__ import annotations

import ast
from pathlib import Path

import bench_controller
from _controller.results import Results
from _steady import summary_fields
from bench_controller import parse_args, references, verdict
from tests.unit.bench.leaderships import MOVED
from tests.unit.bench.rows import system_rows

BENCH = Path(bench_controller.__file__).parent


def results_of(rows: list[dict[str, object]], **plan: object) -> Results:
    results = Results()
    results.rows = [{"item": "plan", "items": ["throughput"],
                     "references": ["etcd", "pysyncobj"], **plan}, *rows]
    return results


def test_the_flags_people_run_still_parse() -> None:
    args = parse_args(["--quick", "--repeats", "1", "--only", "throughput"])
    assert args.quick and args.only == ["throughput"] and args.duration is None
    args = parse_args(["--only", "partitions", "--only", "throughput", "--only", "failover",
                       "--keep"])
    assert args.only == ["partitions", "throughput", "failover"] and args.keep
    args = parse_args(["--only", "throughput", "--skip-etcd", "--skip-raw", "--repeats", "3"])
    assert references(args) == []
    assert references(parse_args([])) == ["etcd", "pysyncobj"]
    assert parse_args(["--quick", "--duration", "1"]).duration == 1.0


def test_a_sound_run_exits_zero() -> None:
    results = results_of([*system_rows("chunkraft", 1.0), *system_rows("etcd", 2.0),
                          *system_rows("pysyncobj", 0.5)])
    comparison, found = verdict(results)
    assert found == [] and comparison is not None and len(comparison.ratios) == 8


def test_a_reference_that_was_to_run_and_did_not_fails_the_run() -> None:
    results = results_of([*system_rows("chunkraft", 1.0), *system_rows("pysyncobj", 0.5)])
    _comparison, found = verdict(results)
    assert found and all("reference missing: no etcd 3.4 row" in p for p in found)


def test_etcd_not_found_fails_the_run() -> None:
    results = results_of([*system_rows("chunkraft", 1.0), *system_rows("pysyncobj", 0.5)],
                         missing=["etcd"])
    _comparison, found = verdict(results)
    assert found[0].startswith("etcd was to run but was not found")


def test_a_skipped_reference_does_not() -> None:
    results = results_of([*system_rows("chunkraft", 1.0), *system_rows("pysyncobj", 0.5)],
                         references=["pysyncobj"])
    assert verdict(results)[1] == []


def test_without_the_throughput_item_there_is_no_ratio_table() -> None:
    results = results_of([{"item": "partitions", "system": "chunkraft", "p50_ms": 90.0,
                           "summary": True}], items=["partitions"])
    assert verdict(results) == (None, [])


def test_a_reference_whose_leader_moved_fails_the_run_and_has_no_ratio() -> None:
    etcd = system_rows("etcd", 2.0)
    for row in etcd:
        if (row["item"], row["clients"], row["processes"]) == ("single", 32, 1):
            row.update(summary_fields([MOVED.fields()]) if row.get("summary")
                       else MOVED.fields())
    results = results_of([*system_rows("chunkraft", 1.0), *etcd,
                          *system_rows("pysyncobj", 0.5)])
    comparison, found = verdict(results)
    assert comparison is not None and len(comparison.ratios) == 7
    assert found[0].startswith("broken comparison: reference etcd, single, etcd-put, "
                               "32 client(s), run 0: the leader moved during the window: 1 "
                               "leadership change(s)")
    assert any(p.startswith("no ratio for") and "moved during 1 of its 1 runs" in p
               for p in found[1:])


def test_a_partitions_window_whose_leader_moved_fails_the_run() -> None:
    results = results_of([{"item": "partitions", "system": "chunkraft", "p50_ms": 90.0,
                           "summary": True, **MOVED.fields()}], items=["partitions"])
    comparison, found = verdict(results)
    assert comparison is None and len(found) == 1 and MOVED.moved in found[0]


def test_the_modules_of_the_bench_import_each_other_without_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for path in sorted((BENCH / "_controller").glob("*.py")):
        tree = ast.parse(path.read_text())
        graph[path.stem] = {node.module.split(".")[1] for node in ast.walk(tree)
                            if isinstance(node, ast.ImportFrom) and node.module
                            and node.module.startswith("_controller.")}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module not in done:
            for imported in graph.get(module, ()):
                visit(imported, (*path, module))
            done.add(module)

    for module in graph:
        visit(module, ())
    assert all(len(path.read_text().splitlines()) < 400
               for path in (*BENCH.glob("_controller/*.py"), BENCH / "bench_controller.py"))
