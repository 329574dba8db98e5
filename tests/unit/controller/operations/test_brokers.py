from __future__ import annotations

import uuid
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.brokers import (
    broker_heartbeat,
    fence_broker,
    register_broker,
    unregister_broker,
)
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.error_codes import Errors
from chunkraft.protocol.brokers import (
    BrokerHeartbeatRequest,
    BrokerRegistrationFeature,
    BrokerRegistrationListener,
    UnregisterBrokerRequest,
)
from chunkraft.records import (
    NO_LEADER,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from chunkraft.records.uuids import kafka_uuid_str
from tests.support.controller import commit
from tests.unit.controller.operations.cluster_builders import (
    CLUSTER_ID,
    OTHER_TOPIC_ID,
    LiveSessions,
    NoSessions,
    apply,
    chunk,
    cluster,
    heartbeat,
    incarnation,
    partition,
    registration_of,
    registration_request,
    state,
    with_topic,
)

# ------------------------------------------------------------------ register_broker


def test_the_broker_epoch_is_the_offset_of_the_registration_record() -> None:
    image = cluster(1, 2)
    offset_before = image.offset
    result = register_broker(image, registration_request(3), cluster_id=CLUSTER_ID,
                             sessions=NoSessions(), now=0.0)
    assert result.response.error_code == 0
    assert result.response.broker_epoch == offset_before + 1
    assert isinstance(result.records[0], RegisterBrokerRecord)
    after = commit(image, result)
    # the record is the batch's only one, so the image now ends at its offset
    assert after.offset == offset_before + 1
    assert registration_of(after, 3).broker_epoch == after.offset


def test_the_first_broker_on_an_empty_log_gets_epoch_zero() -> None:
    result = register_broker(MetadataImage.EMPTY, registration_request(0), cluster_id=CLUSTER_ID,
                             sessions=NoSessions(), now=0.0)
    assert result.response.broker_epoch == 0
    assert registration_of(commit(MetadataImage.EMPTY, result), 0).broker_epoch == 0


def test_a_new_registration_is_fenced_and_carries_the_request() -> None:
    request = registration_request(
        7,
        listeners=(BrokerRegistrationListener(name="PLAINTEXT", host="b7", port=9092,
                                              security_protocol=0),
                   BrokerRegistrationListener(name="SSL", host="b7", port=9093,
                                              security_protocol=1)),
        features=(BrokerRegistrationFeature(name="metadata.version", min_supported_version=1,
                                            max_supported_version=20),),
        rack="rack-a",
    )
    result = register_broker(MetadataImage.EMPTY, request, cluster_id=CLUSTER_ID,
                             sessions=NoSessions(), now=0.0)
    registration = registration_of(commit(MetadataImage.EMPTY, result), 7)
    assert registration.fenced and not registration.in_controlled_shutdown
    assert registration.incarnation_id == incarnation(7)
    assert registration.rack == "rack-a"
    assert registration.end_points == (
        BrokerEndpoint(name="PLAINTEXT", host="b7", port=9092, security_protocol=0),
        BrokerEndpoint(name="SSL", host="b7", port=9093, security_protocol=1),
    )
    assert registration.features == (
        BrokerFeature(name="metadata.version", min_supported_version=1,
                      max_supported_version=20),
    )


def test_the_incarnation_id_may_be_given_in_kafkas_text_form() -> None:
    request = registration_request(1, incarnation_id=kafka_uuid_str(incarnation(1)))
    result = register_broker(MetadataImage.EMPTY, request, cluster_id=CLUSTER_ID,
                             sessions=NoSessions(), now=0.0)
    assert registration_of(commit(MetadataImage.EMPTY, result), 1).incarnation_id == (
        incarnation(1))


def test_another_cluster_id_is_inconsistent() -> None:
    request = registration_request(1, cluster_id="another-cluster")
    result = register_broker(MetadataImage.EMPTY, request, cluster_id=CLUSTER_ID,
                             sessions=NoSessions(), now=0.0)
    assert result.records == ()
    assert result.response.error_code == Errors.INCONSISTENT_CLUSTER_ID.code
    assert result.response.broker_epoch == -1
    assert "another-cluster" in (result.response.error_message or "")


def test_the_cluster_id_is_checked_before_a_duplicate_registration() -> None:
    image = cluster(1)
    request = registration_request(1, generation=1, cluster_id="another-cluster")
    result = register_broker(image, request, cluster_id=CLUSTER_ID, sessions=LiveSessions(),
                             now=0.0)
    assert result.response.error_code == Errors.INCONSISTENT_CLUSTER_ID.code


def test_another_incarnation_with_a_live_session_is_a_duplicate_registration() -> None:
    image = cluster(1)
    result = register_broker(image, registration_request(1, generation=1),
                             cluster_id=CLUSTER_ID, sessions=LiveSessions(), now=0.0)
    assert result.records == ()
    assert result.response.error_code == Errors.DUPLICATE_BROKER_REGISTRATION.code
    assert "broker id 1" in (result.response.error_message or "")


def test_another_incarnation_succeeds_once_the_old_session_expired() -> None:
    image = cluster(1)
    old_epoch = registration_of(image, 1).broker_epoch
    tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=0.0)
    tracker.record_contact(1, old_epoch, now=10.0)
    request = registration_request(1, generation=1)
    refused = register_broker(image, request, cluster_id=CLUSTER_ID, sessions=tracker, now=15.0)
    assert refused.response.error_code == Errors.DUPLICATE_BROKER_REGISTRATION.code
    accepted = register_broker(image, request, cluster_id=CLUSTER_ID, sessions=tracker, now=19.5)
    assert accepted.response.error_code == 0
    registration = registration_of(commit(image, accepted), 1)
    assert registration.incarnation_id == incarnation(1, 1)
    assert registration.broker_epoch == image.offset + 1 and registration.fenced


