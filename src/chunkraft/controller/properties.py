"""Kafka-style ``.properties`` text: ``key=value`` lines, ``#`` or ``!`` comments, blank lines.

The subset chunkraft reads and writes: one setting per line, separated by the first ``=`` or
``:``; leading and trailing whitespace is no part of a key or a value. Java's line continuations
and escapes are not supported, and a key given twice is refused rather than silently taking the
last one, so a stray duplicate in a hand-edited file cannot change a setting unnoticed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["PropertyValue", "format_properties", "parse_properties"]

_SEPARATOR = re.compile(r"[=:]")


class PropertyValue(NamedTuple):
    """One setting read from a properties text: its value and the 1-based line it came from."""

    value: str
    line: int


def parse_properties(text: str) -> dict[str, PropertyValue]:
    """Properties text -> ``{key: PropertyValue}``; ValueError naming the line if malformed."""
    result: dict[str, PropertyValue] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = _SEPARATOR.search(line)
        if match is None:
            raise ValueError(f"line {number}: expected key=value, got {line!r}")
        key = line[: match.start()].strip()
        if not key:
            raise ValueError(f"line {number}: no key before {match.group()!r}")
        if key in result:
            raise ValueError(
                f"line {number}: {key} is set twice (first on line {result[key].line})"
            )
        result[key] = PropertyValue(line[match.end() :].strip(), number)
    return result


def format_properties(values: Mapping[str, str], comment: str = "") -> str:
    """``{key: value}`` -> properties text that :func:`parse_properties` reads back unchanged.

    ValueError if a key or value would not survive the round trip (a newline, a separator in a
    key, surrounding whitespace).
    """
    lines = [f"# {text}" if text else "#" for text in comment.splitlines()]
    for key, value in values.items():
        if not key or _SEPARATOR.search(key) or key != key.strip() or "\n" in key + value:
            raise ValueError(f"key {key!r} cannot be written as a property")
        if value != value.strip() or "\r" in value:
            raise ValueError(f"value of {key} cannot be written as a property: {value!r}")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"
