from __future__ import annotations

from chunkraft.controller.image.partition_merge import merge_partition_change
from chunkraft.controller.operations.leader_election import (
    ElectLeader,
    active_broker_acceptor,
    build_partition_change,
    elect_leader,
    isr_without,
    remove_from_isr_and_leadership,
)
from chunkraft.records import NO_LEADER, NO_LEADER_CHANGE, BrokerRegistrationChangeRecord
from tests.unit.controller.operations.cluster_builders import (
    apply,
    cluster,
    partition,
    registration_of,
    state,
    with_topic,
)


def anyone(broker_id: int) -> bool:
    return True


def test_nothing_to_change_builds_nothing() -> None:
    current = partition(0, (1, 2, 3))
    assert build_partition_change(current) is None
    assert build_partition_change(current, isr=(1, 2, 3), leader=1) is None
    assert build_partition_change(current, leader=ElectLeader(anyone)) is None
    assert build_partition_change(current, leader_recovery_state=0) is None


def test_isr_change_keeps_the_leader_and_its_epoch() -> None:
    current = partition(0, (1, 2, 3), leader_epoch=4, partition_epoch=7)
    change = build_partition_change(current, isr=(1, 2))
    assert change is not None
    assert change.isr == (1, 2)
    assert change.leader == NO_LEADER_CHANGE
    assert change.leader_recovery_state == -1
    assert (change.topic_id, change.partition_id) == (current.topic_id, 0)
    after = merge_partition_change(current, change)
    assert after.isr == (1, 2) and after.leader == 1
    assert (after.leader_epoch, after.partition_epoch) == (4, 8)


def test_a_new_leader_bumps_the_leader_epoch_on_replay() -> None:
    current = partition(0, (1, 2, 3), leader_epoch=4, partition_epoch=7)
    change = build_partition_change(current, leader=2)
    assert change is not None and change.leader == 2 and change.isr is None
    after = merge_partition_change(current, change)
    assert (after.leader, after.leader_epoch, after.partition_epoch) == (2, 5, 8)


def test_bump_leader_epoch_writes_the_unchanged_leader() -> None:
    current = partition(0, (1, 2), leader_epoch=0)
    change = build_partition_change(current, bump_leader_epoch=True)
    assert change is not None and change.leader == 1
    after = merge_partition_change(current, change)
    assert (after.leader, after.leader_epoch) == (1, 1)


def test_leader_recovery_state_is_written_only_when_it_changes() -> None:
    recovering = partition(0, (1,), leader_recovery_state=1)
    change = build_partition_change(recovering, leader_recovery_state=0)
    assert change is not None and change.leader_recovery_state == 0 and change.isr is None
    assert merge_partition_change(recovering, change).leader_recovery_state == 0


def test_election_keeps_an_acceptable_leader() -> None:
    current = partition(0, (1, 2, 3), leader=3)
    assert elect_leader(current, (1, 2, 3), anyone) == 3


def test_election_takes_the_first_acceptable_replica_in_preferred_order() -> None:
    current = partition(0, (3, 1, 2), isr=(1, 2, 3), leader=3)
    assert elect_leader(current, (2, 1), anyone) == 1
    assert elect_leader(current, (2, 1), lambda b: b != 1) == 2
    assert elect_leader(current, (1, 2, 3), lambda b: b != 3) == 1


def test_election_without_an_acceptable_isr_member_gives_no_leader() -> None:
    current = partition(0, (1, 2, 3))
    assert elect_leader(current, (2, 3), lambda b: b == 1) == NO_LEADER
    assert elect_leader(current, (), anyone) == NO_LEADER


def test_an_empty_target_isr_is_never_written_but_leaves_no_leader() -> None:
    current = partition(0, (1, 2), isr=(1,))
    change = build_partition_change(current, isr=(), leader=ElectLeader(anyone))
    assert change is not None
    assert change.isr is None and change.leader == NO_LEADER
    after = merge_partition_change(current, change)
    assert after.isr == (1,) and after.leader == NO_LEADER


def test_removing_a_follower_changes_only_the_isr() -> None:
    current = partition(0, (1, 2, 3))
    change = remove_from_isr_and_leadership(current, 3, anyone)
    assert change is not None
    assert change.isr == (1, 2) and change.leader == NO_LEADER_CHANGE


def test_removing_the_leader_elects_the_next_acceptable_isr_member() -> None:
    current = partition(0, (1, 2, 3))
    change = remove_from_isr_and_leadership(current, 1, lambda b: b != 2)
    assert change is not None
    assert change.isr == (2, 3) and change.leader == 3


def test_removing_the_last_isr_member_keeps_it_and_leaves_no_leader() -> None:
    current = partition(0, (1, 2, 3), isr=(1,))
    change = remove_from_isr_and_leadership(current, 1, anyone)
    assert change is not None
    assert change.isr is None and change.leader == NO_LEADER
    assert remove_from_isr_and_leadership(current, 2, anyone) is None


def test_the_removed_broker_is_never_elected_even_if_the_acceptor_allows_it() -> None:
    current = partition(0, (1, 2), isr=(1, 2), leader=1)
    change = remove_from_isr_and_leadership(current, 1, anyone)
    assert change is not None and change.leader == 2


def test_isr_without_keeps_order() -> None:
    assert isr_without((3, 1, 2), 1) == (3, 2)
    assert isr_without((3, 2), 1) == (3, 2)


def test_active_broker_acceptor_refuses_fenced_shutting_down_and_unknown_brokers() -> None:
    image = cluster(1, 2, 3, 4, fenced=(2,))
    three = registration_of(image, 3)
    image = apply(image, BrokerRegistrationChangeRecord(
        broker_id=3, broker_epoch=three.broker_epoch, in_controlled_shutdown=1))
    acceptable = active_broker_acceptor(image.brokers)
    assert [b for b in (1, 2, 3, 4, 5) if acceptable(b)] == [1, 4]
    assert not active_broker_acceptor(image.brokers, excluding=1)(1)
    assert active_broker_acceptor(image.brokers, including=2)(2)


def test_built_records_replay_to_the_intended_state() -> None:
    image = with_topic(cluster(1, 2, 3), partition(0, (1, 2, 3), leader_epoch=2,
                                                   partition_epoch=5))
    current = state(image, 0)
    change = remove_from_isr_and_leadership(current, 1, active_broker_acceptor(image.brokers))
    assert change is not None
    after = state(apply(image, change), 0)
    assert (after.isr, after.leader, after.leader_epoch, after.partition_epoch) == (
        (2, 3), 2, 3, 6)