def test_the_same_incarnation_registers_again_with_a_new_epoch() -> None:
    image = cluster(1)
    result = register_broker(image, registration_request(1), cluster_id=CLUSTER_ID,
                             sessions=LiveSessions(), now=0.0)
    assert result.response.error_code == 0
    assert result.response.broker_epoch == image.offset + 1
    assert registration_of(commit(image, result), 1).broker_epoch == image.offset + 1


def test_a_new_incarnation_leaves_the_isrs_and_leadership_of_the_old_one() -> None:
    image = with_topic(cluster(1, 2, 3),
                       partition(0, (1, 2, 3)), partition(1, (2, 1)), partition(2, (1,)))
    result = register_broker(image, registration_request(1, generation=1),
                             cluster_id=CLUSTER_ID, sessions=NoSessions(), now=0.0)
    assert isinstance(result.records[0], RegisterBrokerRecord)
    assert result.response.broker_epoch == image.offset + 1
    after = commit(image, result)
    assert (state(after, 0).isr, state(after, 0).leader) == ((2, 3), 2)
    assert (state(after, 1).isr, state(after, 1).leader) == ((2,), 2)
    assert (state(after, 2).isr, state(after, 2).leader) == ((1,), NO_LEADER)
    # the same incarnation again changes no partition
    same = register_broker(after, registration_request(1, generation=1),
                           cluster_id=CLUSTER_ID, sessions=LiveSessions(), now=0.0)
    assert [type(r) for r in same.records] == [RegisterBrokerRecord]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"incarnation_id": "not-a-uuid"}, "not a non-zero uuid"),
        ({"incarnation_id": str(uuid.UUID(int=0))}, "not a non-zero uuid"),
        ({"listeners": (BrokerRegistrationListener(name="A", host="h", port=1,
                                                   security_protocol=0),
                        BrokerRegistrationListener(name="A", host="h", port=2,
                                                   security_protocol=0))},
         "listener name 'A' appears more than once"),
        ({"listeners": (BrokerRegistrationListener(name="A", host="h", port=1,
                                                   security_protocol=9),)},
         "unknown security protocol 9"),
        ({"features": (BrokerRegistrationFeature(name="f", min_supported_version=3,
                                                 max_supported_version=2),)},
         "min supported version 3 above max 2"),
        ({"features": (BrokerRegistrationFeature(name="f", min_supported_version=1,
                                                 max_supported_version=2),) * 2},
         "feature 'f' appears more than once"),
    ],
)
def test_malformed_registrations_are_invalid_requests(
    fields: dict[str, Any], message: str
) -> None:
    result = register_broker(MetadataImage.EMPTY, registration_request(1, **fields),
                             cluster_id=CLUSTER_ID, sessions=NoSessions(), now=0.0)
    assert result.records == ()
    assert result.response.error_code == Errors.INVALID_REQUEST.code
    assert message in (result.response.error_message or "")


