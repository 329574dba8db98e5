"""What the metadata says a broker should apply, for ``drift.config``; engine-independent.

A topic key's value on broker ``b`` is decided by the metadata when one of these holds it,
first found (the order of :mod:`chunkraft.configs.resolve`):

1. the topic's own key (``configs`` rows of resource type 2 named after the topic);
2. broker ``b``'s dynamic key, the topic key's broker synonym (type 4 named ``str(b)``);
3. the cluster default, the synonym on type 4 with an empty name.

Where none holds it, the broker's own static settings legitimately decide: no expectation.

The snapshot's ``configs`` table is small (only the keys set), so both engines collect it and
build the same three lookup tables here, in Python: :class:`Expectations`. Values are
canonical: the text a broker's ``local_configs`` row has for the same value (``007`` and
``7`` are one number; a value that does not parse is what the broker applies instead, the
key's declared default). The engines then compare texts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from chunkraft.configs.keys import TOPIC_KEYS, ConfigKey
from chunkraft.configs.resolve import ConfigSource
from chunkraft.records import BROKER_RESOURCE, TOPIC_RESOURCE

__all__ = ["Expectations", "canonical", "expectations"]

TOPIC_SOURCE = ConfigSource.DYNAMIC_TOPIC_CONFIG.name
BROKER_SOURCE = ConfigSource.DYNAMIC_BROKER_CONFIG.name
DEFAULT_SOURCE = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.name

_BY_SYNONYM: dict[str, list[ConfigKey]] = {}
for _key in TOPIC_KEYS.values():
    assert _key.synonym is not None
    _BY_SYNONYM.setdefault(_key.synonym, []).append(_key)


def _text(value: bool | int | str | tuple[str, ...]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def canonical(key: ConfigKey, value: str) -> str:
    """``value`` of ``key`` as a broker writes the value it applies: a number in decimal, a
    list joined by commas; the key's default where ``value`` does not parse."""
    try:
        return _text(key.parse(value))
    except ValueError:
        return _text(key.parse(key.default))


@dataclass(frozen=True)
class Expectations:
    """The metadata's values per level, keyed by topic key name (canonical texts):
    ``topic`` rows (topic, key, value), ``broker`` rows (broker id, key, value), ``default``
    rows (key, value). Each level's source name is the ``*_SOURCE`` constant."""

    topic: list[tuple[str, str, str]] = field(default_factory=list)
    broker: list[tuple[int, str, str]] = field(default_factory=list)
    default: list[tuple[str, str]] = field(default_factory=list)


def expectations(rows: Iterable[tuple[int | None, str | None, str | None, str | None]]
                 ) -> Expectations:
    """The lookup tables from ``configs`` rows (resource_type, resource_name, name, value).

    Rows of other resource types, unknown keys, null values and broker names that are no
    broker id are left out (they decide nothing a broker applies to a topic).
    """
    found = Expectations()
    for resource_type, resource_name, name, value in rows:
        if name is None or value is None or resource_name is None:
            continue
        if resource_type == TOPIC_RESOURCE:
            key = TOPIC_KEYS.get(name)
            if key is not None:
                found.topic.append((resource_name, name, canonical(key, value)))
        elif resource_type == BROKER_RESOURCE:
            for key in _BY_SYNONYM.get(name, ()):
                if resource_name == "":
                    found.default.append((key.name, canonical(key, value)))
                elif resource_name.isdigit():
                    found.broker.append((int(resource_name), key.name, canonical(key, value)))
    found.topic.sort()
    found.broker.sort()
    found.default.sort()
    return found
