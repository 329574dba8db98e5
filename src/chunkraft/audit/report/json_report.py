"""``report.json``: :meth:`AuditReport.to_json`, with sorted keys, or an error report.

Keys are sorted and lists keep the engine's order (rules in catalog order, samples in the
documented order), so two runs over the same inputs differ only in times. Floats that JSON cannot
hold (NaN, infinities) become null rather than invalid JSON.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from chunkraft.audit.model import REPORT_SCHEMA_VERSION, AuditReport

__all__ = ["error_json", "report_json"]


def report_json(report: AuditReport) -> str:
    """The text of ``report.json`` for a finished audit."""
    return _dumps(report.to_json())


def error_json(message: str, *, engine: str, snapshot_path: str | None,
               generated_at_ms: int | None = None) -> str:
    """The text of ``report.json`` for an audit that could not run (exit code 2)."""
    return _dumps({
        "schema_version": REPORT_SCHEMA_VERSION,
        "status": "error",
        "message": message,
        "engine": engine,
        "snapshot_path": snapshot_path,
        "generated_at_ms": (int(time.time() * 1000) if generated_at_ms is None
                            else generated_at_ms),
    })


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(_finite(value), sort_keys=True, indent=2, ensure_ascii=False,
                      allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(key): _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value
