"""The fast JSON of partitions, replicas and chunks (chunkraft.api.v3.encoding): exactly the
declared models' shape and values, and the fragment cache's reuse, misses and bound."""

from __future__ import annotations

import json
import uuid

from starlette.requests import Request

from chunkraft.api.v3.common import Links
from chunkraft.api.v3.encoding import FRAGMENTS, FragmentCache, TopicEncoder
from chunkraft.api.v3.models import KafkaChunk, KafkaPartition, KafkaReplica
from chunkraft.controller.image import MetadataDelta, MetadataImage, TopicImage
from chunkraft.records import ChunkRecord, PartitionRecord, PriorPartitionEpoch, TopicRecord

TOPIC_ID = uuid.UUID(int=7)


def links() -> Links:
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": [
        (b"host", b"c1:9090")], "scheme": "http", "server": ("c1", 9090), "query_string": b""})
    return Links(request, "CID")


def topic(*records: object) -> TopicImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay_all([TopicRecord(name="t.x", topic_id=TOPIC_ID), *records])
    found = delta.apply().topics.get_by_name("t.x")
    assert found is not None
    return found


PARTITION = PartitionRecord(
    partition_id=1, topic_id=TOPIC_ID, replicas=(3, 1, 2), isr=(3, 1), leader=3,
    leader_epoch=4, partition_epoch=6, start_offset=200, start_timestamp=5000,
    adding_replicas=(2,), removing_replicas=(),
    prior_partition_epochs=(PriorPartitionEpoch(partition_id=0, leader_epoch=2),))
CHUNK = ChunkRecord(partition_id=1, topic_id=TOPIC_ID, start_offset=0, start_timestamp=10,
                    stop_offset=99, end_offset=104, chunk_epoch=1, epoch=1, replicas=(1, 4),
                    isr=(1,), adding_replicas=(4,), removing_replicas=(2,))
CHUNK2 = CHUNK._replace(start_offset=105, start_timestamp=20, stop_offset=199, end_offset=199,
                        chunk_epoch=0, epoch=0, replicas=(3,), isr=(3,), adding_replicas=(),
                        removing_replicas=())


def test_a_partition_with_its_chunks_is_the_declared_shape() -> None:
    encoder = TopicEncoder(links(), topic(PARTITION, CHUNK, CHUNK2))
    text = encoder.partition(PARTITION, True, 42)
    KafkaPartition.model_validate_json(text)
    url = "http://c1:9090/v3/clusters/CID/topics/t.x/partitions/1"
    assert json.loads(text) == {
        "kind": "KafkaPartition",
        "metadata": {"self": url, "resource_name": "crn:///kafka=CID/topic=t.x/partition=1",
                     "metadata_offset": 42},
        "topic_name": "t.x", "partition_id": 1, "leader_id": 3, "leader_epoch": 4,
        "partition_epoch": 6, "replica_ids": [3, 1, 2], "isr_ids": [3, 1],
        "adding_replica_ids": [2], "removing_replica_ids": [], "start_offset": 200,
        "start_timestamp": 5000, "prior_partition_epochs": [{"partition_id": 0,
                                                              "leader_epoch": 2}],
        "chunks_count": 3, "leader": {"related": f"{url}/replicas/3"},
        "replicas": {"related": f"{url}/replicas"}, "chunks": {"related": f"{url}/chunks"},
        "inactive_chunks": [
            {"topic_name": "t.x", "partition_id": 1, "start_offset": 0, "stop_offset": 99,
             "end_offset": 104, "start_timestamp": 10, "chunk_epoch": 1, "is_active": False,
             "leader_id": -1, "replica_ids": [1, 4], "isr_ids": [1],
             "adding_replica_ids": [4], "removing_replica_ids": [2]},
            {"topic_name": "t.x", "partition_id": 1, "start_offset": 105, "stop_offset": 199,
             "end_offset": 199, "start_timestamp": 20, "chunk_epoch": 0, "is_active": False,
             "leader_id": -1, "replica_ids": [3], "isr_ids": [3], "adding_replica_ids": [],
             "removing_replica_ids": []}],
    }
    without = json.loads(encoder.partition(PARTITION, False))
    assert "inactive_chunks" not in without and "metadata_offset" not in without["metadata"]
    leaderless = json.loads(encoder.partition(PARTITION._replace(leader=-1), False))
    assert leaderless["leader"] is None


def test_chunks_and_replicas_are_the_declared_shape() -> None:
    encoder = TopicEncoder(links(), topic(PARTITION, CHUNK))
    chunks = [json.loads(text) for text in encoder.chunks(PARTITION)]
    for chunk in chunks:
        KafkaChunk.model_validate(chunk)
    active = chunks[-1]
    assert active["metadata"]["self"].endswith("/partitions/1/chunks/200")
    assert (active["is_active"], active["stop_offset"], active["chunk_epoch"],
            active["leader_id"], active["replica_ids"]) == (True, -1, 4, 3, [3, 1, 2])
    assert chunks[0]["metadata"]["resource_name"] == (
        "crn:///kafka=CID/topic=t.x/partition=1/chunk=0")
    replica = json.loads(encoder.replica(PARTITION, 2, 9))
    KafkaReplica.model_validate(replica)
    assert (replica["is_leader"], replica["is_in_sync"]) == (False, False)
    assert replica["broker"]["related"] == "http://c1:9090/v3/clusters/CID/brokers/2"


def test_list_items_come_from_the_cache_until_their_records_change() -> None:
    FRAGMENTS.clear()
    image = topic(PARTITION, CHUNK)
    first = TopicEncoder(links(), image).partition(PARTITION, True)
    cached = FRAGMENTS.size
    assert 0 < cached < len(first) + 10
    again = TopicEncoder(links(), image).partition(PARTITION, True)
    assert again == first and FRAGMENTS.size == cached
    moved = topic(PARTITION, CHUNK._replace(replicas=(1, 5)))
    changed = TopicEncoder(links(), moved).partition(PARTITION, True)
    assert changed != first and "[1,5]" in changed
    bumped = PARTITION._replace(leader_epoch=5)
    epoch = json.loads(TopicEncoder(links(), topic(bumped, CHUNK)).partition(bumped, True))
    assert epoch["leader_epoch"] == 5 and len(epoch["inactive_chunks"]) == 1
    more = topic(PARTITION, CHUNK, CHUNK2)
    counted = json.loads(TopicEncoder(links(), more).partition(PARTITION, False))
    assert counted["chunks_count"] == 3


def test_the_cache_evicts_the_least_recently_used_past_its_bound() -> None:
    cache = FragmentCache(max_bytes=10)
    anchors = [object() for _ in range(3)]
    cache.put("a", anchors[0], "xxxx")
    cache.put("b", anchors[1], "yyyy")
    assert cache.get("a", anchors[0]) == "xxxx"  # a is now the most recent
    cache.put("c", anchors[2], "zzzz")
    assert cache.get("b", anchors[1]) is None
    assert cache.get("a", anchors[0]) == "xxxx" and cache.size == 8
    assert cache.get("a", object()) is None  # another object under a reused id
    cache.put("big", anchors[0], "w" * 11)
    assert cache.get("big", anchors[0]) is None
