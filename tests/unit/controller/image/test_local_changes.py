"""The KIP-1114 scenarios, as a broker's ReplicaManager sees them."""

from chunkraft.controller.image import (
    ChunkCreate,
    ChunkDelete,
    ChunkKey,
    MetadataDelta,
    compute_local_changes,
)
from chunkraft.controller.image.local_changes import TopicIdPartition
from chunkraft.records import ChunkChangeRecord, PartitionChangeRecord, RemoveTopicRecord
from tests.unit.controller.image.support import TOPIC_ID, chunk, partition, replay, topic

TP = TopicIdPartition(TOPIC_ID, 0)


def _cut_to_broker_1() -> MetadataDelta:
    """Partition on broker 0 holds 0..19 with LSO 15: cut, new active chunk on broker 1."""
    base = replay([topic(), partition(replicas=(0,))])
    delta = MetadataDelta(base)
    delta.replay(chunk(0, 14, 19, (0,)))
    delta.replay(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1,),
                                       isr=(1,), leader=1, start_offset=15, start_timestamp=5))
    return delta


def test_cut_stops_the_old_chunk_on_its_replica_and_keeps_the_data() -> None:
    changes = compute_local_changes(_cut_to_broker_1().topics_delta, 0)
    assert list(changes.chunk_stops) == [ChunkKey(TOPIC_ID, 0, 0)]
    assert changes.chunk_stops[ChunkKey(TOPIC_ID, 0, 0)].stop_offset == 14
    assert not changes.deletes and not changes.chunk_deletes and not changes.leaders


def test_cut_makes_the_new_leader_copy_the_overlap_first() -> None:
    changes = compute_local_changes(_cut_to_broker_1().topics_delta, 1)
    assert TP in changes.leaders and TP in changes.elected_leaders
    create = changes.chunk_creates[ChunkKey(TOPIC_ID, 0, 15)]
    assert create == ChunkCreate("orders", 15, 19, (0,), True)


def test_unrelated_broker_sees_nothing() -> None:
    assert compute_local_changes(_cut_to_broker_1().topics_delta, 2).is_empty()


def test_moving_an_inactive_chunk_creates_then_deletes() -> None:
    base = replay([topic(), partition(replicas=(1,), start_offset=10), chunk(0, 9, 9, (0,))])
    delta = MetadataDelta(base)
    delta.replay(ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0,
                                   replicas=(2, 0), isr=(0,), adding_replicas=(2,),
                                   removing_replicas=(0,), epoch=1))
    begin = compute_local_changes(delta.topics_delta, 2)
    assert begin.chunk_creates == {
        ChunkKey(TOPIC_ID, 0, 0): ChunkCreate("orders", 0, 9, (0,), False)
    }
    # still serving while the copy runs
    assert compute_local_changes(delta.topics_delta, 0).is_empty()
    moving = delta.apply()
    done = MetadataDelta(moving)
    done.replay(ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0,
                                  replicas=(2,), isr=(2,), epoch=2))
    # broker 0 keeps nothing of the partition any more: the whole partition goes
    assert compute_local_changes(done.topics_delta, 0).deletes == {TP: "orders"}
    assert compute_local_changes(done.topics_delta, 2).is_empty()


def test_leaving_one_chunk_while_keeping_others_deletes_only_that_chunk() -> None:
    base = replay([topic(), partition(replicas=(0,), start_offset=20),
                   chunk(0, 9, 9, (0,)), chunk(10, 19, 19, (0,))])
    delta = MetadataDelta(base)
    delta.replay(ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0,
                                   replicas=(), epoch=1))
    changes = compute_local_changes(delta.topics_delta, 0)
    assert changes.chunk_deletes == {
        ChunkKey(TOPIC_ID, 0, 0): ChunkDelete("orders", 0, 9, False)
    }
    assert not changes.deletes


def test_reassigning_the_active_chunk_away_deletes_only_active_data() -> None:
    base = replay([topic(), partition(replicas=(0,), start_offset=10), chunk(0, 9, 9, (0,))])
    delta = MetadataDelta(base)
    delta.replay(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1,),
                                       isr=(1,), leader=1))
    changes = compute_local_changes(delta.topics_delta, 0)
    assert changes.chunk_deletes == {
        ChunkKey(TOPIC_ID, 0, 10): ChunkDelete("orders", 10, -1, True)
    }
    assert TP in compute_local_changes(delta.topics_delta, 1).leaders


def test_deleting_a_topic_deletes_every_hosted_partition() -> None:
    base = replay([topic(), partition(0, replicas=(0,)), partition(1, replicas=(1,)),
                   chunk(0, 9, 9, (1,), partition_id=0)])
    delta = MetadataDelta(base)
    delta.replay(RemoveTopicRecord(topic_id=TOPIC_ID))
    assert compute_local_changes(delta.topics_delta, 0).deletes == {TP: "orders"}
    assert compute_local_changes(delta.topics_delta, 1).deletes == {
        TP: "orders", TopicIdPartition(TOPIC_ID, 1): "orders"}


def test_new_partition_makes_leader_and_followers() -> None:
    base = replay([topic()])
    delta = MetadataDelta(base)
    delta.replay(partition(replicas=(2, 0)))
    assert TP in compute_local_changes(delta.topics_delta, 2).elected_leaders
    assert TP in compute_local_changes(delta.topics_delta, 0).followers
