from __future__ import annotations

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.heartbeats import (
    DEFAULT_SESSION_TIMEOUT,
    BrokerHeartbeatTracker,
    BrokerSessions,
)
from tests.unit.controller.operations.cluster_builders import (
    cluster,
    register,
    registration_of,
)


def epoch_of(broker_id: int, image: MetadataImage) -> int:
    return registration_of(image, broker_id).broker_epoch


def test_default_session_timeout_is_kafkas_nine_seconds() -> None:
    assert DEFAULT_SESSION_TIMEOUT == 9.0
    assert BrokerHeartbeatTracker().session_timeout == 9.0


def test_a_session_is_valid_for_the_timeout_after_the_last_contact() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout=9.0)
    tracker.record_contact(1, 5, now=100.0)
    assert tracker.last_contact(1, 5) == 100.0
    assert tracker.has_valid_session(1, 5, now=109.0)
    assert not tracker.has_valid_session(1, 5, now=109.5)
    tracker.record_contact(1, 5, now=108.0)
    assert tracker.has_valid_session(1, 5, now=116.0)


def test_an_older_contact_time_is_ignored() -> None:
    tracker = BrokerHeartbeatTracker()
    tracker.record_contact(1, 5, now=50.0)
    tracker.record_contact(1, 5, now=40.0)
    assert tracker.last_contact(1, 5) == 50.0


def test_contact_for_an_old_epoch_does_not_keep_a_new_registration_alive() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=0.0)
    tracker.record_contact(1, 5, now=20.0)
    assert tracker.has_valid_session(1, 5, now=25.0)
    assert not tracker.has_valid_session(1, 8, now=25.0)
    assert tracker.last_contact(1, 8) is None


def test_a_broker_never_heard_from_counts_from_the_session_period_start() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=10.0)
    assert tracker.has_valid_session(3, 0, now=19.0)
    assert not tracker.has_valid_session(3, 0, now=19.1)


def test_expired_names_only_unfenced_brokers_whose_session_ran_out() -> None:
    image = cluster(1, 2, 3, 4, fenced=(4,))
    tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=0.0)
    tracker.record_contact(2, epoch_of(2, image), now=5.0)
    tracker.record_contact(3, epoch_of(3, image), now=1.0)
    assert tracker.expired(8.0, image) == []
    assert tracker.expired(10.5, image) == [1, 3]  # 4 is fenced already
    assert tracker.expired(14.5, image) == [1, 2, 3]


def test_reset_gives_every_broker_a_fresh_session() -> None:
    image = cluster(1, 2)
    tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=0.0)
    tracker.record_contact(1, epoch_of(1, image), now=1.0)
    assert tracker.expired(100.0, image) == [1, 2]
    tracker.reset(now=100.0)
    assert tracker.last_contact(1, epoch_of(1, image)) is None
    assert tracker.expired(109.0, image) == []
    assert tracker.expired(109.5, image) == [1, 2]


def test_a_contact_from_before_a_reset_does_not_extend_the_new_session() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=0.0)
    tracker.reset(now=100.0)
    tracker.record_contact(1, 0, now=95.0)  # arrived late, timed before the reset
    assert tracker.session_start(1, 0) == 100.0


def test_forget_drops_every_session_of_a_broker() -> None:
    tracker = BrokerHeartbeatTracker(now=0.0)
    tracker.record_contact(1, 3, now=5.0)
    tracker.record_contact(1, 7, now=6.0)
    tracker.record_contact(2, 4, now=6.0)
    tracker.forget(1)
    assert tracker.last_contact(1, 3) is None and tracker.last_contact(1, 7) is None
    assert tracker.last_contact(2, 4) == 6.0


def test_expired_drops_contact_of_replaced_registrations() -> None:
    image = cluster(1)
    old_epoch = epoch_of(1, image)
    tracker = BrokerHeartbeatTracker(now=0.0)
    tracker.record_contact(1, old_epoch, now=1.0)
    image = register(image, 1, generation=1)
    new_epoch = epoch_of(1, image)
    tracker.record_contact(1, new_epoch, now=2.0)
    tracker.expired(3.0, image)
    assert tracker.last_contact(1, old_epoch) is None
    assert tracker.last_contact(1, new_epoch) == 2.0


def test_the_tracker_is_a_session_view() -> None:
    sessions: BrokerSessions = BrokerHeartbeatTracker()
    assert sessions.has_valid_session(1, 0, now=0.0)


@pytest.mark.parametrize("timeout", [0.0, -1.0])
def test_a_session_timeout_must_be_positive(timeout: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        BrokerHeartbeatTracker(session_timeout=timeout)
