"""The properties text format (chunkraft.controller.properties)."""

from __future__ import annotations

import pytest

from chunkraft.controller.properties import PropertyValue, format_properties, parse_properties


def test_parse() -> None:
    text = "# comment\n! also a comment\n\n  a.b = 1 \nc:two words\nd=\ne=x=y\r\n"
    assert parse_properties(text) == {
        "a.b": PropertyValue("1", 4),
        "c": PropertyValue("two words", 5),
        "d": PropertyValue("", 6),
        "e": PropertyValue("x=y", 7),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a=1\nb\n", "line 2: expected key=value, got 'b'"),
        ("=1\n", "line 1: no key before '='"),
        ("a=1\na=2\n", "line 2: a is set twice (first on line 1)"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_properties(text)
    assert str(caught.value) == message


def test_format_round_trips() -> None:
    values = {"version": "1", "cluster.id": "MkU3OEVBNTcwNTJENDM2Qg", "empty": ""}
    text = format_properties(values, comment="first\n\nthird")
    assert text.startswith("# first\n#\n# third\nversion=1\n")
    assert {k: v.value for k, v in parse_properties(text).items()} == values


@pytest.mark.parametrize(("key", "value"), [("a=b", "1"), ("", "1"), ("a", " 1"), ("a", "1\n2")])
def test_format_refuses_what_would_not_read_back(key: str, value: str) -> None:
    with pytest.raises(ValueError):
        format_properties({key: value})
