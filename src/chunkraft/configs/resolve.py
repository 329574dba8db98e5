"""Where a configuration value comes from, as Kafka's DescribeConfigs reports it.

A topic key is looked up on the topic, then as its broker synonym on the broker (when one is
named), on the cluster default, in the broker's own properties file (when given: only a broker
knows its file), and last the declared default. A broker key starts at the broker. The first
level that holds the key gives the value; every level that holds it is a synonym, in that
order (``describe --all``'s synonyms).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from chunkraft.configs.keys import BROKER_KEYS, TOPIC_KEYS, ConfigKey
from chunkraft.controller.image.configs import ConfigsImage

__all__ = ["ConfigSource", "Resolved", "Synonym", "resolve_broker", "resolve_topic",
           "topic_int"]


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigsResponse ConfigSource codes."""

    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True, slots=True)
class Synonym:
    """One level that holds a value for the key (under this name)."""

    name: str
    value: str
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class Resolved:
    """A key's effective value, where it comes from, and every level that holds one."""

    key: ConfigKey
    value: str
    source: ConfigSource
    synonyms: tuple[Synonym, ...]

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG

    def as_int(self) -> int:
        """The value of a number key (INT, LONG). A stored value is checked when it is
        written; one that no longer parses falls back to the key's default."""
        try:
            value = self.key.parse(self.value)
        except ValueError:
            value = self.key.parse(self.key.default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{self.key.name} is not a number key")
        return value


def _chain(configs: ConfigsImage, key: ConfigKey, broker_name: str, broker_id: int | None,
           static: Mapping[str, str] | None, topic: str | None) -> Resolved:
    levels: list[Synonym] = []
    if topic is not None and key.name in configs.topic(topic):
        levels.append(Synonym(key.name, configs.topic(topic)[key.name],
                              ConfigSource.DYNAMIC_TOPIC_CONFIG))
    if broker_id is not None and broker_name in configs.broker(broker_id):
        levels.append(Synonym(broker_name, configs.broker(broker_id)[broker_name],
                              ConfigSource.DYNAMIC_BROKER_CONFIG))
    if broker_name in configs.cluster_default():
        levels.append(Synonym(broker_name, configs.cluster_default()[broker_name],
                              ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
    if static is not None and broker_name in static:
        levels.append(Synonym(broker_name, static[broker_name],
                              ConfigSource.STATIC_BROKER_CONFIG))
    levels.append(Synonym(broker_name, key.default, ConfigSource.DEFAULT_CONFIG))
    first = levels[0]
    return Resolved(key, first.value, first.source, tuple(levels))


def resolve_topic(configs: ConfigsImage, topic: str, name: str, *, broker_id: int | None = None,
                  static: Mapping[str, str] | None = None) -> Resolved:
    """Topic key ``name`` of ``topic`` (KeyError for a key that is no topic key)."""
    key = TOPIC_KEYS[name]
    assert key.synonym is not None  # every topic key has its broker synonym
    return _chain(configs, key, key.synonym, broker_id, static, topic)


def resolve_broker(configs: ConfigsImage, name: str, *, broker_id: int | None = None,
                   static: Mapping[str, str] | None = None) -> Resolved:
    """Broker key ``name`` for broker ``broker_id`` (None: the cluster default's view)."""
    key = BROKER_KEYS[name]
    return _chain(configs, key, name, broker_id, static, None)


def topic_int(configs: ConfigsImage, topic: str, name: str, *, broker_id: int | None = None,
              static: Mapping[str, str] | None = None) -> int:
    """A topic key's effective value as an int (:meth:`Resolved.as_int`)."""
    return resolve_topic(configs, topic, name, broker_id=broker_id, static=static).as_int()
