"""What the metadata says a broker applies (drift.config's expectations): the levels by key
name, values canonical as brokers write them, rows that decide nothing left out."""

from __future__ import annotations

from chunkraft.audit.config_expectations import Expectations, canonical, expectations
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.storage import LogConfig
from chunkraft.broker_agent.topic_configs import EffectiveConfigs, static_values
from chunkraft.configs.keys import TOPIC_KEYS
from chunkraft.controller.image.configs import ConfigsDelta, ConfigsImage
from chunkraft.records import ConfigRecord


def test_the_levels_are_keyed_by_topic_key_name() -> None:
    found = expectations([
        (2, "orders", "retention.ms", "86400000"),
        (4, "1", "log.retention.ms", "1000"),         # broker 1's synonym of retention.ms
        (4, "", "message.max.bytes", "2048"),         # the default's synonym of max.message.bytes
        (4, "", "min.insync.replicas", "2"),          # same name at both levels
    ])
    assert found == Expectations(
        topic=[("orders", "retention.ms", "86400000")],
        broker=[(1, "retention.ms", "1000")],
        default=[("max.message.bytes", "2048"), ("min.insync.replicas", "2")])


def test_rows_that_decide_nothing_a_broker_applies_to_a_topic_are_left_out() -> None:
    assert expectations([
        (2, "orders", "log.retention.ms", "1"),       # a broker key on a topic
        (4, "1", "chunk.copy.throttle.bytes.per.second", "10"),  # no topic key's synonym
        (4, "x", "log.retention.ms", "1"),            # no broker id
        (2, "orders", "retention.ms", None),          # a delete
        (16, "orders", "retention.ms", "5"),          # another resource type
        (2, "orders", "no.such.key", "1"),
    ]) == Expectations()


def test_values_are_canonical_as_brokers_write_what_they_apply() -> None:
    key = TOPIC_KEYS["max.message.bytes"]
    assert canonical(key, " 0002097152 ") == "2097152"
    assert canonical(key, "abc") == key.default  # applied as the default when it cannot parse
    assert canonical(TOPIC_KEYS["cleanup.policy"], "delete, delete") == "delete,delete"


def test_a_following_broker_writes_what_the_metadata_says() -> None:
    records = [ConfigRecord(2, "orders", "retention.ms", "086400000"),
               ConfigRecord(4, "3", "log.segment.bytes", "65536"),
               ConfigRecord(4, "", "min.insync.replicas", "2")]
    delta = ConfigsDelta(ConfigsImage.EMPTY)
    for record in records:
        delta.replay(record)
    log = LogConfig()
    broker = EffectiveConfigs(3, log, static_values(log, ReplicationConfig()))
    broker.refresh(delta.apply())
    applied = {name: value for name, value, _ in broker.applied("orders")}
    wanted = expectations((r.resource_type, r.resource_name, r.name, r.value) for r in records)
    assert {name: value for _, name, value in wanted.topic} == {
        "retention.ms": applied["retention.ms"]}
    assert {name: value for _, name, value in wanted.broker} == {
        "segment.bytes": applied["segment.bytes"]}
    assert dict(wanted.default) == {"min.insync.replicas": applied["min.insync.replicas"]}
