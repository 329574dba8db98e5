"""The configurations a broker applies live: each topic's effective values, cached per image.

A topic key's effective value on this broker is, first found: the topic's key, this broker's
dynamic broker key (its synonym), the cluster default, this broker's own settings (its
properties file, environment and ``--override``s: the ``static`` values, which only the broker
knows), the key's declared default (:func:`chunkraft.configs.resolve.topic_int`). Broker keys
(``chunk.copy.throttle.bytes.per.second``) resolve the same way without the topic.

Resolving walks the levels, so the produce path must not do it per request:
:class:`EffectiveConfigs` keeps one :class:`TopicConfig` per topic, built on first use and
dropped as a whole when the image's ConfigsImage is another object (a delta that touched no
configuration keeps the very same ConfigsImage, so the check is one identity comparison).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkraft.broker_agent.chunk_lookup import parse_chunk_log_topic
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.configs.resolve import resolve_broker, resolve_topic, topic_int
from chunkraft.controller.image.configs import ConfigsImage

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import LogConfig

__all__ = [
    "APPLIED_KEYS",
    "COMPRESSION_CODECS",
    "EffectiveConfigs",
    "TopicConfig",
    "local_configs",
    "static_values",
]

THROTTLE = "chunk.copy.throttle.bytes.per.second"

APPLIED_KEYS: dict[str, str] = {
    "min.insync.replicas": "min_insync_replicas",
    "max.message.bytes": "max_message_bytes",
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "message.timestamp.type": "message_timestamp_type",
    "compression.type": "compression_type",
}
"""The topic keys a broker applies, and the :class:`TopicConfig` field holding each
(``cleanup.policy`` is stored but changes nothing: ``delete`` is the only policy accepted)."""

LOG_APPEND_TIME = "LogAppendTime"
PRODUCER = "producer"
COMPRESSION_CODECS: dict[str, int] = {
    "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
"""``compression.type``'s values other than ``producer``, and the codec id each stores."""


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """One topic's effective values on this broker; immutable."""

    min_insync_replicas: int
    max_message_bytes: int
    segment_bytes: int
    segment_ms: int
    retention_ms: int
    retention_bytes: int
    message_timestamp_type: str = "CreateTime"
    compression_type: str = PRODUCER

    def log_config(self, base: LogConfig) -> LogConfig:
        """``base`` (the broker's own log settings) with this topic's values."""
        return dataclasses.replace(
            base, segment_bytes=self.segment_bytes, segment_ms=self.segment_ms,
            retention_ms=self.retention_ms, retention_bytes=self.retention_bytes,
            max_batch_bytes=self.max_message_bytes,
            log_append_time=self.message_timestamp_type == LOG_APPEND_TIME,
            compression=COMPRESSION_CODECS.get(self.compression_type))


def static_values(log: LogConfig, replication: ReplicationConfig) -> dict[str, str]:
    """The broker's own values of the broker keys, as text (the ``static`` level): what its
    LogManager and ReplicaManager were built with."""
    return {
        "log.segment.bytes": str(log.segment_bytes),
        "log.roll.ms": str(log.segment_ms),
        "log.retention.ms": str(log.retention_ms),
        "log.retention.bytes": str(log.retention_bytes),
        "message.max.bytes": str(log.max_batch_bytes),
        "log.message.timestamp.type": LOG_APPEND_TIME if log.log_append_time else "CreateTime",
        "compression.type": PRODUCER if log.compression is None else next(
            name for name, codec in COMPRESSION_CODECS.items() if codec == log.compression),
        "min.insync.replicas": str(replication.min_insync_replicas),
        THROTTLE: str(replication.chunk_copy_throttle_bytes_per_second),
    }


