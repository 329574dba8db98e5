from __future__ import annotations

import uuid
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.alter_partition import alter_partition
from chunkraft.error_codes import Errors
from chunkraft.protocol.brokers import (
    AlterPartitionBrokerState,
    AlterPartitionPartitionData,
    AlterPartitionPartitionResult,
    AlterPartitionRequest,
    AlterPartitionTopicData,
)
from chunkraft.records import (
    NO_LEADER_CHANGE,
    BrokerRegistrationChangeRecord,
    UnregisterBrokerRecord,
)
from chunkraft.records.uuids import kafka_uuid_str
from tests.support.controller import commit
from tests.unit.controller.operations.cluster_builders import (
    TOPIC_ID,
    apply,
    cluster,
    partition,
    registration_of,
    state,
    with_topic,
)


def orders(**overrides: Any) -> MetadataImage:
    """Brokers 1-4 (4 fenced); orders-0 on (1, 2, 3, 4), ISR (1, 2, 3), led by 1 at leader
    epoch 3, partition epoch 7; orders-1 on (2, 1) led by 2 with ISR (2,)."""
    image = cluster(1, 2, 3, 4, fenced=(4,))
    return with_topic(
        image,
        partition(0, (1, 2, 3, 4), isr=(1, 2, 3), leader_epoch=3, partition_epoch=7,
                  **overrides),
        partition(1, (2, 1), isr=(2,), leader_epoch=0, partition_epoch=0),
    )


def data(partition_index: int = 0, **fields: Any) -> AlterPartitionPartitionData:
    fields.setdefault("leader_epoch", 3)
    fields.setdefault("partition_epoch", 7)
    if "new_isr_with_epochs" not in fields:
        fields.setdefault("new_isr", (1, 2))
    return AlterPartitionPartitionData(partition_index=partition_index, **fields)


def request(image: MetadataImage, *partitions: AlterPartitionPartitionData, broker_id: int = 1,
            topic: AlterPartitionTopicData | None = None) -> AlterPartitionRequest:
    return AlterPartitionRequest(
        broker_id=broker_id,
        broker_epoch=registration_of(image, broker_id).broker_epoch,
        topics=(topic or AlterPartitionTopicData(topic_id=kafka_uuid_str(TOPIC_ID),
                                                 partitions=partitions),),
    )


def only_result(image: MetadataImage, req: AlterPartitionRequest) -> AlterPartitionPartitionResult:
    result = alter_partition(image, req)
    assert result.response.error_code == 0
    (topic,) = result.response.topics
    (single,) = topic.partitions
    return single


def rejected(image: MetadataImage, *partitions: AlterPartitionPartitionData,
             broker_id: int = 1) -> AlterPartitionPartitionResult:
    req = request(image, *partitions, broker_id=broker_id)
    result = alter_partition(image, req)
    assert result.records == ()
    single = only_result(image, req)
    assert single.error_code != 0
    return single


# ------------------------------------------------------------------ success


def test_a_shrink_changes_only_the_isr_and_bumps_the_partition_epoch() -> None:
    image = orders()
    result = alter_partition(image, request(image, data(new_isr=(1, 2))))
    (change,) = result.records
    assert change.isr == (1, 2) and change.leader == NO_LEADER_CHANGE
    assert change.leader_recovery_state == -1
    (topic,) = result.response.topics
    assert topic.topic_id == kafka_uuid_str(TOPIC_ID)
    (answer,) = topic.partitions
    assert (answer.error_code, answer.leader_id, answer.isr) == (0, 1, (1, 2))
    assert (answer.leader_epoch, answer.partition_epoch) == (3, 8)
    after = state(commit(image, result), 0)
    assert (after.isr, after.leader, after.leader_epoch, after.partition_epoch) == (
        (1, 2), 1, 3, 8)


def test_an_expansion_with_broker_epochs() -> None:
    image = orders()
    image = commit(image, alter_partition(image, request(image, data(new_isr=(1,)))))
    members = tuple(
        AlterPartitionBrokerState(broker_id=b, broker_epoch=registration_of(image, b).broker_epoch)
        for b in (1, 3)
    )
    req = request(image, data(new_isr_with_epochs=members, partition_epoch=8))
    assert only_result(image, req).isr == (1, 3)
    assert state(commit(image, alter_partition(image, req)), 0).isr == (1, 3)


