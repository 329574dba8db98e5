"""Metadata answers spliced from kept per-topic bytes are the very bytes of the dict path, at
every version, and a kept topic is rewritten when its image or the online brokers change."""

from __future__ import annotations

import uuid

import pytest

from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.kafka.cluster_answers import metadata_answer, metadata_answer_bytes
from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.metadata_bytes import TopicBytesCache
from chunkraft.kafka.server.requests import KafkaSession
from chunkraft.records import (
    ChunkRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from chunkraft.records.broker_records import BrokerEndpoint
from chunkraft.security.principal import Principal

SESSION = KafkaSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", "127.0.0.1",
                       principal=Principal("User:admin"))


def image_of(topics: int = 3, partitions: int = 4, *, fenced: tuple[int, ...] = ()
             ) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    for broker in range(3):
        delta.replay(RegisterBrokerRecord(
            broker_id=broker, incarnation_id=uuid.UUID(int=broker + 1), broker_epoch=broker + 1,
            end_points=(BrokerEndpoint("HTTP", "h", 8000 + broker, 0),
                        BrokerEndpoint("SASL_PLAINTEXT", "h", 9000 + broker, 2)),
            fenced=broker in fenced))
    for index in range(topics):
        topic_id = uuid.UUID(int=100 + index)
        delta.replay(TopicRecord(name=f"topic-{index}", topic_id=topic_id))
        for partition in range(partitions):
            delta.replay(PartitionRecord(partition_id=partition, topic_id=topic_id,
                                         replicas=(partition % 3, (partition + 1) % 3),
                                         isr=(partition % 3,), leader=partition % 3,
                                         leader_epoch=1))
    return delta.apply()


@pytest.mark.parametrize("version", range(13))
@pytest.mark.parametrize("chunks", [False, True])
def test_the_spliced_answer_is_the_encoded_dict_answer(version: int, chunks: bool) -> None:
    image = image_of(fenced=(2,))
    request = {"topics": None, "include_chunks": chunks}
    expected = encode("MetadataResponse", version, metadata_answer(
        image, request, version, SESSION, None, cluster_id="cid", self_id=1))
    cache = TopicBytesCache()
    for _ in range(2):  # written, then from the cache
        assert metadata_answer_bytes(image, request, version, SESSION, None, cache,
                                     cluster_id="cid", self_id=1) == expected
    assert (cache.misses, cache.hits) == (3, 3)


def test_named_and_unknown_topics_are_spliced_too() -> None:
    image = image_of()
    request = {"topics": [{"name": "topic-1", "topic_id": uuid.UUID(int=0)},
                          {"name": "nope", "topic_id": uuid.UUID(int=0)},
                          {"name": None, "topic_id": uuid.UUID(int=7)}]}
    answer = metadata_answer(image, request, 12, SESSION, None, cluster_id="c", self_id=0)
    assert [t["error_code"] for t in answer["topics"]] == [0, 3, 100]
    assert metadata_answer_bytes(image, request, 12, SESSION, None, TopicBytesCache(),
                                 cluster_id="c", self_id=0) == encode(
        "MetadataResponse", 12, answer)


def test_a_kept_topic_is_rewritten_when_a_broker_is_fenced_or_the_topic_changes() -> None:
    cache = TopicBytesCache()
    request = {"topics": None}
    image = image_of(topics=1)
    first = metadata_answer_bytes(image, request, 12, SESSION, None, cache, cluster_id="c",
                                  self_id=0)
    fenced = image_of(topics=1, fenced=(0,))
    second = metadata_answer_bytes(fenced, request, 12, SESSION, None, cache, cluster_id="c",
                                   self_id=0)
    assert second != first and cache.misses == 2
    assert second == encode("MetadataResponse", 12, metadata_answer(
        fenced, request, 12, SESSION, None, cluster_id="c", self_id=0))
    delta = MetadataDelta(image)
    topic_id = uuid.UUID(int=100)
    delta.replay(ChunkRecord(topic_id=topic_id, partition_id=0, start_offset=0,
                             start_timestamp=5, stop_offset=9, end_offset=9, chunk_epoch=0,
                             replicas=(1,), isr=(1,)))
    cut = delta.apply()
    asked = {"topics": None, "include_chunks": True}
    spliced = metadata_answer_bytes(cut, asked, 12, SESSION, None, cache, cluster_id="c",
                                    self_id=0)
    assert spliced == encode("MetadataResponse", 12, metadata_answer(
        cut, asked, 12, SESSION, None, cluster_id="c", self_id=0))


def test_the_cache_keeps_at_most_its_bytes() -> None:
    cache = TopicBytesCache(max_bytes=1)
    image = image_of(topics=3)
    metadata_answer_bytes(image, {"topics": None}, 12, SESSION, None, cache, cluster_id="c",
                          self_id=0)
    assert len(cache._entries) == 1  # the newest only
