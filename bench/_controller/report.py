"""The RESULTS.md section of a bench_controller.py run, and its verdict on the console.

The section opens with the run's verdict: when the run failed, every reason, before any figure.
Then the ratio table (ours over each reference, from this run, with its command and commit),
then each item's table. Rows whose figures are broken (errors, nothing measured, a leader that
moved during the window) are left out of the tables: their reasons are in the verdict, and no
0 stands next to our figure.
"""

from __future__ import annotations

import sys
from typing import Any

from _controller.ratios import Comparison, markdown
from _controller.results import Results
from _controller.verdict import OURS, figure_problem
from _report import emit

WHAT = {"create-partitions": "createPartitions +100 (101 records)",
        "create-topic": "createTopics 1 partition RF 3 (2 records)",
        "raw-batch": "call of 100 values", "raw-put": "call of 1 value",
        "etcd-txn": "txn of 100 puts", "etcd-put": "put"}


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if value >= 100 else f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def verdict_lines(problems: list[str]) -> list[str]:
    if not problems:
        return ["Verdict: every row measured without errors; every comparison is sound.", ""]
    return ["**This run FAILED** (its exit status is 1): the figures below are not a sound "
            "comparison where these rows are concerned, and the broken rows are left out.", "",
            *[f"- {p}" for p in problems], ""]


def ratio_lines(comparison: Comparison, plan: dict[str, Any]) -> list[str]:
    run = str(plan.get("code") or "the run above")  # "commit abc1234"
    if plan.get("command"):
        run += f", `{plan['command']}`"
    return [f"### Ratios ours/reference, from this run ({run})", "",
            "The same client code, concurrency and payload for every system, the systems one "
            "after another in one sitting. Higher is better for ours, except for the p50.", "",
            *markdown(comparison), ""]


def print_verdict(results: Results, comparison: Comparison | None,
                  problems: list[str]) -> None:
    """The ratios as JSON lines and a markdown table on stdout; the problems as JSON lines and,
    clearly, on stderr at the very end."""
    if comparison is not None:
        for ratio in comparison.ratios:
            emit({"bench": "controller", **ratio.row()})
        print("\n".join(["", *ratio_lines(comparison, results.plan())]), flush=True)
    for problem in problems:
        emit({"bench": "controller", "item": "problem", "text": problem})
    if problems:
        print("\nTHE RUN FAILED:\n" + "\n".join(f"  - {p}" for p in problems), file=sys.stderr,
              flush=True)


def _find(summaries: list[dict[str, Any]], item: str, system: str,
          **match: Any) -> dict[str, Any] | None:
    for r in summaries:
        if r.get("item") == item and r.get("system") == system and all(
                r.get(k) == v for k, v in match.items()):
            return r
    return None


def _partitions(summaries: list[dict[str, Any]]) -> list[str]:
    part = _find(summaries, "partitions", OURS)
    if not part or figure_problem(part) is not None:
        return []  # a leader that moved: the verdict says so, the table would mislead
    met = "met" if part["p50_ms"] <= 150 else "MISSED"
    return ["### 1. createPartitions adding 1,000 partitions (fresh topic, RF 3, one "
            "client, to the leader)", "",
            "| target | ops | p50 ms | p99 ms | min ms | max ms | leader changes | |",
            "|---|---|---|---|---|---|---|---|",
            f"| p50 <= 150 ms | {part['ops']} | {part['p50_ms']} | {part['p99_ms']} | "
            f"{part['min_ms']} | {part['max_ms']} | {part.get('leader_changes', '')} | "
            f"{met} |", ""]


def _load_line(r: dict[str, Any]) -> str:
    what = WHAT[r["workload"]]
    if r.get("variant"):
        what += f", {r['variant']}"
    spread = r.get("records_per_s_spread") if r["batch"] > 1 else r.get("ops_per_s_spread")
    ops = _fmt(r["ops_per_s"])
    recs = _fmt(r["records_per_s"])
    if spread and r["runs"] > 1:
        if r["batch"] > 1:
            recs += f" [{spread[0]:,.0f}, {spread[1]:,.0f}]"
        else:
            ops += f" [{spread[0]:,.0f}, {spread[1]:,.0f}]"
    return (f"| {r['system']} | {what} | {r['clients']} | {ops} | {recs} | "
            f"{r['p50_ms']} | {r['p99_ms']} | {r['client_cpu_cores']} | "
            f"{r['server_cpu_cores']} | {r['server_cpu_ms_per_op']} | "
            f"{r.get('other_cpu_cores', '')} | "
            f"{r['leader_changes'] if r['system'] == OURS else '-'} |")