# ------------------------------------------------------------------ broker_heartbeat


def test_a_heartbeat_from_an_unknown_broker_is_not_registered() -> None:
    result = broker_heartbeat(cluster(1), BrokerHeartbeatRequest(broker_id=9, broker_epoch=0))
    assert result.records == ()
    assert result.response.error_code == Errors.BROKER_ID_NOT_REGISTERED.code == 102
    assert "9" in (result.response.error_message or "")


def test_a_heartbeat_with_another_epoch_is_stale() -> None:
    image = cluster(1)
    epoch = registration_of(image, 1).broker_epoch
    result = broker_heartbeat(image, BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch + 1))
    assert result.records == ()
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
    assert f"Expected broker epoch {epoch}" in (result.response.error_message or "")


def test_a_fenced_broker_is_unfenced_once_caught_up_to_its_registration() -> None:
    image = cluster(1, 2, fenced=(2,))
    epoch = registration_of(image, 2).broker_epoch
    behind = broker_heartbeat(image, heartbeat(image, 2, current_metadata_offset=epoch - 1))
    assert behind.records == ()
    assert behind.response.is_fenced and not behind.response.is_caught_up
    assert not behind.response.should_shut_down
    caught_up = broker_heartbeat(image, heartbeat(image, 2, current_metadata_offset=epoch))
    assert caught_up.records == (
        BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=epoch, fenced=-1),
    )
    assert caught_up.response.is_caught_up and not caught_up.response.is_fenced
    assert not registration_of(commit(image, caught_up), 2).fenced


def test_want_fence_keeps_a_caught_up_broker_fenced() -> None:
    image = cluster(1, fenced=(1,))
    result = broker_heartbeat(image, heartbeat(image, 1, want_fence=True))
    assert result.records == ()
    assert result.response.is_fenced and result.response.is_caught_up


def test_a_steady_heartbeat_writes_nothing() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)))
    result = broker_heartbeat(image, heartbeat(image, 1))
    assert result.records == ()
    assert not result.response.is_fenced and not result.response.should_shut_down


def test_unfencing_elects_the_broker_where_a_partition_has_no_leader() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2), isr=(1,)),
                       partition(1, (2, 1), isr=(2,)))
    image = commit(image, fence_broker(image, 1))
    image = commit(image, fence_broker(image, 2))
    assert state(image, 0).leader == state(image, 1).leader == NO_LEADER
    assert state(image, 0).isr == (1,) and state(image, 1).isr == (2,)
    result = broker_heartbeat(image, heartbeat(image, 1))
    changes = [r for r in result.records if isinstance(r, PartitionChangeRecord)]
    assert [(c.partition_id, c.leader) for c in changes] == [(0, 1)]
    after = commit(image, result)
    assert state(after, 0).leader == 1 and state(after, 0).leader_epoch == 2
    assert state(after, 1).leader == NO_LEADER  # 2 is still fenced


def test_an_unfenced_broker_that_wants_fencing_is_fenced() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)))
    result = broker_heartbeat(image, heartbeat(image, 1, want_fence=True))
    assert result.response.is_fenced and not result.response.should_shut_down
    after = commit(image, result)
    assert registration_of(after, 1).fenced
    assert (state(after, 0).isr, state(after, 0).leader) == ((2,), 2)


def test_want_fence_and_shut_down_together_shut_down_now() -> None:
    image = cluster(1, 2)
    result = broker_heartbeat(image, heartbeat(image, 1, want_fence=True, want_shut_down=True))
    assert result.response.should_shut_down and result.response.is_fenced
    assert registration_of(commit(image, result), 1).fenced


