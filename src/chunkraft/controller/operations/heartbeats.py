"""BrokerHeartbeatTracker: the active controller's memory of when each broker last made contact.

Like Kafka's BrokerHeartbeatManager this is soft, leader-local state: it is never replicated, so
heartbeats cost no log writes. A controller that gains leadership calls :meth:`reset`, which gives
every broker a fresh session starting then (it cannot know when brokers last reached the previous
leader), so a failover delays fencing by up to one session timeout but never fences a live
broker at once.

Sessions belong to a registration: contact is recorded for ``(broker id, broker epoch)``, so
heartbeats that a zombie process still sends with an old epoch keep no newer registration alive,
and a new registration of the id starts its own session.

Time is a monotonic number of seconds passed in by the caller (``time.monotonic()`` in the
controller, plain numbers in tests), never read here.
"""

from __future__ import annotations

from typing import Protocol

from chunkraft.controller.image import MetadataImage

__all__ = ["DEFAULT_SESSION_TIMEOUT", "BrokerHeartbeatTracker", "BrokerSessions"]

DEFAULT_SESSION_TIMEOUT = 9.0
"""Seconds without contact after which a broker's session expires (Kafka's
``broker.session.timeout.ms`` default); brokers heartbeat every 2 s (their own setting)."""


class BrokerSessions(Protocol):
    """The view of broker liveness that register_broker needs."""

    def has_valid_session(self, broker_id: int, broker_epoch: int, now: float) -> bool:
        """True if the registration ``(broker_id, broker_epoch)`` made contact within the
        session timeout before ``now``."""
        ...


class BrokerHeartbeatTracker:
    """Last contact per broker registration, session expiry, and reset on gaining leadership.

    The caller records contact for a registration that succeeded (with the epoch it returned)
    and for every heartbeat whose broker epoch is current; :meth:`expired` then names the
    unfenced brokers to fence with ``fence_broker``. A registration with no recorded contact
    counts from the start of the current session period (construction or :meth:`reset`).

    Not thread-safe: it is meant for the controller's single asyncio thread; a caller on several
    threads must hold one lock around every call.
    """

    def __init__(self, session_timeout: float = DEFAULT_SESSION_TIMEOUT, now: float = 0.0) -> None:
        if session_timeout <= 0:
            raise ValueError(f"session_timeout must be positive, got {session_timeout}")
        self.session_timeout = session_timeout
        self._session_start = now
        self._contacts: dict[tuple[int, int], float] = {}

    def reset(self, now: float) -> None:
        """Forgets all contact and starts every broker's session at ``now``: call on gaining
        leadership (and the tracker is of no use while not the leader)."""
        self._contacts.clear()
        self._session_start = now

    def record_contact(self, broker_id: int, broker_epoch: int, now: float) -> None:
        """Broker ``broker_id`` with registration ``broker_epoch`` made contact at ``now``.

        Time never goes back for a registration: an older ``now`` than the recorded one is
        ignored.
        """
        key = (broker_id, broker_epoch)
        previous = self._contacts.get(key)
        if previous is None or now > previous:
            self._contacts[key] = now

    def forget(self, broker_id: int) -> None:
        """Drops every session of ``broker_id`` (after it unregistered)."""
        for key in [key for key in self._contacts if key[0] == broker_id]:
            del self._contacts[key]

    def last_contact(self, broker_id: int, broker_epoch: int) -> float | None:
        """When the registration last made contact, or None if never since the last reset."""
        return self._contacts.get((broker_id, broker_epoch))

    def session_start(self, broker_id: int, broker_epoch: int) -> float:
        """The time the registration's session counts from: its last contact, or the start of
        the session period if it has none."""
        last = self._contacts.get((broker_id, broker_epoch))
        return self._session_start if last is None else max(last, self._session_start)

    def has_valid_session(self, broker_id: int, broker_epoch: int, now: float) -> bool:
        """True if the registration's session has not expired at ``now``."""
        return now - self.session_start(broker_id, broker_epoch) <= self.session_timeout

    def expired(self, now: float, image: MetadataImage) -> list[int]:
        """Ids, ascending, of the brokers unfenced in ``image`` whose session expired at
        ``now``; the caller fences each with ``fence_broker``.

        Also drops contact kept for registrations older than the ones in ``image`` (a broker
        that registered again), so memory stays bounded by the registrations; :meth:`forget`
        drops an unregistered broker's.
        """
        registrations = image.brokers.registrations
        stale = [
            key for key in self._contacts
            if (current := registrations.get(key[0])) is not None
            and key[1] < current.broker_epoch
        ]
        for key in stale:
            del self._contacts[key]
        return [
            registration.broker_id
            for registration in image.brokers
            if not registration.fenced
            and not self.has_valid_session(registration.broker_id, registration.broker_epoch, now)
        ]