def _throughput(results: Results, comparison: Comparison | None) -> list[str]:
    summaries = results.summaries()
    load = [r for r in summaries if r.get("item") in ("batched", "single")
            and figure_problem(r) is None]
    lines: list[str] = []
    if comparison is not None:
        lines += ratio_lines(comparison, results.plan())
    if not load:
        return lines
    duration = results.plan().get("duration_s")
    window = f"{duration:g} s windows" if duration else "windows of --duration s"
    lines += [f"### 2-4. Throughput, same client code, {window}, median of runs [min, max]",
              "",
              "| system | load | clients | ops/s | records/s | p50 ms | p99 ms | "
              "client CPU cores | server CPU cores | server CPU ms/op | other CPU cores "
              "| leader changes |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|",
              *(_load_line(r) for r in load), ""]
    targets = []
    sound = [r for r in load if r.get("system") == OURS]
    for label, item, clients, key, goal in (
            ("batched records/s, 1 client", "batched", 1, "records_per_s", 30_000),
            ("batched records/s, 32 clients", "batched", 32, "records_per_s", 30_000),
            ("single-record ops/s, 32 clients", "single", 32, "ops_per_s", 1_000)):
        row = _find(sound, item, OURS, clients=clients, processes=1, variant=None)
        if row:
            verdict = "met" if row[key] >= goal else "MISSED"
            targets.append(f"| {label} | >= {goal:,} | {_fmt(row[key])} | {verdict} |")
    if targets:
        lines += ["| target | goal | measured | |", "|---|---|---|---|", *targets, ""]
    ceilings = [r for r in results.rows if r.get("item") == "ceiling"
                and figure_problem(r) is None]
    if ceilings:
        lines += ["pysyncobj's ceiling, in the leader's process, one thread, no HTTP: " +
                  "; ".join(f"{c['mode']}: {c['calls_per_s']:,.0f} calls/s, "
                            f"{c['records_per_s']:,.0f} records/s" for c in ceilings), ""]
    return lines


def _failover(results: Results) -> list[str]:
    summaries = results.summaries()
    lines: list[str] = []
    for system in (OURS, "etcd"):
        fo = _find(summaries, "failover", system)
        if not fo:
            continue
        runs = [r["failover_s"] for r in results.rows if r.get("item") == "failover"
                and r.get("system") == system and "failover_s" in r]
        verdict = ("met" if fo["median_s"] <= 1.0 else "MISSED") if system == OURS \
            else "comparison"
        if not lines:
            lines += ["### 5. Failover: kill -9 of the leader, one client writing to a "
                      "follower, to the first successful write sent after the kill", "",
                      "| system | target | runs | median s | min s | max s | each run s | |",
                      "|---|---|---|---|---|---|---|---|"]
        lines.append(f"| {system} | {'median <= 1 s' if system == OURS else '-'} | "
                     f"{fo['runs']} | {fo['median_s']} | {fo['min_s']} | {fo['max_s']} | "
                     f"{', '.join(str(t) for t in runs)} | {verdict} |")
    return [*lines, ""] if lines else []


def _restart(results: Results) -> list[str]:
    restart = [r for r in results.rows if r.get("item") == "restart"]
    if not restart:
        return []
    build = next((r for r in restart if r.get("phase") == "build"), {})
    dump = next((r for r in restart if str(r.get("phase", "")).startswith("restart from")), {})
    final = next((r for r in restart if r.get("summary")), {})
    lines = [f"### 6. Restart to ready, {final.get('partitions', 0):,} partitions in the "
             "image", "", "| figure | value |", "|---|---|"]
    if build:
        lines += [f"| build: {build['topics']:,} createTopics of 1,000 partitions (RF 3), "
                  f"4 clients | {build['seconds']} s, {build['records_per_s']:,} "
                  "partitions/s |",
                  f"| peak RSS after the build (VmHWM, MiB per node) | "
                  f"{build['vm_hwm_mib']} |"]
    if dump:
        lines += [f"| restart from the journal (no dump yet), to ready | "
                  f"{dump['journal_restart_ready_s']} s |",
                  f"| Raft dump write, per node (\"Raft dump written ... in X s\") | "
                  f"{dump['dump_s']} |",
                  f"| dump size, bytes | {dump['dump_bytes']} |",
                  f"| Raft epoch before / after the dumps | {dump['epoch_before_dump']} / "
                  f"{dump['epoch_after_dump']} |",
                  f"| peak RSS after the dump (MiB per node) | {dump['vm_hwm_mib']} |"]
    if final:
        verdict = "met" if final["ready_same_hash_s"] <= 60 else "MISSED"
        lines += [f"| kill -9 all three, restart: all /readyz 200 | {final['ready_s']} s |",
                  f"| ... and all report the same image hash at offset "
                  f"{max(v or 0 for v in final['offsets'].values()):,} (target <= 60 s) | "
                  f"{final['ready_same_hash_s']} s ({verdict}) |",
                  f"| peak RSS after the restart (MiB per node) | {final['vm_hwm_mib']} |"]
    return [*lines, ""]


def report(results: Results, comparison: Comparison | None, problems: list[str]) -> list[str]:
    """The lines of the RESULTS.md section (after its title, command and machine)."""
    return [*verdict_lines(problems), *_partitions(results.summaries()),
            *_throughput(results, comparison), *_failover(results), *_restart(results),
            *results.notes]
