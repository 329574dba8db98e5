"""Every configuration key chunkraft knows, declared once: its type, default, range and scope.

A topic key (``retention.ms``) may be set on a topic; its **synonym** (``log.retention.ms``) is
the broker key it falls back to: set for one broker, for every broker (the cluster default, an
empty broker name), or else the declared default. Broker keys may be set per broker or as the
cluster default, and brokers apply them live. Values are kept as text, as Kafka keeps them;
:meth:`ConfigKey.parse` checks one and gives its typed value, refusing it with Kafka's wording
(``Invalid value abc for configuration retention.ms: Not a number of type LONG``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = [
    "BROKER_KEYS",
    "KEYS",
    "TOPIC_KEYS",
    "ConfigKey",
    "ConfigType",
    "InvalidConfigError",
    "broker_key",
    "topic_key",
]

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)


class InvalidConfigError(ValueError):
    """A key that does not exist for the resource, or a value it refuses: INVALID_CONFIG (40),
    with Kafka's message."""


class ConfigType(enum.Enum):
    """Kafka's ConfigDef types that chunkraft's keys use."""

    BOOLEAN = "BOOLEAN"
    INT = "INT"
    LONG = "LONG"
    STRING = "STRING"
    LIST = "LIST"


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One key: ``topic`` / ``broker`` say where it may be set; ``synonym`` is the broker key a
    topic key falls back to."""

    name: str
    type: ConfigType
    default: str
    doc: str
    topic: bool = False
    broker: bool = False
    minimum: int | None = None
    maximum: int | None = None
    valid: tuple[str, ...] = ()
    """For STRING and LIST keys: the values allowed (each item of a LIST)."""
    unsupported: dict[str, str] = field(default_factory=dict)
    """Values Kafka allows that chunkraft refuses, with the reason (``compact``)."""
    synonym: str | None = None

    def _invalid(self, value: str, reason: str) -> InvalidConfigError:
        return InvalidConfigError(f"Invalid value {value} for configuration {self.name}: "
                                  f"{reason}")

    def parse(self, value: str) -> bool | int | str | tuple[str, ...]:
        """The typed value of ``value``; InvalidConfigError if the key refuses it."""
        text = value.strip()
        if self.type is ConfigType.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise self._invalid(value, "Expected value to be either true or false")
            return text.lower() == "true"
        if self.type in (ConfigType.INT, ConfigType.LONG):
            low, high = INT_RANGE if self.type is ConfigType.INT else LONG_RANGE
            try:
                number = int(text)
            except ValueError:
                raise self._invalid(value, f"Not a number of type {self.type.value}") from None
            if not low <= number <= high:
                raise self._invalid(value, f"Not a number of type {self.type.value}")
            if self.minimum is not None and number < self.minimum:
                raise self._invalid(value, f"Value must be at least {self.minimum}")
            if self.maximum is not None and number > self.maximum:
                raise self._invalid(value, f"Value must be no more than {self.maximum}")
            return number
        items = tuple(item.strip() for item in text.split(",") if item.strip()) \
            if self.type is ConfigType.LIST else (text,)
        for item in items:
            if self.valid and item not in self.valid:
                raise self._invalid(value, f"String must be one of: {', '.join(self.valid)}")
            if item in self.unsupported:
                raise self._invalid(value, self.unsupported[item])
        return items if self.type is ConfigType.LIST else text

    def check(self, value: str) -> str:
        """``value`` if the key accepts it (InvalidConfigError otherwise), as stored."""
        self.parse(value)
        return value.strip()


def _pair(topic: str, broker: str, kind: ConfigType, default: str, doc: str, *,
          minimum: int | None = None, valid: tuple[str, ...] = (),
          unsupported: dict[str, str] | None = None) -> tuple[ConfigKey, ConfigKey]:
    """A topic key and the broker key it falls back to, with the same type and rules."""
    refused = unsupported or {}
    return (ConfigKey(topic, kind, default, doc, topic=True, synonym=broker, minimum=minimum,
                      valid=valid, unsupported=refused),
            ConfigKey(broker, kind, default, doc, broker=True, minimum=minimum, valid=valid,
                      unsupported=refused))


_COMPACT = {"compact": "compact is not supported by chunkraft: a chunk's records never change "
                       "after it is cut (KIP-1114), so log compaction is not built; use "
                       "delete"}

_PAIRS = (
    _pair("retention.ms", "log.retention.ms", ConfigType.LONG, "604800000",
          "How long a record is kept, over the whole partition across its chunks; -1: "
          "forever. An inactive chunk whose every record is older is deleted.", minimum=-1),
    _pair("retention.bytes", "log.retention.bytes", ConfigType.LONG, "-1",
          "How many bytes a partition keeps, across its chunks, before its oldest chunks are "
          "deleted; -1: no limit.", minimum=-1),
    _pair("segment.bytes", "log.segment.bytes", ConfigType.INT, "1073741824",
          "A log segment rolls at this size.", minimum=14),
    _pair("segment.ms", "log.roll.ms", ConfigType.LONG, "604800000",
          "A log segment rolls at this age.", minimum=1),
    _pair("min.insync.replicas", "min.insync.replicas", ConfigType.INT, "1",
          "acks=all needs at least this many in-sync replicas (else NOT_ENOUGH_REPLICAS).",
          minimum=1),
    _pair("max.message.bytes", "message.max.bytes", ConfigType.INT, "1048588",
          "The largest record batch a produce may carry (else MESSAGE_TOO_LARGE).",
          minimum=0),
    _pair("cleanup.policy", "log.cleanup.policy", ConfigType.LIST, "delete",
          "What happens to old records: delete (compact is refused).",
          valid=("compact", "delete"), unsupported=_COMPACT),
    _pair("message.timestamp.type", "log.message.timestamp.type", ConfigType.STRING,
          "CreateTime", "Which timestamp a record keeps: the producer's (CreateTime) or the "
          "broker's at append (LogAppendTime).", valid=("CreateTime", "LogAppendTime")),
    _pair("compression.type", "compression.type", ConfigType.STRING, "producer",
          "The codec a leader stores produced batches with: producer keeps each batch as the "
          "producer compressed it (or not); uncompressed, gzip, snappy, lz4 or zstd "
          "recompresses every batch sent otherwise.",
          valid=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
)

TOPIC_KEYS: dict[str, ConfigKey] = {topic.name: topic for topic, _ in _PAIRS}
"""The keys a topic may set, by name."""
BROKER_KEYS: dict[str, ConfigKey] = {
    **{broker.name: broker for _, broker in _PAIRS},
    "chunk.copy.throttle.bytes.per.second": ConfigKey(
        "chunk.copy.throttle.bytes.per.second", ConfigType.LONG, "-1",
        "Byte rate of chunk copies (moves and creates) on a broker; -1: unlimited.",
        broker=True, minimum=-1),
}
"""The keys a broker (or the cluster default) may set, by name."""
KEYS: dict[str, ConfigKey] = {**BROKER_KEYS, **TOPIC_KEYS}


def topic_key(name: str) -> ConfigKey:
    """The topic key ``name``; InvalidConfigError (Kafka's words) if there is none."""
    key = TOPIC_KEYS.get(name)
    if key is None:
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    return key


def broker_key(name: str) -> ConfigKey:
    """The broker key ``name``; InvalidConfigError if there is none, or if it cannot change
    while brokers run."""
    key = BROKER_KEYS.get(name)
    if key is None:
        raise InvalidConfigError(f"Unknown broker config name: {name} (the keys a broker "
                                 f"applies live: {', '.join(sorted(BROKER_KEYS))})")
    return key