def test_the_same_isr_again_writes_nothing_and_succeeds() -> None:
    image = orders()
    result = alter_partition(image, request(image, data(new_isr=(1, 2, 3))))
    assert result.records == ()
    (answer,) = result.response.topics[0].partitions
    assert (answer.error_code, answer.isr, answer.partition_epoch) == (0, (1, 2, 3), 7)


def test_the_topic_may_be_named_by_name() -> None:
    image = orders()
    topic = AlterPartitionTopicData(topic_name="orders", partitions=(data(new_isr=(1, 3)),))
    result = alter_partition(image, request(image, topic=topic))
    assert result.response.topics[0].topic_name == "orders"
    assert state(commit(image, result), 0).isr == (1, 3)


def test_recovered_after_an_unclean_election_is_written() -> None:
    image = orders(leader_recovery_state=1)
    image = commit(image, alter_partition(image, request(image, data(
        new_isr=(1,), leader_recovery_state=1))))
    assert state(image, 0).leader_recovery_state == 1
    result = alter_partition(image, request(image, data(new_isr=(1, 2), partition_epoch=8)))
    (change,) = result.records
    assert change.leader_recovery_state == 0
    assert state(commit(image, result), 0).leader_recovery_state == 0


def test_partitions_fail_or_succeed_on_their_own() -> None:
    image = orders()
    result = alter_partition(image, request(image, data(0, new_isr=(1, 3)),
                                            data(1, new_isr=(2, 1), leader_epoch=0,
                                                 partition_epoch=0)))
    assert len(result.records) == 1
    codes = [p.error_code for p in result.response.topics[0].partitions]
    assert codes == [0, Errors.NOT_LEADER_OR_FOLLOWER.code]


# ------------------------------------------------------------------ request-wide errors


def test_a_wrong_broker_epoch_is_stale_for_the_whole_request() -> None:
    image = orders()
    req = request(image, data()).model_copy(update={"broker_epoch": 999})
    result = alter_partition(image, req)
    assert result.records == () and result.response.topics == ()
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
    assert "Expected broker epoch" in (result.response.error_message or "")


def test_an_unregistered_broker_is_stale() -> None:
    image = orders()
    req = AlterPartitionRequest(broker_id=9, broker_epoch=0, topics=())
    result = alter_partition(image, req)
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
    assert result.response.error_message == "No broker registration found for broker id 9"


# ------------------------------------------------------------------ per topic


@pytest.mark.parametrize(
    ("topic", "error"),
    [
        (AlterPartitionTopicData(topic_id=kafka_uuid_str(uuid.UUID(int=77)),
                                 partitions=(data(),)), Errors.UNKNOWN_TOPIC_ID),
        (AlterPartitionTopicData(topic_id="AAAAAAAAAAAAAAAAAAAAAA", partitions=(data(),)),
         Errors.UNKNOWN_TOPIC_ID),
        (AlterPartitionTopicData(topic_id="not a uuid", partitions=(data(),)),
         Errors.INVALID_REQUEST),
        (AlterPartitionTopicData(topic_name="nope", partitions=(data(), data(1))),
         Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ],
)
def test_unknown_topics(topic: AlterPartitionTopicData, error: Errors) -> None:
    image = orders()
    result = alter_partition(image, request(image, topic=topic))
    assert result.records == ()
    answers = result.response.topics[0].partitions
    assert [a.error_code for a in answers] == [error.code] * len(topic.partitions)
    assert [a.partition_index for a in answers] == [p.partition_index for p in topic.partitions]


# ------------------------------------------------------------------ per partition, in order


def test_an_unknown_partition() -> None:
    answer = rejected(orders(), data(5))
    assert answer.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    assert "orders-5" in (answer.error_message or "")


@pytest.mark.parametrize("fields", [{"leader_epoch": 4}, {"partition_epoch": 8}])
def test_newer_epochs_mean_this_controller_is_behind(fields: dict[str, int]) -> None:
    answer = rejected(orders(), data(**fields))
    assert answer.error_code == Errors.NOT_CONTROLLER.code


def test_an_older_leader_epoch_is_fenced() -> None:
    answer = rejected(orders(), data(leader_epoch=2))
    assert answer.error_code == Errors.FENCED_LEADER_EPOCH.code
    assert "current leader epoch is 3, not 2" in (answer.error_message or "")


def test_a_fenced_leader_epoch_is_reported_before_not_being_the_leader() -> None:
    answer = rejected(orders(), data(leader_epoch=2), broker_id=2)
    assert answer.error_code == Errors.FENCED_LEADER_EPOCH.code


def test_only_the_leader_may_alter_the_isr() -> None:
    answer = rejected(orders(), data(new_isr=(2, 1)), broker_id=2)
    assert answer.error_code == Errors.NOT_LEADER_OR_FOLLOWER.code
    assert "current leader is 1" in (answer.error_message or "")


def test_not_the_leader_is_reported_before_an_older_partition_epoch() -> None:
    answer = rejected(orders(), data(partition_epoch=6), broker_id=2)
    assert answer.error_code == Errors.NOT_LEADER_OR_FOLLOWER.code


def test_an_older_partition_epoch_is_an_invalid_update_version() -> None:
    answer = rejected(orders(), data(partition_epoch=6))
    assert answer.error_code == Errors.INVALID_UPDATE_VERSION.code
    assert "partition epoch is 7, not 6" in (answer.error_message or "")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"new_isr": (1, 2, 2)}, "duplicate"),
        ({"new_isr": (1, 5)}, "not replicas"),
        ({"new_isr": (1, -3)}, "not replicas"),
        ({"new_isr": (2, 3)}, "does not include the leader"),
        ({"new_isr": ()}, "does not include the leader"),
        ({"new_isr": (1,), "leader_recovery_state": 2}, "leader recovery state 2"),
        ({"new_isr": (1, 2), "leader_recovery_state": 1}, "more than one replica"),
        ({"new_isr": (1,), "leader_recovery_state": 1}, "RECOVERED to RECOVERING"),
    ],
)
def test_invalid_isrs(fields: dict[str, Any], message: str) -> None:
    answer = rejected(orders(), data(**fields))
    assert answer.error_code == Errors.INVALID_REQUEST.code
    assert message in (answer.error_message or "")


