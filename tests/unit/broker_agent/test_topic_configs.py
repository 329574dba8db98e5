"""broker_agent/topic_configs and the ReplicaManager applying configurations live: effective
values in the right order, cached per ConfigsImage, and enforced on produce (in-process
brokers, real logs, the real controller operations)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from chunkraft.broker_agent.replica_manager import ReplicaManager
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.storage import LogConfig
from chunkraft.broker_agent.topic_configs import (
    APPLIED_KEYS,
    EffectiveConfigs,
    TopicConfig,
    local_configs,
    static_values,
)
from chunkraft.configs.keys import BROKER_KEYS
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.controller.operations.chunk_retention import delete_expired_chunks
from chunkraft.dataplane.record_batch import decode_records, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.records import ConfigRecord
from tests.unit.broker_agent.replica_harness import (
    FAST,
    TOPIC,
    Cluster,
    eventually,
    produce,
    run_scenario,
    two_chunks,
    values_of,
)
from tests.unit.broker_agent.replica_harness import consume as fetch

BIG = [b"x" * 400]



def _image(*records: ConfigRecord, base: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    delta = MetadataDelta(base)
    delta.replay_all(records)
    return delta.apply()


def _effective(**replication: int) -> EffectiveConfigs:
    log = LogConfig(segment_bytes=5000, retention_ms=9000)
    return EffectiveConfigs(1, log, static_values(log, ReplicationConfig(**replication)))


def test_a_broker_left_at_its_defaults_has_the_declared_defaults() -> None:
    # Else DescribeConfigs (which cannot see a broker's settings) would show other values
    # than the broker applies.
    own = static_values(LogConfig(), ReplicationConfig())
    assert own == {name: BROKER_KEYS[name].default for name in own}


def test_the_export_lists_every_applied_key_with_the_value_applied_and_its_source() -> None:
    configs = _effective(min_insync_replicas=3)  # broker 1; its own segment.bytes is 5000
    configs.refresh(_image(ConfigRecord(2, "orders", "retention.ms", "60000"),
                           ConfigRecord(4, "1", "log.retention.bytes", "4096"),
                           ConfigRecord(4, "", "message.max.bytes", "2048")).configs)
    rows = local_configs(configs, ["orders", "events", "orders"])
    assert [(r["topic"], r["name"]) for r in rows] == [
        (topic, name) for topic in ("events", "orders") for name in APPLIED_KEYS]
    orders = {r["name"]: (r["value"], r["source"]) for r in rows if r["topic"] == "orders"}
    assert orders == {
        "retention.ms": ("60000", "DYNAMIC_TOPIC_CONFIG"),
        "retention.bytes": ("4096", "DYNAMIC_BROKER_CONFIG"),
        "max.message.bytes": ("2048", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        "min.insync.replicas": ("3", "STATIC_BROKER_CONFIG"),
        "segment.bytes": ("5000", "STATIC_BROKER_CONFIG"),
        "segment.ms": (str(LogConfig().segment_ms), "STATIC_BROKER_CONFIG"),
        "message.timestamp.type": ("CreateTime", "STATIC_BROKER_CONFIG"),
        "compression.type": ("producer", "STATIC_BROKER_CONFIG"),
    }
    events = {r["name"]: r["value"] for r in rows if r["topic"] == "events"}
    assert events["retention.ms"] == "9000"  # the broker's own, not orders' topic key
    assert set(APPLIED_KEYS.values()) == {f.name for f in TopicConfig.__dataclass_fields__
                                          .values()}


def test_topic_then_this_broker_then_cluster_default_then_own_settings() -> None:
    configs = _effective(min_insync_replicas=3)
    configs.refresh(_image().configs)
    assert configs.topic("orders").min_insync_replicas == 3  # the broker's own setting
    assert configs.topic("orders").segment_bytes == 5000
    assert configs.topic("orders").max_message_bytes == LogConfig().max_batch_bytes
    levels = [ConfigRecord(4, "", "min.insync.replicas", "4"),
              ConfigRecord(4, "2", "min.insync.replicas", "6"),  # another broker's
              ConfigRecord(4, "1", "min.insync.replicas", "5"),
              ConfigRecord(2, "orders", "min.insync.replicas", "2")]
    expected = [4, 4, 5, 2]
    image = MetadataImage.EMPTY
    for record, value in zip(levels, expected, strict=True):
        image = _image(record, base=image)
        assert configs.refresh(image.configs)
        assert configs.topic("orders").min_insync_replicas == value, record
    assert configs.topic("other").min_insync_replicas == 5


def test_values_are_cached_until_the_configs_image_is_another_object() -> None:
    configs = _effective()
    image = _image(ConfigRecord(2, "orders", "segment.bytes", "2000"))
    assert configs.refresh(image.configs)
    first = configs.topic("orders")
    assert not configs.refresh(image.configs)  # same object: nothing recomputed
    assert configs.topic("orders") is first
    # A chunk log follows its topic; topics with equal values share one LogConfig.
    assert configs.log_config("orders@100") is configs.log_config("orders")
    assert configs.log_config("orders").segment_bytes == 2000
    assert configs.log_config("other").segment_bytes == 5000
    assert configs.log_config("other").retention_ms == 9000
    changed = _image(ConfigRecord(2, "orders", "segment.bytes", "3000"), base=image)
    assert configs.refresh(changed.configs)
    assert configs.topic("orders") is not first
    assert configs.topic("orders").segment_bytes == 3000


def test_broker_keys_resolve_for_this_broker() -> None:
    configs = _effective(chunk_copy_throttle_bytes_per_second=700)
    assert configs.copy_throttle() == 700
    configs.refresh(_image(ConfigRecord(4, "", "chunk.copy.throttle.bytes.per.second",
                                        "900")).configs)
    assert configs.copy_throttle() == 900


def test_min_insync_replicas_of_the_topic_refuses_and_then_allows_acks_all(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            assert (await produce(b0, [b"a"])).error_code == 0
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "min.insync.replicas", "2")])
            refused = await produce(b0, [b"b"])
            assert refused.error_code == Errors.NOT_ENOUGH_REPLICAS.code
            assert "min.insync.replicas 2" in (refused.error_message or "")
            assert (await produce(b0, [b"c"], acks=1)).error_code == 0
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "min.insync.replicas",
                                                          None)])
            assert (await produce(b0, [b"d"])).error_code == 0
            assert values_of(await fetch(b0, 0)) == [b"a", b"c", b"d"]
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_the_topic_value_wins_over_the_brokers_own_setting(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1, config=replace(FAST, min_insync_replicas=2))
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            assert (await produce(b0, [b"a"])).error_code == Errors.NOT_ENOUGH_REPLICAS.code
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "min.insync.replicas", "1")])
            assert (await produce(b0, [b"a"])).error_code == 0
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_an_isr_shrinking_below_the_topics_min_insync_fails_the_waiting_acks_all(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2, config=replace(FAST, replica_lag_time_max_ms=200))
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            await cluster.controller.commit([ConfigRecord(4, "", "min.insync.replicas", "2")])
            assert (await produce(b0, [b"a"])).error_code == 0
            await cluster.stop_broker(1)
            waiting = await produce(b0, [b"b"], timeout_ms=5000)
            assert waiting.error_code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND.code
            assert (await produce(b0, [b"c"])).error_code == Errors.NOT_ENOUGH_REPLICAS.code
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_max_message_bytes_refuses_a_larger_batch_live(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            assert (await produce(b0, BIG)).error_code == 0
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "max.message.bytes",
                                                          "300")])
            refused = await produce(b0, BIG)
            assert refused.error_code == Errors.MESSAGE_TOO_LARGE.code
            assert (await produce(b0, [b"small"])).error_code == 0
            await cluster.controller.commit([ConfigRecord(4, "0", "message.max.bytes", "100")])
            assert (await produce(b0, BIG)).error_code == Errors.MESSAGE_TOO_LARGE.code
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "max.message.bytes", None)])
            # This broker's dynamic message.max.bytes (100) is what is left.
            assert (await produce(b0, [b"small"] * 8)).error_code == \
                Errors.MESSAGE_TOO_LARGE.code
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_log_append_time_of_the_topic_stamps_produced_batches_live(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            before = await produce(b0, [b"a"])
            assert before.error_code == 0 and before.log_append_time_ms == -1
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "message.timestamp.type",
                                                          "LogAppendTime")])
            after = await produce(b0, [b"b", b"c"])
            assert after.error_code == 0 and after.log_append_time_ms > 1_000_000
            times = [r.timestamp for _, view in iter_batches((await fetch(b0, 0)).records)
                     for r in decode_records(view)]
            # The producer's create times (1000, 1001...) stay on the batch written before.
            assert times == [1000] + [after.log_append_time_ms] * 2
            # A follower copies the stamped batch as it is.
            await eventually(lambda: len(local_records(cluster.managers[1])) == 3,
                             "the follower has all three records")
            assert [ts for _, ts in local_records(cluster.managers[1])] == times
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "message.timestamp.type",
                                                          None)])
            assert (await produce(b0, [b"d"])).log_append_time_ms == -1
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_compression_type_of_the_topic_recompresses_produced_batches_live(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            # producer (the default): each batch as the producer sent it
            assert (await produce(b0, [b"a"], compression=2)).error_code == 0
            assert (await produce(b0, [b"b"])).error_code == 0
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "compression.type",
                                                          "zstd")])
            assert (await produce(b0, [b"c", b"d"], compression=1)).error_code == 0
            assert (await produce(b0, [b"e"])).error_code == 0
            assert (await produce(b0, [b"f"], compression=4)).error_code == 0
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "compression.type",
                                                          "uncompressed")])
            assert (await produce(b0, [b"g"], compression=3)).error_code == 0

            def stored(manager: ReplicaManager) -> list[tuple[int, list[bytes]]]:
                log_ = manager.logs.get(TOPIC, 0)
                assert log_ is not None
                return [(header.compression, [r.value or b"" for r in decode_records(view)])
                        for header, view in iter_batches(log_.read(0, 1 << 20, 1 << 20).records)]

            expected = [(2, [b"a"]), (0, [b"b"]), (4, [b"c", b"d"]), (4, [b"e"]),
                        (4, [b"f"]), (0, [b"g"])]
            assert stored(b0) == expected
            times = [r.timestamp for _, view in iter_batches((await fetch(b0, 0)).records)
                     for r in decode_records(view)]
            assert times == [1000, 1000, 1000, 1001, 1000, 1000, 1000]  # the producers' own
            # A follower copies what the leader stored.
            await eventually(lambda: len(local_records(cluster.managers[1])) == 7,
                             "the follower has all seven records")
            assert stored(cluster.managers[1]) == expected
        finally:
            await cluster.close()

    run_scenario(scenario())


def local_records(manager: ReplicaManager) -> list[tuple[bytes, int]]:
    """(value, timestamp) of every record in ``manager``'s local log of partition 0."""
    log_ = manager.logs.get(TOPIC, 0)
    if log_ is None:
        return []
    return [(r.value or b"", r.timestamp)
            for _, view in iter_batches(log_.read(0, 1 << 20, 1 << 20).records)
            for r in decode_records(view)]