def test_controlled_shutdown_moves_leadership_away_then_lets_the_broker_go() -> None:
    image = with_topic(
        cluster(1, 2, 3),
        partition(0, (1, 2, 3)),             # led by 1: 2 takes over
        partition(1, (1, 3), isr=(1, 3)),    # led by 1: 3 takes over
        partition(2, (1,)),                  # 1 is the only replica: no leader
        partition(3, (2, 1)),                # follower: leaves the ISR
    )
    first = broker_heartbeat(image, heartbeat(image, 1, want_shut_down=True))
    assert not first.response.should_shut_down and not first.response.is_fenced
    epoch = registration_of(image, 1).broker_epoch
    assert first.records[0] == BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=epoch, in_controlled_shutdown=1)
    shutting = commit(image, first)
    assert registration_of(shutting, 1).in_controlled_shutdown
    assert not registration_of(shutting, 1).fenced
    assert (state(shutting, 0).leader, state(shutting, 0).isr) == (2, (2, 3))
    assert (state(shutting, 1).leader, state(shutting, 1).isr) == (3, (3,))
    assert (state(shutting, 2).leader, state(shutting, 2).isr) == (NO_LEADER, (1,))
    assert (state(shutting, 3).leader, state(shutting, 3).isr) == (2, (2,))
    assert not any(state(shutting, p).leader == 1 for p in range(4))
    assert state(shutting, 0).leader_epoch == 1 and state(shutting, 3).leader_epoch == 0

    second = broker_heartbeat(shutting, heartbeat(shutting, 1, want_shut_down=True))
    assert second.response.should_shut_down and second.response.is_fenced
    done = commit(shutting, second)
    assert registration_of(done, 1).fenced
    assert state(done, 2).isr == (1,)  # the last ISR member stays


def test_a_broker_in_controlled_shutdown_that_still_leads_waits() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)))
    epoch = registration_of(image, 1).broker_epoch
    # in controlled shutdown, but (say, a record written before) still the leader of partition 0
    image = apply(image, BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch,
                                                        in_controlled_shutdown=1))
    result = broker_heartbeat(image, heartbeat(image, 1, want_shut_down=True))
    assert result.records == ()
    assert not result.response.should_shut_down and not result.response.is_fenced


def test_a_broker_that_leads_nothing_shuts_down_at_once() -> None:
    image = with_topic(cluster(1, 2), partition(0, (2, 1)))
    result = broker_heartbeat(image, heartbeat(image, 1, want_shut_down=True))
    assert result.response.should_shut_down and result.response.is_fenced
    after = commit(image, result)
    assert registration_of(after, 1).fenced
    assert state(after, 0).isr == (2,)


def test_a_fenced_broker_that_wants_to_shut_down_may_at_once() -> None:
    image = cluster(1, fenced=(1,))
    result = broker_heartbeat(image, heartbeat(image, 1, want_shut_down=True))
    # only the mark of a clean shutdown, which lets its next incarnation register at once
    epoch = registration_of(image, 1).broker_epoch
    assert result.records == (BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=epoch, in_controlled_shutdown=1),)
    assert result.response.should_shut_down and result.response.is_fenced


def test_a_broker_fenced_after_controlled_shutdown_is_not_unfenced_again() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)))
    image = commit(image, broker_heartbeat(image, heartbeat(image, 1, want_shut_down=True)))
    image = commit(image, broker_heartbeat(image, heartbeat(image, 1, want_shut_down=True)))
    assert registration_of(image, 1).fenced
    result = broker_heartbeat(image, heartbeat(image, 1))
    assert result.records == () and result.response.is_fenced


def test_a_leader_in_controlled_shutdown_is_not_elected() -> None:
    image = with_topic(cluster(1, 2, 3), partition(0, (1, 2, 3)))
    epoch = registration_of(image, 2).broker_epoch
    image = apply(image, BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=epoch,
                                                        in_controlled_shutdown=1))
    after = commit(image, fence_broker(image, 1))
    assert state(after, 0).leader == 3


# ------------------------------------------------------------------ fence_broker


