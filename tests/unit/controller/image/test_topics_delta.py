import tracemalloc
import uuid

import pytest

from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.errors import InvariantError
from chunkraft.records import (
    ChunkChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from tests.unit.controller.image.support import TOPIC_ID, chunk, partition, replay, topic

OTHER_ID = uuid.UUID(int=0x9999)


def test_partition_of_an_unknown_topic_is_an_invariant_error() -> None:
    with pytest.raises(InvariantError, match="unknown topic"):
        replay([partition()])


def test_change_of_an_unknown_partition_is_an_invariant_error() -> None:
    with pytest.raises(InvariantError, match="unknown partition orders-3"):
        replay([topic(), PartitionChangeRecord(partition_id=3, topic_id=TOPIC_ID, leader=0)])


def test_chunk_of_an_unknown_partition_is_an_invariant_error() -> None:
    with pytest.raises(InvariantError, match="ChunkRecord for unknown partition"):
        replay([topic(), chunk(0, 9, 9, (0,), partition_id=1)])


def test_change_of_a_chunk_that_does_not_exist_is_an_invariant_error() -> None:
    base = replay([topic(), partition()])
    with pytest.raises(InvariantError, match="unknown chunk orders-0 at start offset 5"):
        replay([ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=5,
                                  replicas=(1,), isr=(1,), epoch=1)], base)


def test_chunk_change_must_carry_the_next_epoch() -> None:
    base = replay([topic(), partition(), chunk(0, 9, 9, (0,))])
    with pytest.raises(InvariantError, match="expected 1"):
        replay([ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0,
                                  replicas=(1,), isr=(1,), epoch=5)], base)


def test_chunk_change_moves_replicas_and_empty_replicas_remove_the_chunk() -> None:
    base = replay([topic(), partition(), chunk(0, 9, 9, (0,))])
    moving = replay([ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0,
                                       replicas=(2, 0), isr=(0,), adding_replicas=(2,),
                                       removing_replicas=(0,), epoch=1)], base)
    moved = moving.topics.get_by_name("orders")
    assert moved is not None
    state = moved.chunk(0, 0)
    assert state is not None
    assert (state.replicas, state.adding_replicas, state.epoch, state.chunk_epoch) == (
        (2, 0), (2,), 1, 1)
    assert state.stop_offset == 9  # offsets never change
    removed = replay([ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0,
                                        replicas=(), epoch=2)], moving)
    after = removed.topics.get_by_name("orders")
    assert after is not None and after.chunks_of(0) == ()


def test_chunks_are_kept_in_start_offset_order() -> None:
    image = replay([topic(), partition(), chunk(20, 29, 29, (0,)), chunk(0, 9, 9, (0,)),
                    chunk(10, 19, 21, (0,))])
    state = image.topics.get_by_name("orders")
    assert state is not None
    assert [c.start_offset for c in state.chunks_of(0)] == [0, 10, 20]


def test_topic_names_are_unique_and_free_again_after_removal() -> None:
    image = replay([topic()])
    with pytest.raises(InvariantError, match="belongs to topic id"):
        replay([TopicRecord(name="orders", topic_id=OTHER_ID)], image)
    recreated = replay([RemoveTopicRecord(topic_id=TOPIC_ID),
                        TopicRecord(name="orders", topic_id=OTHER_ID)], image)
    found = recreated.topics.get_by_name("orders")
    assert found is not None and found.topic_id == OTHER_ID
    assert recreated.topics.get(TOPIC_ID) is None


def test_removing_an_unknown_topic_is_an_invariant_error() -> None:
    with pytest.raises(InvariantError, match="RemoveTopicRecord for unknown topic"):
        replay([RemoveTopicRecord(topic_id=OTHER_ID)])


def test_a_failed_replay_leaves_the_base_image_untouched() -> None:
    base = replay([topic(), partition()])
    delta = MetadataDelta(base)
    delta.replay(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=0))
    with pytest.raises(InvariantError):
        delta.replay(PartitionChangeRecord(partition_id=7, topic_id=TOPIC_ID, leader=0))
    state = base.topics.get_by_name("orders")
    assert state is not None
    assert state.partition(0) == partition()


def test_changing_one_partition_of_a_huge_topic_does_not_copy_the_topic() -> None:
    count = 100_000
    records: list[object] = [topic()]
    records += [PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=(0,), isr=(0,),
                                leader=0, leader_epoch=0, partition_epoch=0)
                for p in range(count)]
    base = replay(records)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        changed = replay([PartitionChangeRecord(partition_id=500, topic_id=TOPIC_ID, leader=0)],
                         base)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a dict copy of 100,000 entries alone would take megabytes; a persistent map path a few KB
    assert after - before < 64 * 1024
    state = changed.topics.get_by_name("orders")
    old = base.topics.get_by_name("orders")
    assert state is not None and old is not None
    assert state.partition(500) != old.partition(500)
    assert state.partition(499) is old.partition(499)
    assert len(state.partitions) == count
    assert MetadataImage.EMPTY.topics.get(TOPIC_ID) is None