def test_segment_and_retention_settings_reach_every_open_log_and_new_ones(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            log_ = b0.logs.get(TOPIC, 0)
            assert log_ is not None and log_.config.segment_bytes == LogConfig().segment_bytes
            await cluster.controller.commit([
                ConfigRecord(2, TOPIC, "segment.bytes", "1000"),
                ConfigRecord(2, TOPIC, "retention.ms", "60000"),
                ConfigRecord(4, "", "log.retention.bytes", "123456"),
                ConfigRecord(4, "", "chunk.copy.throttle.bytes.per.second", "4096")])
            assert (log_.config.segment_bytes, log_.config.retention_ms,
                    log_.config.retention_bytes) == (1000, 60000, 123456)
            assert b0.throttle.rate == 4096
            for _ in range(4):
                assert (await produce(b0, BIG)).error_code == 0
            assert len(log_.segments) >= 3  # rolled at 1000 bytes, not 1 GiB
            # A log created now (a chunk log of the topic) starts with the topic's values.
            created = b0.logs.get_or_create(f"{TOPIC}@500", 0, log_.topic_id)
            assert created.config.segment_bytes == 1000
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_chunk_the_controllers_retention_deletes_leaves_the_brokers_disk(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            await two_chunks(cluster, [b"old"] * 5, [b"new"])
            assert b0.logs.get(TOPIC, 0) is not None
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "retention.ms", "1")])
            image = cluster.controller.image
            topic = image.topics.get_by_name(TOPIC)
            assert topic is not None and len(topic.chunks_of(0)) == 1
            result = delete_expired_chunks(image, 10**13)
            assert result.response.deleted == 1
            await cluster.controller.commit(list(result.records))

            def gone() -> bool:
                return b0.logs.get(TOPIC, 0) is None

            await eventually(gone, "broker 0 deleting the removed chunk's log")
            assert not (tmp_path / "broker-0" / f"{TOPIC}-0").exists()
            assert values_of(await fetch(b1, 5)) == [b"new"]
        finally:
            await cluster.close()

    run_scenario(scenario())
