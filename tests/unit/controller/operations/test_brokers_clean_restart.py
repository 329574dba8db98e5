"""A broker that finished a controlled shutdown registers its next incarnation at once:
every way a heartbeat says "shut down now" leaves the mark in the image, and register_broker
reads it instead of waiting out the old session."""

from __future__ import annotations

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.brokers import (
    broker_heartbeat,
    fence_broker,
    register_broker,
    shut_down_cleanly,
)
from chunkraft.error_codes import Errors
from tests.support.controller import commit
from tests.unit.controller.operations.cluster_builders import (
    CLUSTER_ID,
    LiveSessions,
    cluster,
    heartbeat,
    incarnation,
    partition,
    registration_of,
    registration_request,
    with_topic,
)


def _shut_down(image: MetadataImage, broker_id: int, **fields: bool) -> MetadataImage:
    """Heartbeats want_shut_down until the controller says should_shut_down (bounded)."""
    for _ in range(5):
        result = broker_heartbeat(image, heartbeat(image, broker_id, want_shut_down=True,
                                                   **fields))
        image = commit(image, result)
        if result.response.should_shut_down:
            return image
    raise AssertionError("the controller never let the broker go")


@pytest.mark.parametrize("case", ["leader", "follower", "fenced", "want_fence"])
def test_every_shutdown_now_leaves_the_registration_shut_down_cleanly(case: str) -> None:
    image = with_topic(cluster(1, 2, 3, fenced=(1,) if case == "fenced" else ()),
                       partition(0, (1, 2, 3) if case == "leader" else (2, 1, 3)))
    done = _shut_down(image, 1, **({"want_fence": True} if case == "want_fence" else {}))
    registration = registration_of(done, 1)
    assert registration.fenced and registration.in_controlled_shutdown
    assert shut_down_cleanly(registration)


def test_a_cleanly_stopped_broker_registers_again_at_once_despite_a_live_session() -> None:
    image = with_topic(cluster(1, 2, 3), partition(0, (1, 2, 3)))
    done = _shut_down(image, 1)
    # LiveSessions: the old incarnation's session has not expired (it heartbeat just now).
    result = register_broker(done, registration_request(1, generation=1),
                             cluster_id=CLUSTER_ID, sessions=LiveSessions(), now=0.0)
    assert result.response.error_code == 0
    assert result.response.broker_epoch == done.offset + 1
    after = commit(done, result)
    registration = registration_of(after, 1)
    assert registration.incarnation_id == incarnation(1, 1)
    assert registration.broker_epoch == done.offset + 1
    # The new incarnation starts fenced and no longer in controlled shutdown, so its heartbeats
    # unfence it once its metadata holds the registration.
    assert registration.fenced and not registration.in_controlled_shutdown
    beat = broker_heartbeat(after, heartbeat(after, 1))
    assert not beat.response.is_fenced
    assert not registration_of(commit(after, beat), 1).fenced


def test_a_broker_still_in_controlled_shutdown_is_a_duplicate() -> None:
    image = with_topic(cluster(1, 2), partition(0, (1, 2)))
    first = broker_heartbeat(image, heartbeat(image, 1, want_shut_down=True))
    assert not first.response.should_shut_down
    shutting = commit(image, first)  # in controlled shutdown, not yet fenced: still serving
    assert not shut_down_cleanly(registration_of(shutting, 1))
    result = register_broker(shutting, registration_request(1, generation=1),
                             cluster_id=CLUSTER_ID, sessions=LiveSessions(), now=0.0)
    assert result.response.error_code == Errors.DUPLICATE_BROKER_REGISTRATION.code


def test_a_broker_fenced_by_session_expiry_waits_for_its_session() -> None:
    # Fenced without a controlled shutdown (its heartbeats stopped, or it asked to be fenced):
    # its process may still be alive, so only an expired session lets another incarnation in.
    image = with_topic(cluster(1, 2), partition(0, (1, 2)))
    fenced = commit(image, fence_broker(image, 1))
    assert not shut_down_cleanly(registration_of(fenced, 1))
    result = register_broker(fenced, registration_request(1, generation=1),
                             cluster_id=CLUSTER_ID, sessions=LiveSessions(), now=0.0)
    assert result.response.error_code == Errors.DUPLICATE_BROKER_REGISTRATION.code
