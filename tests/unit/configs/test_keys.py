"""configs/keys: each key parses what Kafka's ConfigDef would, and refuses the rest in its words."""

from __future__ import annotations

import pytest

from chunkraft.configs.keys import (
    BROKER_KEYS,
    TOPIC_KEYS,
    InvalidConfigError,
    broker_key,
    topic_key,
)


def test_the_topic_keys_and_their_broker_synonyms() -> None:
    assert {name: key.synonym for name, key in TOPIC_KEYS.items()} == {
        "retention.ms": "log.retention.ms", "retention.bytes": "log.retention.bytes",
        "segment.bytes": "log.segment.bytes", "segment.ms": "log.roll.ms",
        "min.insync.replicas": "min.insync.replicas", "max.message.bytes": "message.max.bytes",
        "cleanup.policy": "log.cleanup.policy",
        "message.timestamp.type": "log.message.timestamp.type",
        "compression.type": "compression.type"}
    for key in TOPIC_KEYS.values():
        assert key.synonym in BROKER_KEYS and key.topic and not key.broker
        assert key.parse(key.default) is not None  # every default is a legal value


@pytest.mark.parametrize(("name", "value", "parsed"), [
    ("retention.ms", "-1", -1), ("retention.ms", " 86400000 ", 86400000),
    ("min.insync.replicas", "2", 2), ("cleanup.policy", "delete", ("delete",)),
    ("message.timestamp.type", "LogAppendTime", "LogAppendTime"),
    ("compression.type", "zstd", "zstd"), ("compression.type", "producer", "producer"),
])
def test_values_parse(name: str, value: str, parsed: object) -> None:
    assert topic_key(name).parse(value) == parsed


@pytest.mark.parametrize(("name", "value", "message"), [
    ("retention.ms", "abc",
     "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ("retention.ms", "-2",
     "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ("min.insync.replicas", "0",
     "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("segment.bytes", "3000000000",
     "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT"),
    ("message.timestamp.type", "Now", "Invalid value Now for configuration "
     "message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
    ("compression.type", "brotli", "Invalid value brotli for configuration compression.type: "
     "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("cleanup.policy", "compact", "Invalid value compact for configuration cleanup.policy: "
     "compact is not supported by chunkraft"),
])
def test_refused_values_say_why_in_kafkas_words(name: str, value: str, message: str) -> None:
    with pytest.raises(InvalidConfigError) as refused:
        topic_key(name).parse(value)
    assert str(refused.value).startswith(message)


def test_unknown_keys() -> None:
    with pytest.raises(InvalidConfigError, match=r"^Unknown topic config name: retention$"):
        topic_key("retention")
    with pytest.raises(InvalidConfigError, match=r"^Unknown broker config name: log\.dirs"):
        broker_key("log.dirs")
    assert broker_key("chunk.copy.throttle.bytes.per.second").parse("-1") == -1
