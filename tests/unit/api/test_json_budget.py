"""json_value_bound never counts fewer values than a JSON document holds."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chunkraft.api.json_budget import json_value_bound

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=5), children, max_size=5),
    max_leaves=40)


def _values(document: Any) -> int:
    if isinstance(document, list):
        return 1 + sum(_values(item) for item in document)
    if isinstance(document, dict):
        return 1 + sum(_values(item) for item in document.values())
    return 1


@given(JSON, st.booleans())
def test_the_bound_is_never_below_the_values(document: Any, compact: bool) -> None:
    text = json.dumps(document, separators=(",", ":") if compact else None).encode()
    assert json_value_bound(text) >= _values(document)


def test_a_million_small_arrays_are_counted() -> None:
    body = json.dumps([[0, 1, 2]] * 1_000_000, separators=(",", ":")).encode()
    assert json_value_bound(body) == 4_000_001


def test_long_strings_count_as_few_values() -> None:
    body = json.dumps({"topics": ["x" * 100_000, "y" * 100_000]}).encode()
    assert json_value_bound(body) == 4