def test_fencing_removes_the_broker_from_every_isr_and_elects_new_leaders() -> None:
    image = with_topic(
        cluster(1, 2, 3),
        partition(0, (1, 2, 3)),
        partition(1, (2, 1, 3), isr=(2, 1)),
        partition(2, (1,)),
        partition(3, (2, 3)),
    )
    image = with_topic(image, partition(0, (3, 1), topic_id=OTHER_TOPIC_ID),
                       name="payments", topic_id=OTHER_TOPIC_ID)
    result = fence_broker(image, 1)
    assert result.records[-1] == BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=registration_of(image, 1).broker_epoch, fenced=1)
    changed = {(r.topic_id, r.partition_id) for r in result.records
               if isinstance(r, PartitionChangeRecord)}
    assert (image.topics.by_name["orders"].topic_id, 3) not in changed
    after = commit(image, result)
    assert registration_of(after, 1).fenced
    assert (state(after, 0).isr, state(after, 0).leader) == ((2, 3), 2)
    assert (state(after, 1).isr, state(after, 1).leader) == ((2,), 2)
    assert (state(after, 2).isr, state(after, 2).leader) == ((1,), NO_LEADER)
    assert (state(after, 3).isr, state(after, 3).leader) == ((2, 3), 2)
    other = state(after, 0, topic_id=OTHER_TOPIC_ID)
    assert (other.isr, other.leader) == ((3,), 3)
    for topic in after.topics:
        for p in topic.partitions.values():
            assert p.leader != 1
            assert 1 not in p.isr or p.isr == (1,)


def test_fencing_elects_only_active_brokers() -> None:
    image = with_topic(cluster(1, 2, 3), partition(0, (1, 2, 3)))
    image = commit(image, fence_broker(image, 2))
    assert state(image, 0).isr == (1, 3)
    after = commit(image, fence_broker(image, 1))
    assert (state(after, 0).isr, state(after, 0).leader) == ((3,), 3)
    last = commit(after, fence_broker(after, 3))
    assert (state(last, 0).isr, state(last, 0).leader) == ((3,), NO_LEADER)


def test_fencing_leaves_inactive_chunks_alone() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)), chunk(0, 0, 99, (1, 2)))
    result = fence_broker(image, 1)
    assert not any(type(r).__name__.startswith("Chunk") for r in result.records)
    after = commit(image, result)
    topic = after.topics.get_by_name("orders")
    assert topic is not None
    stored = topic.chunk(0, 0)
    assert stored is not None and stored.replicas == (1, 2) and stored.isr == (1, 2)


def test_fencing_an_unknown_or_fenced_broker_writes_nothing() -> None:
    image = cluster(1, 2, fenced=(2,))
    assert fence_broker(image, 9).records == ()
    assert fence_broker(image, 2).records == ()


def test_fenced_brokers_are_no_longer_expired() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)))
    tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=0.0)
    expired = tracker.expired(10.0, image)
    assert expired == [1, 2]
    for broker_id in expired:
        image = commit(image, fence_broker(image, broker_id))
    assert tracker.expired(20.0, image) == []
    assert (state(image, 0).isr, state(image, 0).leader) == ((2,), NO_LEADER)


# ------------------------------------------------------------------ unregister_broker


def test_unregistering_an_unknown_broker_is_refused() -> None:
    result = unregister_broker(cluster(1), UnregisterBrokerRequest(broker_id=4))
    assert result.records == ()
    assert result.response.error_code == Errors.BROKER_ID_NOT_REGISTERED.code
    assert result.response.error_message == "Broker ID 4 is not currently registered"


def test_unregistering_leaves_the_isrs_then_removes_the_registration() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)), partition(1, (2, 1)))
    epoch = registration_of(image, 1).broker_epoch
    result = unregister_broker(image, UnregisterBrokerRequest(broker_id=1))
    assert result.response.error_code == 0
    assert result.records[-1] == UnregisterBrokerRecord(broker_id=1, broker_epoch=epoch)
    after = commit(image, result)
    assert after.brokers.get(1) is None
    assert (state(after, 0).isr, state(after, 0).leader) == ((2,), 2)
    assert state(after, 1).isr == (2,)
    assert state(after, 0).replicas == (1, 2)  # replicas move by reassignment only
