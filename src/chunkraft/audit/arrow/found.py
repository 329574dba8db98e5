"""A rule's offending rows, and how they become a :class:`RuleResult` (count + sample).

A rule returns a :class:`Found`: a table with one row per violation holding the key columns
(``tcode`` topic code, ``partition_id``, ``start_offset``, ``broker_id``; null where they do not
apply) and whatever numbers its detail line needs, plus a function that writes that line. The
line is written only for the sampled rows, in Python (a sample is small).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.read import Topics
from chunkraft.audit.model import VIOLATION_COLUMNS, RuleResult

__all__ = ["SAMPLE_ORDER", "Found", "found", "to_result"]

SAMPLE_ORDER = ("topic", "partition_id", "start_offset", "broker_id")
"""The sample's order (ascending, nulls first), as the spec fixes it for both engines."""

_KEY_TYPES = {"tcode": pa.int64(), "partition_id": pa.int32(), "start_offset": pa.int64(),
              "broker_id": pa.int32(), "topic": pa.string()}


@dataclass(frozen=True)
class Found:
    """One rule's violations (see the module docstring); ``rows.num_rows`` is the count."""

    rule_id: str
    rows: pa.Table
    detail: Callable[[dict[str, Any]], str]


def found(rule_id: str, length: int, detail: Callable[[dict[str, Any]], str],
          **columns: Any) -> Found:
    """Builds a Found from columns of ``length`` rows; a key column not given is all null."""
    data: dict[str, Any] = {}
    for name, kind in _KEY_TYPES.items():
        value = columns.pop(name, None)
        if value is None:
            if name == "topic":
                continue
            data[name] = pa.nulls(length, kind)
        else:
            data[name] = pc.cast(value, kind)
    data.update(columns)
    return Found(rule_id, pa.table(data), detail)


def to_result(item: Found, topics: Topics, sample_size: int) -> RuleResult:
    rows = item.rows
    count = rows.num_rows
    if count == 0:
        return RuleResult(item.rule_id, 0, [])
    topic_id = topics.ids.take(rows["tcode"])
    if "topic" not in rows.column_names:
        rows = rows.append_column("topic", topics.names.take(rows["tcode"]))
    rows = rows.append_column("topic_id", topic_id)
    keys = [(name, "ascending", "at_start") for name in (*SAMPLE_ORDER, "topic_id")]
    order = pc.sort_indices(rows, sort_keys=keys)
    sample = rows.take(order.slice(0, sample_size)).to_pylist()
    out = []
    for row in sample:
        values = {"rule_id": item.rule_id, **{c: row.get(c) for c in VIOLATION_COLUMNS[1:]}}
        values["detail"] = item.detail(row)
        out.append({c: values[c] for c in VIOLATION_COLUMNS})
    return RuleResult(item.rule_id, count, out)
