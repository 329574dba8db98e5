from chunkraft.controller.image.partition_merge import merge_partition_change
from chunkraft.records import PartitionChangeRecord
from tests.unit.controller.image.support import TOPIC_ID, partition


def test_unchanged_fields_keep_their_values_and_the_partition_epoch_grows() -> None:
    before = partition(replicas=(0, 1, 2))
    after = merge_partition_change(before, PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID))
    assert after.replicas == (0, 1, 2)
    assert after.leader == 0 and after.leader_epoch == 0
    assert after.partition_epoch == before.partition_epoch + 1
    assert after.start_offset == 0


def test_any_leader_value_other_than_minus_two_bumps_the_leader_epoch() -> None:
    before = partition(replicas=(0, 1))
    same_leader = merge_partition_change(
        before, PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=0)
    )
    assert same_leader.leader == 0
    assert same_leader.leader_epoch == 1
    no_leader = merge_partition_change(
        before, PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=-1)
    )
    assert no_leader.leader == -1 and no_leader.leader_epoch == 1


def test_chunk_cut_fields_move_the_active_chunk() -> None:
    before = partition(replicas=(0,))
    after = merge_partition_change(
        before,
        PartitionChangeRecord(
            partition_id=0, topic_id=TOPIC_ID, replicas=(1,), isr=(1,), leader=1,
            start_offset=10, start_timestamp=99,
        ),
    )
    assert (after.replicas, after.isr, after.leader) == ((1,), (1,), 1)
    assert (after.start_offset, after.start_timestamp) == (10, 99)


def test_empty_lists_are_a_change_and_null_is_not() -> None:
    before = partition(replicas=(0, 1))._replace(adding_replicas=(1,))
    cleared = merge_partition_change(
        before, PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, adding_replicas=())
    )
    assert cleared.adding_replicas == ()
    kept = merge_partition_change(before, PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID))
    assert kept.adding_replicas == (1,)
