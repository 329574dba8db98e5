from __future__ import annotations

import importlib
import uuid
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.create_partitions import create_partitions
from chunkraft.controller.operations.record_budget import (
    MAX_PRIOR_EPOCHS_PER_USER_OP,
    MAX_RECORDS_PER_USER_OP,
)
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.topics import CreatePartitionsRequest, CreatePartitionsResponse
from chunkraft.records import PartitionChangeRecord, PartitionRecord, PriorPartitionEpoch
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    OTHER_ID,
    apply,
    cluster,
    commit_valid,
    partition,
    partition_of,
    topic_of,
    with_topic,
)


def _expand(image: MetadataImage, *topics: dict[str, Any],
            validate_only: bool = False) -> ControllerResult[CreatePartitionsResponse]:
    request = CreatePartitionsRequest.model_validate(
        {"topics": list(topics), "validate_only": validate_only, "timeout_ms": 5000})
    return create_partitions(image, request)


def _outcomes(result: ControllerResult[CreatePartitionsResponse]
              ) -> dict[str, tuple[Errors, str | None]]:
    return {r.name: (Errors.for_code(r.error_code), r.error_message)
            for r in result.response.results}


def _orders_with_epochs() -> MetadataImage:
    """orders: three partitions with leader epochs 5, 2 (no leader) and 0."""
    image = cluster((0, 1, 2, 3))
    return apply(
        with_topic(image, replicas=()),
        partition(0, (0, 1), leader_epoch=5, partition_epoch=9),
        partition(1, (1, 2), leader=-1, isr=(1,), leader_epoch=2, partition_epoch=4),
        partition(2, (2, 3), leader=3),
    )


def test_expansion_bumps_every_leader_epoch_once_and_records_prior_epochs() -> None:
    image = _orders_with_epochs()
    result = _expand(image, {"name": "orders", "count": 5})
    assert _outcomes(result) == {"orders": (Errors.NONE, None)}
    bumps = [r for r in result.records if isinstance(r, PartitionChangeRecord)]
    assert bumps == [
        PartitionChangeRecord(partition_id=0, topic_id=ORDERS_ID, leader=0),
        PartitionChangeRecord(partition_id=1, topic_id=ORDERS_ID, leader=-1),
        PartitionChangeRecord(partition_id=2, topic_id=ORDERS_ID, leader=3),
    ]
    prior = (PriorPartitionEpoch(partition_id=0, leader_epoch=5),
             PriorPartitionEpoch(partition_id=1, leader_epoch=2),
             PriorPartitionEpoch(partition_id=2, leader_epoch=0))
    new = [r for r in result.records if isinstance(r, PartitionRecord)]
    assert [r.partition_id for r in new] == [3, 4]
    assert all(r.prior_partition_epochs == prior for r in new)
    assert result.records[:3] == tuple(bumps)  # bumps first, then the new partitions

    after = commit_valid(image, result)
    old = {i: partition_of(image, i) for i in range(3)}
    for i in range(3):
        now = partition_of(after, i)
        assert now.leader_epoch == old[i].leader_epoch + 1
        assert now.partition_epoch == old[i].partition_epoch + 1
        assert (now.leader, now.replicas, now.isr) == (old[i].leader, old[i].replicas, old[i].isr)
    assert partition_of(after, 1).leader == -1  # a leaderless partition stays leaderless
    for i in (3, 4):
        p = partition_of(after, i)
        assert len(p.replicas) == 2 and len(set(p.replicas)) == 2
        assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch, p.start_offset) == (
            p.replicas, p.replicas[0], 0, 0, 0)
        assert p.prior_partition_epochs == prior


def test_a_second_expansion_records_the_epochs_left_by_the_first() -> None:
    image = with_topic(cluster(), replicas=((0,), (1,)))
    image = commit_valid(image, _expand(image, {"name": "orders", "count": 3}))
    result = _expand(image, {"name": "orders", "count": 4})
    after = commit_valid(image, result)
    assert [(p.partition_id, p.leader_epoch)
            for p in partition_of(after, 3).prior_partition_epochs] == [(0, 1), (1, 1), (2, 0)]
    assert [partition_of(after, i).leader_epoch for i in range(4)] == [2, 2, 1, 0]


def test_manual_assignments_place_the_new_partitions() -> None:
    image = with_topic(cluster((0, 1, 2, 3)))
    result = _expand(image, {"name": "orders", "count": 5,
                             "assignments": [{"broker_ids": [3, 1]}, {"broker_ids": [2, 3]}]})
    after = commit_valid(image, result)
    assert (partition_of(after, 3).replicas, partition_of(after, 3).leader) == ((3, 1), 3)
    assert (partition_of(after, 4).replicas, partition_of(after, 4).leader) == ((2, 3), 2)


