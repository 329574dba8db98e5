"""bench_controller.py's flags and its verdict on a run's rows (exit status)."""

from __future__ import annotations

import ast
from pathlib import Path

import bench_controller
from _controller.results import Results
from bench_controller import parse_args, references, verdict
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
