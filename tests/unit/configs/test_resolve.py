"""configs/resolve: topic, broker, cluster default, static file, default, in that order."""

from __future__ import annotations

from chunkraft.configs.resolve import ConfigSource, resolve_broker, resolve_topic, topic_int
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.controller.image.configs import ConfigsImage
from chunkraft.records import ConfigRecord


def configs(*records: ConfigRecord) -> ConfigsImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay_all(records)
    return delta.apply().configs


def test_the_first_level_that_holds_the_key_wins_and_the_others_are_synonyms() -> None:
    image = configs(ConfigRecord(2, "orders", "retention.ms", "1000"),
                    ConfigRecord(4, "1", "log.retention.ms", "2000"),
                    ConfigRecord(4, "", "log.retention.ms", "3000"))
    resolved = resolve_topic(image, "orders", "retention.ms", broker_id=1,
                             static={"log.retention.ms": "4000"})
    assert (resolved.value, resolved.source) == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert [(s.name, s.value, s.source) for s in resolved.synonyms] == [
        ("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", "2000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "3000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.ms", "4000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)]
    other = resolve_topic(image, "payments", "retention.ms")
    assert (other.value, other.source) == ("3000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert topic_int(image, "payments", "min.insync.replicas") == 1
    broker = resolve_broker(image, "log.retention.ms", broker_id=2)
    assert (broker.value, broker.source) == ("3000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


def test_a_null_value_deletes_and_a_deleted_topic_takes_its_configs_along() -> None:
    image = configs(ConfigRecord(2, "orders", "retention.ms", "1000"),
                    ConfigRecord(2, "orders", "retention.ms", None))
    assert resolve_topic(image, "orders", "retention.ms").is_default
    assert len(image) == 0 and list(image.to_records()) == []