@pytest.mark.parametrize(
    ("topic", "error", "message"),
    [
        ({"name": "ghost", "count": 4}, Errors.UNKNOWN_TOPIC_OR_PARTITION,
         "Topic 'ghost' does not exist."),
        ({"name": "orders", "count": 3}, Errors.INVALID_PARTITIONS,
         "Topic already has 3 partition(s)."),
        ({"name": "orders", "count": 2}, Errors.INVALID_PARTITIONS,
         "The topic orders currently has 3 partition(s); 2 would not be an increase."),
        ({"name": "orders", "count": 5, "assignments": [{"broker_ids": [0, 1]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
        ({"name": "orders", "count": 4, "assignments": [{"broker_ids": [0, 1, 2]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes a "
         "partition with 3 replica(s), but this is not consistent with previous partitions, "
         "which have 2 replica(s)."),
        ({"name": "orders", "count": 4, "assignments": [{"broker_ids": [0, 8]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker "
         "8, but no such broker is registered."),
        ({"name": "orders", "count": 4, "assignments": [{"broker_ids": [1, 1]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes the broker 1 more than once."),
        ({"name": "orders", "count": 4, "assignments": [{"broker_ids": []}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes an empty replica list."),
        ({"name": "orders", "count": 4, "assignments": [{"broker_ids": [0, 3]}]},
         Errors.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 3, which is fenced."),
        ({"name": "wide", "count": 2}, Errors.INVALID_REPLICATION_FACTOR,
         "Unable to replicate the partition 4 time(s): The target replication factor of 4 "
         "cannot be reached because only 3 broker(s) are registered and usable (1 more are "
         "fenced or in controlled shutdown)."),
    ],
)
def test_refusals_follow_kafkas_order_and_words(
    topic: dict[str, Any], error: Errors, message: str
) -> None:
    image = with_topic(cluster((0, 1, 2, 3), fenced=(3,)))
    image = with_topic(image, "wide", replicas=((0, 1, 2, 3),), topic_id=OTHER_ID)
    image = with_topic(image, "fine", replicas=((0,),), topic_id=uuid.UUID(int=77))
    result = _expand(image, topic, {"name": "fine", "count": 2})
    assert _outcomes(result) == {topic["name"]: (error, message), "fine": (Errors.NONE, None)}
    # Only the good topic's records: one bump and one new partition, all for "fine".
    fine_id = topic_of(image, "fine").topic_id
    assert len(result.records) == 2 and all(r.topic_id == fine_id for r in result.records)
    after = commit_valid(image, result)
    assert len(topic_of(after, "orders").partitions) == 3
    assert [partition_of(after, i).leader_epoch for i in range(3)] == [0, 0, 0]


def test_a_topic_with_one_bad_assignment_writes_nothing() -> None:
    image = with_topic(cluster((0, 1, 2)))
    result = _expand(image, {"name": "orders", "count": 5,
                             "assignments": [{"broker_ids": [0, 1]}, {"broker_ids": [2, 9]}]})
    assert _outcomes(result)["orders"][0] is Errors.INVALID_REPLICA_ASSIGNMENT
    assert result.records == ()


def test_duplicate_topic_names_are_refused_once() -> None:
    image = with_topic(cluster())
    result = _expand(image, {"name": "orders", "count": 4}, {"name": "orders", "count": 5})
    assert [(r.name, r.error_code, r.error_message) for r in result.response.results] == [
        ("orders", Errors.INVALID_REQUEST.code, "Duplicate topic name.")]
    assert result.records == ()


def test_validate_only_runs_every_check_and_writes_nothing() -> None:
    image = with_topic(cluster((0, 1, 2)))
    topics = ({"name": "orders", "count": 6}, {"name": "ghost", "count": 2})
    real = _expand(image, *topics)
    dry = _expand(image, *topics, validate_only=True)
    assert len(real.records) == 6
    assert dry.records == () and commit_valid(image, dry) is image
    assert dry.response == real.response
    assert _outcomes(dry)["ghost"][0] is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_the_replication_factor_counts_the_target_of_a_reassignment() -> None:
    image = with_topic(cluster((0, 1, 2, 3)), replicas=())
    image = apply(image, partition(0, (3, 0, 1), isr=(0, 1), adding_replicas=(3,),
                                   removing_replicas=(1,)))
    result = _expand(image, {"name": "orders", "count": 3})
    after = commit_valid(image, result)
    assert [len(partition_of(after, i).replicas) for i in (1, 2)] == [2, 2]
    # The bump leaves the reassignment as it was.
    moving = partition_of(after, 0)
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == (
        (3, 0, 1), (3,), (1,))


def test_the_record_limit_counts_bumps_and_new_partitions() -> None:
    image = with_topic(cluster((0,)), replicas=((0,),))
    image = with_topic(image, "small", replicas=((0,),), topic_id=OTHER_ID)
    limit = MAX_RECORDS_PER_USER_OP
    exceeding = _expand(image, {"name": "orders", "count": limit + 1})
    assert _outcomes(exceeding)["orders"] == (
        Errors.POLICY_VIOLATION,
        f"Adding {limit} partition(s) to topic 'orders' (1 leader epoch bumps and {limit} new "
        f"partitions) needs {limit + 1} records, but one operation writes at most {limit}; "
        "split it into smaller steps.")
    assert exceeding.records == ()

    exact = _expand(image, {"name": "orders", "count": limit}, {"name": "small", "count": 2})
    assert _outcomes(exact) == {
        "orders": (Errors.NONE, None),
        "small": (Errors.POLICY_VIOLATION,
                  "Adding 1 partition(s) to topic 'small' (1 leader epoch bumps and 1 new "
                  "partitions) needs 2 records, but only 0 of the 10000 records one operation "
                  "may write are left after the items before it; send it in a separate "
                  "request."),
    }
    assert len(exact.records) == limit
    after = commit_valid(image, exact)
    assert len(topic_of(after).partitions) == limit
    assert len(topic_of(after, "small").partitions) == 1


def test_prior_partition_epochs_are_capped_per_operation() -> None:
    # 400 existing partitions: 250 new ones list 100,000 prior epochs in all, 251 one too many.
    image = with_topic(cluster((0,)), replicas=[(0,)] * 400)
    image = with_topic(image, "small", replicas=((0,),), topic_id=OTHER_ID)
    assert MAX_PRIOR_EPOCHS_PER_USER_OP == 400 * 250
    over = _expand(image, {"name": "orders", "count": 651})
    assert _outcomes(over)["orders"] == (
        Errors.POLICY_VIOLATION,
        "Adding 251 partition(s) to topic 'orders' (each new partition lists the epochs of the "
        "400 existing ones) needs 100400 prior partition epochs, but one operation writes at "
        "most 100000; split it into smaller steps.")
    assert over.records == ()
    full = _expand(image, {"name": "orders", "count": 650}, {"name": "small", "count": 2})
    outcomes = _outcomes(full)
    assert outcomes["orders"] == (Errors.NONE, None)
    assert outcomes["small"][0] is Errors.POLICY_VIOLATION
    assert "only 0 of the 100000 prior partition epochs" in (outcomes["small"][1] or "")
    assert sum(len(r.prior_partition_epochs) for r in full.records
               if isinstance(r, PartitionRecord)) == MAX_PRIOR_EPOCHS_PER_USER_OP


def test_two_topics_expanded_together_each_bump_only_their_own_partitions() -> None:
    image = _orders_with_epochs()
    image = with_topic(image, "small", replicas=((1,),), topic_id=OTHER_ID, leader_epoch=7)
    result = _expand(image, {"name": "small", "count": 2}, {"name": "orders", "count": 4})
    assert _outcomes(result) == {"small": (Errors.NONE, None), "orders": (Errors.NONE, None)}
    bumped = [(r.topic_id, r.partition_id) for r in result.records
              if isinstance(r, PartitionChangeRecord)]
    assert bumped == [(OTHER_ID, 0), (ORDERS_ID, 0), (ORDERS_ID, 1), (ORDERS_ID, 2)]
    after = commit_valid(image, result)
    assert partition_of(after, 0, "small").leader_epoch == 8
    assert [(p.partition_id, p.leader_epoch)
            for p in partition_of(after, 1, "small").prior_partition_epochs] == [(0, 7)]
    assert [partition_of(after, i).leader_epoch for i in range(4)] == [6, 3, 1, 0]
    assert [(p.partition_id, p.leader_epoch)
            for p in partition_of(after, 3).prior_partition_epochs] == [(0, 5), (1, 2), (2, 0)]


def test_the_record_budget_is_checked_before_any_assignment_is_looked_at(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An expansion too large to write is refused from its counts alone: a request of many
    assignments costs nothing per assignment (300 x 1,000 once took seconds)."""
    # The package re-exports the function under the module's name: fetch the module itself.
    module = importlib.import_module("chunkraft.controller.operations.create_partitions")
    checked: list[object] = []

    def counting(image: MetadataImage, replicas: object, subject: str) -> None:
        checked.append(replicas)

    monkeypatch.setattr(module, "validate_manual_assignment", counting)
    image = _orders_with_epochs()
    additional = MAX_RECORDS_PER_USER_OP
    result = _expand(image, {"name": "orders", "count": 3 + additional,
                             "assignments": [{"broker_ids": [9, 9]}] * additional})
    [(error, message)] = _outcomes(result).values()
    assert error is Errors.POLICY_VIOLATION and message is not None
    assert "10003 records" in message
    assert checked == []


@pytest.mark.parametrize(("name", "message"), [
    ("", "Topic name is illegal, it can't be empty"),
    ("..", 'Topic name cannot be "." or ".."'),
    ("x" * 250, "Topic name is illegal, it can't be longer than 249 characters, topic name: "
     + "x" * 250),
    ("ord/ers", 'Topic name "ord/ers" is illegal, it contains a character other than ASCII '
     "alphanumerics, '.', '_' and '-'"),
])
def test_an_illegal_topic_name_is_invalid_topic_exception_per_topic(name: str,
                                                                    message: str) -> None:
    image = with_topic(cluster((0, 1, 2)))
    result = _expand(image, {"name": name, "count": 4}, {"name": "orders", "count": 4})
    assert _outcomes(result) == {name: (Errors.INVALID_TOPIC_EXCEPTION, message),
                                 "orders": (Errors.NONE, None)}