def test_an_invalid_isr_is_reported_before_ineligible_members() -> None:
    answer = rejected(orders(), data(new_isr=(1, 4, 4)))
    assert answer.error_code == Errors.INVALID_REQUEST.code


def test_a_fenced_member_is_ineligible() -> None:
    answer = rejected(orders(), data(new_isr=(1, 4)))
    assert answer.error_code == Errors.INELIGIBLE_REPLICA.code
    assert "4 is fenced" in (answer.error_message or "")


def test_an_unregistered_member_is_ineligible() -> None:
    image = orders()
    image = apply(image, UnregisterBrokerRecord(
        broker_id=3, broker_epoch=registration_of(image, 3).broker_epoch))
    answer = rejected(image, data(new_isr=(1, 3)))
    assert answer.error_code == Errors.INELIGIBLE_REPLICA.code
    assert "3 is not registered" in (answer.error_message or "")


def test_a_member_in_controlled_shutdown_is_ineligible() -> None:
    image = orders()
    image = apply(image, BrokerRegistrationChangeRecord(
        broker_id=2, broker_epoch=registration_of(image, 2).broker_epoch,
        in_controlled_shutdown=1))
    answer = rejected(image, data(new_isr=(1, 2)))
    assert answer.error_code == Errors.INELIGIBLE_REPLICA.code
    assert "2 is shutting down" in (answer.error_message or "")


def test_a_member_with_another_broker_epoch_is_ineligible() -> None:
    image = orders()
    members = (AlterPartitionBrokerState(broker_id=1),
               AlterPartitionBrokerState(broker_id=2, broker_epoch=123456))
    answer = rejected(image, data(new_isr_with_epochs=members))
    assert answer.error_code == Errors.INELIGIBLE_REPLICA.code
    assert "not 123456" in (answer.error_message or "")


def test_a_partition_named_twice_is_refused_the_second_time() -> None:
    image = orders()
    result = alter_partition(image, request(image, data(new_isr=(1, 2)), data(new_isr=(1, 3))))
    assert len(result.records) == 1 and result.records[0].isr == (1, 2)
    codes = [p.error_code for p in result.response.topics[0].partitions]
    assert codes == [0, Errors.INVALID_REQUEST.code]


def test_a_request_needs_exactly_one_isr_form_and_one_topic_name() -> None:
    with pytest.raises(ValueError, match="exactly one of new_isr"):
        AlterPartitionPartitionData(partition_index=0, leader_epoch=0, partition_epoch=0)
    with pytest.raises(ValueError, match="exactly one of topic_id"):
        AlterPartitionTopicData(topic_id="x", topic_name="y")
