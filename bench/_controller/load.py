"""One load configuration, measured: the client's figures plus the servers' and machine's CPU.

:func:`run_config` runs a :class:`_http_load.Workload` (which carries its system's own client
settings) and records one row; :func:`medians` records the summary of a few such rows. For
chunkraft, the records committed are counted from the quorum's metadata offset at the window's
edges (asked with the workload's own headers). Every system's quorum is sampled for its
leadership at the window's edges too (``_steady``): the row carries it, and a row whose leader
moved fails the run (``verdict``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from _controller.cluster import Headers, quorum
from _controller.machine import cpu_seconds, machine_busy_seconds
from _controller.results import Results
from _http_load import LoadResult, Workload, percentile, run_load, summary
from _steady import Sampler, WindowLeadership, summary_fields


def measured(pids: list[int], offset_url: str | None, headers: Headers | None = None,
             leadership: Sampler | None = None, edges: dict[str, WindowLeadership] | None = None
             ) -> tuple[Callable[[float, float], None], dict[str, float]]:
    """An ``on_window`` that samples server CPU (and the metadata offset of ``offset_url``,
    asked with ``headers``) at the window edges; with ``leadership``, the quorum's leadership
    just outside them too, kept as ``edges["window"]``."""
    seen: dict[str, float] = {}
    sent = dict(headers or {})

    def on_window(start: float, end: float) -> None:
        first = leadership() if leadership is not None else None  # before: not in the window
        time.sleep(max(start - time.time(), 0))
        seen["cpu0"] = cpu_seconds(pids)
        seen["busy0"] = machine_busy_seconds()
        if offset_url:
            status = quorum(offset_url, sent)
            seen["offset0"], seen["epoch0"] = status["metadata_offset"], status["epoch"]
            seen["leader0"] = status["leader_id"]
        seen["t0"] = time.time()
        time.sleep(max(end - time.time(), 0))
        seen["cpu1"] = cpu_seconds(pids)
        seen["busy1"] = machine_busy_seconds()
        if offset_url:
            status = quorum(offset_url, sent)
            seen["offset1"], seen["epoch1"] = status["metadata_offset"], status["epoch"]
            seen["leader1"] = status["leader_id"]
        seen["t1"] = time.time()
        if leadership is not None and first is not None and edges is not None:
            edges["window"] = WindowLeadership(first, leadership())

    return on_window, seen


def load_row(results: Results, system: str, item: str, workload: Workload, clients: int,
             result: LoadResult, run: int, processes: int,
             extra: dict[str, Any]) -> dict[str, Any]:
    window = result.window_s or 1.0
    ops_per_s = result.ops / window
    return results.record({
        "item": item, "system": system, "workload": workload.kind, "batch": workload.batch,
        "clients": clients, "processes": processes, "run": run,
        "ops_per_s": round(ops_per_s, 1),
        "records_per_s": round(extra.pop("records", result.ops * workload.records_per_op)
                               / window, 1),
        "p50_ms": round(percentile(result.latencies_ms, 0.50), 2),
        "p99_ms": round(percentile(result.latencies_ms, 0.99), 2),
        "errors": result.errors, "first_error": result.first_error[:200],
        "pool_exhausted": result.pool_exhausted,
        "client_cpu_cores": round(result.client_cpu_s / window, 2),
        "client_cpu_ms_per_op": round(1000 * result.client_cpu_s / max(result.ops, 1), 3),
        **extra,
    })


def run_config(results: Results, system: str, item: str, workload: Workload, clients: int,
               duration: float, pids: list[int], *, processes: int = 1, run: int = 0,
               offset_url: str | None = None, variant: str | None = None,
               leadership: Sampler | None = None) -> dict[str, Any]:
    """Runs ``workload`` with ``clients`` tasks over ``processes`` client processes for a
    ``duration`` s window and records its row (``pids``: the servers, for their CPU;
    ``leadership``: the quorum's sampler, whose samples at the window's edges the row
    carries)."""
    edges: dict[str, WindowLeadership] = {}
    on_window, seen = measured(pids, offset_url, dict(workload.headers), leadership, edges)
    result = run_load(workload, clients=clients, duration=duration, processes=processes,
                      on_window=on_window)
    span = seen["t1"] - seen["t0"]
    server = (seen["cpu1"] - seen["cpu0"]) / span
    busy = (seen["busy1"] - seen["busy0"]) / span
    extra: dict[str, Any] = {
        "server_cpu_cores": round(server, 2),
        "machine_busy_cores": round(busy, 2),
        "other_cpu_cores": round(max(busy - server - result.client_cpu_s / span, 0), 2),
        "server_cpu_ms_per_op": round(1000 * (seen["cpu1"] - seen["cpu0"])
                                      / max(result.ops, 1), 3),
    }
    if variant:
        extra["variant"] = variant
    if offset_url:
        committed = seen["offset1"] - seen["offset0"]
        extra["records"] = committed * (result.window_s / span)  # per the client's window
        extra["offset_records"] = int(committed)
        extra["client_counted_records"] = result.ops * workload.records_per_op
        extra["raft_epochs"] = [seen["epoch0"], seen["epoch1"]]
        extra["leaders"] = [seen["leader0"], seen["leader1"]]
    if "window" in edges:
        extra.update(edges["window"].fields())
    return load_row(results, system, item, workload, clients, result, run, processes, extra)


def medians(results: Results, rows: list[dict[str, Any]],
            variant: str | None = None) -> dict[str, Any]:
    """Records the median of each figure over runs, with the spread of ops/s and records/s."""
    out: dict[str, Any] = {key: rows[0][key] for key in
                           ("item", "system", "workload", "batch", "clients", "processes")}
    if variant:
        out["variant"] = variant
    out["runs"] = len(rows)
    for key in ("ops_per_s", "records_per_s", "p50_ms", "p99_ms", "client_cpu_cores",
                "client_cpu_ms_per_op", "server_cpu_cores", "server_cpu_ms_per_op",
                "other_cpu_cores"):
        values = [r[key] for r in rows if key in r]
        if values:
            out[key] = round(statistics.median(values), 2)
            if key in ("ops_per_s", "records_per_s"):
                s = summary(values)
                out[key + "_spread"] = [round(s["min"], 1), round(s["max"], 1)]
    out["errors"] = sum(r["errors"] for r in rows)
    out["first_error"] = next((r["first_error"] for r in rows if r.get("first_error")), "")
    out["leader_changes"] = sum(r["raft_epochs"][1] - r["raft_epochs"][0] for r in rows
                                if "raft_epochs" in r)
    out["pool_exhausted"] = any(r.get("pool_exhausted") for r in rows)
    out.update(summary_fields(rows))
    out["summary"] = True
    return results.record(out)
