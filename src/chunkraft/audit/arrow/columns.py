"""Vectorized building blocks over Arrow arrays: replica lists as positional columns, keys.

The arrow engine never loops over rows in Python. A replica list (``list<int32>``) becomes a
few positional columns (:class:`Slots`), one per list position, null past each list's end, so
"is broker b in this row's list" is a handful of element-wise comparisons: replica lists hold
a few brokers, so this is much cheaper than exploding and joining.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Slots", "array", "false_array", "indices_where", "partition_key", "shifted"]

_PARTITION_SPAN = 1 << 32


def array(values: Any) -> pa.Array:
    """A single contiguous array from an array, chunked array or table column."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def false_array(length: int) -> pa.BooleanArray:
    return pa.repeat(False, length) if hasattr(pa, "repeat") else pa.array([False] * length)


def partition_key(topic_code: Any, partition_id: Any) -> pa.Array:
    """One int64 per (topic, partition): topic code * 2^32 + partition id (ids fit in int32)."""
    return pc.add(pc.multiply(pc.cast(topic_code, pa.int64()), _PARTITION_SPAN),
                  pc.cast(partition_id, pa.int64()))


def shifted(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(previous, current) views for a window of lag 1: element i of each is rows i and i+1."""
    n = len(values)
    if n == 0:
        return values, values
    return values.slice(0, n - 1), values.slice(1)


def indices_where(mask: Any) -> pa.Array:
    """Positions where ``mask`` is true (null counts as false), as int64."""
    mask = pc.fill_null(mask, False)
    return pc.cast(pc.indices_nonzero(mask), pa.int64())


class Slots:
    """A ``list<int>`` column as positional columns ``cols[j]`` = element j, null past the end.

    All comparisons treat a null list as empty. Rows keep the order of the source column.
    """

    def __init__(self, lists: Any) -> None:
        lists = array(lists)
        self.rows = len(lists)
        self.lengths = pc.fill_null(pc.list_value_length(lists), 0)
        width = pc.max(self.lengths).as_py() if self.rows else 0
        self.width = int(width or 0)
        self.cols: list[pa.Array] = []
        if self.width:
            fixed = pc.list_slice(lists, 0, self.width, return_fixed_size_list=True)
            self.cols = [array(pc.list_element(fixed, j)) for j in range(self.width)]

    def take(self, indices: Any) -> Slots:
        """The rows at ``indices``, in that order."""
        out = Slots.__new__(Slots)
        out.rows = len(indices)
        out.lengths = self.lengths.take(indices)
        out.cols = [c.take(indices) for c in self.cols]
        out.width = self.width
        return out

    def contains(self, values: Any) -> pa.BooleanArray:
        """Per row: ``values`` (an array of the same length, or a scalar) is in the list."""
        out = false_array(self.rows)
        for col in self.cols:
            out = pc.or_(out, pc.fill_null(pc.equal(col, values), False))
        return out

    def has_duplicates(self) -> pa.BooleanArray:
        out = false_array(self.rows)
        for i in range(self.width):
            for j in range(i + 1, self.width):
                out = pc.or_(out, pc.fill_null(pc.equal(self.cols[i], self.cols[j]), False))
        return out

    def all_in(self, other: Slots) -> pa.BooleanArray:
        """Per row: every element of this list is in ``other``'s list of the same row."""
        out = pc.not_equal(self.lengths, -1)  # all true
        for col in self.cols:
            out = pc.and_(out, pc.or_(pc.is_null(col), other.contains(col)))
        return out

    def empty(self) -> pa.BooleanArray:
        return pc.equal(self.lengths, 0)

    def sorted_rows(self) -> list[pa.Array]:
        """The positional columns with each row's elements in ascending order (nulls last).

        A small sorting network over the positions: lists are short.
        """
        cols = list(self.cols)
        for i in range(len(cols)):
            for j in range(len(cols) - 1 - i):
                a, b = cols[j], cols[j + 1]
                # null sorts last: swap when a is null and b is not, or both set and a > b
                swap = pc.or_(pc.and_(pc.is_null(a), pc.is_valid(b)),
                              pc.fill_null(pc.greater(a, b), False))
                cols[j] = pc.if_else(swap, b, a)
                cols[j + 1] = pc.if_else(swap, a, b)
        return cols

    def same_sets(self, other: Slots) -> pa.BooleanArray:
        """Per row: both lists hold the same set of elements."""
        return pc.and_(self.all_in(other), other.all_in(self))

    def flatten(self) -> tuple[pa.Array, pa.Array]:
        """(row index, element) for every element, row-major."""
        rows: list[pa.Array] = []
        values: list[pa.Array] = []
        for col in self.cols:
            where = indices_where(pc.is_valid(col))
            rows.append(where)
            values.append(col.take(where))
        if not rows:
            return pa.array([], pa.int64()), pa.array([], pa.int32())
        return (array(pa.chunked_array(rows, pa.int64())),
                array(pa.chunked_array([pc.cast(v, pa.int32()) for v in values], pa.int32())))
