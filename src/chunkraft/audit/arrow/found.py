"""A rule's offending rows, and how they become a :class:`RuleResult` (count + sample).

A rule returns a :class:`Found`: a table with one row per violation holding the key columns
(``tcode`` topic code, or a ``topic_id`` string column; ``partition_id``, ``start_offset``,
``broker_id``; null where they do not apply) and whatever its detail line needs, plus a
function that writes that line. Lines are written only for the rows that can be in the sample
(a few), in Python; they read exactly as the Spark engine's ``format_string`` writes them.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array
from chunkraft.audit.arrow.read import Topics
from chunkraft.audit.model import VIOLATION_COLUMNS, RuleResult

__all__ = ["SAMPLE_ORDER", "Found", "fixed", "found", "ids", "to_result"]

SAMPLE_ORDER = ("topic", "partition_id", "start_offset", "broker_id", "topic_id")
"""The sample's order (ascending, nulls first), then the detail line: as both engines sort."""

_KEY_TYPES = {"tcode": pa.int64(), "partition_id": pa.int32(), "start_offset": pa.int64(),
              "broker_id": pa.int32()}


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
        data[name] = pa.nulls(length, kind) if value is None else pc.cast(value, kind)
    data.update(columns)
    return Found(rule_id, pa.table(data), detail)


def ids(values: Any) -> str:
    """A list of ids as Spark's ``array_join(..., ", ")`` writes it."""
    return ", ".join(str(v) for v in (values or []))


def fixed(value: float, digits: int) -> str:
    """``value`` as Spark's ``format_string("%.<digits>f")`` writes it: Java rounds the
    shortest decimal form of the double half up (12.25 -> "12.3"; Python's own format gives
    "12.2", rounding the binary value half even)."""
    exact = decimal.Decimal(repr(float(value)))
    return str(exact.quantize(decimal.Decimal(1).scaleb(-digits), decimal.ROUND_HALF_UP))


def _null_first(value: Any) -> tuple[bool, Any]:
    return (value is not None, value if value is not None else 0)


def to_result(item: Found, topics: Topics, sample_size: int) -> RuleResult:
    rows = item.rows
    count = rows.num_rows
    if count == 0:
        return RuleResult(item.rule_id, 0, [])
    if "topic_id" in rows.column_names:  # a rule that names topics by id string
        codes = topics.code_of(rows["topic_id"])
        rows = rows.set_column(rows.column_names.index("tcode"), "tcode", codes)
    else:
        rows = rows.append_column("topic_id", topics.ids.take(rows["tcode"]))
    rows = rows.append_column("topic", topics.names.take(rows["tcode"]))
    keys = rows.select(list(SAMPLE_ORDER))
    order = array(pc.sort_indices(keys, sort_keys=[(c, "ascending", "at_start")
                                                   for c in SAMPLE_ORDER]))
    # Rows tied with the last sampled one on every key may swap in on their detail line.
    wanted = order.slice(0, sample_size)
    if count > sample_size > 0:
        boundary = keys.take(order.slice(sample_size - 1, 1)).to_pylist()[0]
        tied = pa.repeat(True, count)
        for column in SAMPLE_ORDER:
            value = boundary[column]
            same = (pc.is_null(keys[column]) if value is None
                    else pc.fill_null(pc.equal(keys[column], value), False))
            tied = pc.and_(tied, same)
        extra = pc.indices_nonzero(tied)
        wanted = pc.unique(pa.concat_arrays([wanted, pc.cast(extra, wanted.type)]))
    sample = rows.take(wanted).to_pylist()
    for row in sample:
        row["detail"] = item.detail(row)
    sample.sort(key=lambda r: tuple(_null_first(r[c]) for c in (*SAMPLE_ORDER, "detail")))
    out = [{"rule_id": item.rule_id, **{c: row[c] for c in VIOLATION_COLUMNS[1:]}}
           for row in sample[:sample_size]]
    return RuleResult(item.rule_id, count, out)
