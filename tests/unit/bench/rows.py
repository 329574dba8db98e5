"""Rows as bench_controller.py records them, for the tests of its verdict, ratios and report."""

from __future__ import annotations

from typing import Any


def load(system: str, item: str, clients: int, *, ops: float, records: float | None = None,
         p50: float = 2.0, errors: int = 0, processes: int = 1, variant: str | None = None,
         summary: bool = False, first_error: str = "") -> dict[str, Any]:
    kinds = {("chunkraft", "single"): ("create-topic", 1),
             ("chunkraft", "batched"): ("create-partitions", 100),
             ("etcd", "single"): ("etcd-put", 1), ("etcd", "batched"): ("etcd-txn", 100),
             ("pysyncobj", "single"): ("raw-put", 1),
             ("pysyncobj", "batched"): ("raw-batch", 100)}
    kind, batch = kinds[(system, item)]
    row: dict[str, Any] = {
        "bench": "controller", "item": item, "system": system, "workload": kind,
        "batch": batch, "clients": clients, "processes": processes, "run": 0,
        "ops_per_s": ops, "records_per_s": records if records is not None else ops * batch,
        "p50_ms": p50, "p99_ms": 2 * p50, "errors": errors, "first_error": first_error,
        "pool_exhausted": False, "client_cpu_cores": 0.5, "client_cpu_ms_per_op": 1.0,
        "server_cpu_cores": 1.0, "server_cpu_ms_per_op": 2.0, "other_cpu_cores": 0.1,
        "leader_changes": 0}
    if variant:
        row["variant"] = variant
    if summary:
        row.update(summary=True, runs=1)
    return row


def system_rows(system: str, scale: float, **broken: Any) -> list[dict[str, Any]]:
    """The run and summary rows of the four compared measures for one system; ``broken``
    overrides fields of the 32-client single-op rows."""
    out = []
    for item, clients, processes, variant, ops, p50 in (
            ("single", 32, 1, None, 1000 * scale, 30.0),
            ("single", 32, 2, "two client processes", 1200 * scale, 28.0),
            ("single", 1, 1, None, 400 * scale, 2.0 / scale),
            ("batched", 32, 1, None, 250 * scale, 100.0)):
        for summary in (False, True):
            row = load(system, item, clients, ops=ops, p50=p50, processes=processes,
                       variant=variant, summary=summary)
            if (item, clients, processes) == ("single", 32, 1):
                row.update(broken)
            out.append(row)
    return out