class EffectiveConfigs:
    """Effective topic and broker values for broker ``node_id``, cached per ConfigsImage.

    :meth:`refresh` with the image's configs after every delta; :meth:`topic` is a dict lookup
    once a topic's values are known. Not thread-safe: the broker's main event loop only.
    """

    def __init__(self, node_id: int, base: LogConfig, static: Mapping[str, str]) -> None:
        self.node_id = node_id
        self.base = base
        self.static = dict(static)
        self.configs = ConfigsImage.EMPTY
        self._topics: dict[str, TopicConfig] = {}
        self._logs: dict[TopicConfig, LogConfig] = {}

    def refresh(self, configs: ConfigsImage) -> bool:
        """Follows ``configs``; True when they are other than before (every cached value is
        dropped then)."""
        if configs is self.configs:
            return False
        self.configs = configs
        self._topics.clear()
        self._logs.clear()
        return True

    def topic(self, name: str) -> TopicConfig:
        """Topic ``name``'s effective values (any name: an unknown topic has the defaults)."""
        found = self._topics.get(name)
        if found is None:
            found = self._topics[name] = TopicConfig(
                min_insync_replicas=self._int(name, "min.insync.replicas"),
                max_message_bytes=self._int(name, "max.message.bytes"),
                segment_bytes=self._int(name, "segment.bytes"),
                segment_ms=self._int(name, "segment.ms"),
                retention_ms=self._int(name, "retention.ms"),
                retention_bytes=self._int(name, "retention.bytes"),
                message_timestamp_type=self._choice(name, "message.timestamp.type"),
                compression_type=self._choice(name, "compression.type"))
        return found

    def _choice(self, topic: str, key: str) -> str:
        """A string key's effective value; a stored value that is no longer one of the key's
        choices falls back to its default (as :meth:`Resolved.as_int` does for numbers)."""
        resolved = resolve_topic(self.configs, topic, key, broker_id=self.node_id,
                                 static=self.static)
        try:
            return str(resolved.key.parse(resolved.value))
        except ValueError:
            return str(resolved.key.parse(resolved.key.default))

    def _int(self, topic: str, key: str) -> int:
        return topic_int(self.configs, topic, key, broker_id=self.node_id, static=self.static)

    def log_config(self, log_name: str) -> LogConfig:
        """The LogConfig of the log named ``log_name`` (a partition's topic, or a chunk log
        ``<topic>@<start>``, which follows its topic); equal topics share one object."""
        chunk_log = parse_chunk_log_topic(log_name)
        topic = self.topic(chunk_log[0] if chunk_log is not None else log_name)
        found = self._logs.get(topic)
        if found is None:
            found = self._logs[topic] = topic.log_config(self.base)
        return found

    def broker_int(self, name: str) -> int:
        """Broker key ``name``'s effective value on this broker (a number key)."""
        return resolve_broker(self.configs, name, broker_id=self.node_id,
                              static=self.static).as_int()

    def applied(self, topic: str) -> list[tuple[str, str, str]]:
        """(key, value, source name) of every key in :data:`APPLIED_KEYS` for ``topic``: the
        value this broker applies (a stored value that no longer parses is applied as the
        key's default) and the level it comes from."""
        config = self.topic(topic)
        return [(name, str(getattr(config, field)),
                 resolve_topic(self.configs, topic, name, broker_id=self.node_id,
                               static=self.static).source.name)
                for name, field in APPLIED_KEYS.items()]

    def copy_throttle(self) -> int:
        """``chunk.copy.throttle.bytes.per.second`` on this broker (-1: unlimited)."""
        return self.broker_int(THROTTLE)


def local_configs(configs: EffectiveConfigs, topics: Iterable[str]) -> list[dict[str, str]]:
    """The ``topic_configs`` of ``GET /broker/v1/local-replicas``: per topic (sorted) and
    applied key, ``{"topic", "name", "value", "source"}`` (the broker-state export's
    ``local_configs``)."""
    return [{"topic": topic, "name": name, "value": value, "source": source}
            for topic in sorted(set(topics))
            for name, value, source in configs.applied(topic)]
