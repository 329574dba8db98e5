"""BrokerLifecycle: registration, heartbeats, fencing and controlled shutdown of one broker.

Kafka's ``BrokerLifecycleManager`` over the controllers' RPC surface:

1. Register (``/controller/v1/broker-registration``) with a new incarnation id per process
   start, the HTTP listener and the rack; the answer's ``broker_epoch`` names this
   registration. DUPLICATE_BROKER_REGISTRATION (the previous process's session has not expired
   yet, after a kill -9) is retried every heartbeat interval until it has.
2. Heartbeat every ``broker.heartbeat.interval.ms`` with the metadata offset the broker has
   applied. The controller unfences the broker once that offset reaches its registration, and
   fences it when heartbeats stop. STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED (an operator
   unregistered it, or it was fenced at the end of a controlled shutdown) -> register again.
3. Controlled shutdown (SIGTERM): heartbeats say ``want_shut_down`` until the controller answers
   ``should_shut_down`` (it has moved every leadership away and fenced the broker), or until the
   timeout; then the process stops its tasks and exits.

Controller failures are the channel's concern (it retries on the other controllers), so a lost
controller, the leader included, costs at most one late heartbeat.

In the broker process this runs on a thread and event loop of its own
(:class:`chunkraft.broker_agent.lifecycle_thread.LifecycleThread`), so produce, fetch and disk
work on the data plane's loop never delay a heartbeat; ``on_change`` is how that wrapper learns
of each new answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

from chunkraft.broker_agent.controller_channel import ControllerChannel, ControllerRpcError
from chunkraft.error_codes import Errors
from chunkraft.protocol.brokers import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationListener,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from chunkraft.records.uuids import kafka_uuid_str

__all__ = ["BrokerLifecycle", "security_protocol_of"]

logger = logging.getLogger(__name__)

_REREGISTER = frozenset({Errors.STALE_BROKER_EPOCH.code, Errors.BROKER_ID_NOT_REGISTERED.code})


def security_protocol_of(scheme: str) -> int:
    """Kafka's protocol id of a listener scheme: 0 PLAINTEXT for http, 1 SSL for https."""
    return 1 if scheme.lower() == "https" else 0


class BrokerLifecycle:
    """One broker's standing with the controller; every method runs on one event loop (not
    thread-safe), its own thread's in the broker process (see the module docstring).

    ``metadata_offset`` says how far the broker has applied the metadata stream;
    ``cluster_id`` gives the cluster id text once known (None: not yet, registration waits);
    both may be called from this loop's thread, so they must only read. ``on_change`` (optional)
    is called on this loop after every answer that may have changed the state: registered,
    fenced or unfenced, shutdown allowed, one more heartbeat.
    State: :attr:`broker_epoch` (-1 until registered), :attr:`fenced`, :attr:`shutting_down`,
    :attr:`registered`, :attr:`unfenced`, :attr:`shut_down_allowed` (events of this loop).
    """

    def __init__(self, channel: ControllerChannel, *, node_id: int, host: str, port: int,
                 scheme: str = "http", rack: str | None = None,
                 cluster_id: Callable[[], str | None],
                 metadata_offset: Callable[[], int],
                 heartbeat_interval: float = 1.0,
                 kafka_listeners: tuple[BrokerRegistrationListener, ...] = ()) -> None:
        self.channel = channel
        self.kafka_listeners = kafka_listeners
        """The broker's Kafka-protocol listeners, registered after the HTTP one."""
        self.node_id = node_id
        self.listener = BrokerRegistrationListener(
            name=scheme.upper(), host=host, port=port,
            security_protocol=security_protocol_of(scheme))
        self.rack = rack
        self.cluster_id = cluster_id
        self.metadata_offset = metadata_offset
        self.heartbeat_interval = heartbeat_interval
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.previous_broker_epoch = -1
        self.fenced = True
        self.caught_up = False
        self.shutting_down = False
        self.want_fence = False
        """Set to ask the controller to fence this broker (it cannot serve, e.g. a bad disk)."""
        self.registered = asyncio.Event()
        self.unfenced = asyncio.Event()
        self.shut_down_allowed = asyncio.Event()
        self.heartbeats = 0
        self.heartbeat_failures = 0
        self.registrations = 0
        self.on_change: Callable[[], None] | None = None
        self._wake = asyncio.Event()

    async def run(self) -> None:
        """Registers, then heartbeats until the controller allows the shutdown or cancelled."""
        while not self.shut_down_allowed.is_set():
            self._wake.clear()
            registering = self.broker_epoch < 0
            if registering:
                await self._register()
            else:
                await self._heartbeat()
            if self.shut_down_allowed.is_set():
                return
            # A controlled shutdown polls quickly: the controller moves leaderships at once.
            interval = min(0.1, self.heartbeat_interval) if self.shutting_down else (
                self.heartbeat_interval)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    if self._awaiting_metadata():
                        await self._metadata_reaches_epoch()
                    elif not (registering and self.broker_epoch >= 0):
                        await self._wake.wait()
                    # else: just registered, metadata already there: heartbeat at once

    def _awaiting_metadata(self) -> bool:
        return (self.broker_epoch >= 0 and self.fenced and not self.shutting_down
                and self.metadata_offset() < self.broker_epoch)

    async def _metadata_reaches_epoch(self) -> None:
        # Just registered: the controller unfences once the applied metadata holds the
        # registration, so heartbeat as soon as it does rather than a whole interval later.
        while self.metadata_offset() < self.broker_epoch and not self._wake.is_set():
            await asyncio.sleep(0.01)

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # a listener's failure must not stop the heartbeats
                logger.exception("broker %d: the lifecycle listener failed", self.node_id)

    def wake(self) -> None:
        """Heartbeats now rather than at the end of the interval (e.g. ``want_fence`` was set)."""
        self._wake.set()

    def begin_shutdown(self) -> None:
        """Starts a controlled shutdown: the next heartbeats say ``want_shut_down`` until the
        controller allows it (:attr:`shut_down_allowed`); a broker never registered needs no
        permission and has it at once."""
        self.shutting_down = True
        if self.broker_epoch < 0:
            self.shut_down_allowed.set()
        self._wake.set()
        self._changed()

    async def controlled_shutdown(self, timeout: float) -> bool:
        """Asks the controller to let this broker go; whether it said so within ``timeout``.

        A broker never registered needs no permission; a fenced one gets it at its next
        heartbeat (it leads nothing)."""
        self.begin_shutdown()
        if self.shut_down_allowed.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.shut_down_allowed.wait()
        return self.shut_down_allowed.is_set()

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return await self.channel.call(
                path, body, retry_for=max(2.0, 3 * self.heartbeat_interval))
        except ControllerRpcError as error:
            self.heartbeat_failures += 1
            logger.warning("broker %d: %s failed: %s", self.node_id, path, error)
            return None

    async def _register(self) -> None:
        cluster_id = self.cluster_id()
        if cluster_id is None or self.shutting_down:
            return  # the metadata stream has not named the cluster yet
        request = BrokerRegistrationRequest(
            broker_id=self.node_id, cluster_id=cluster_id,
            incarnation_id=kafka_uuid_str(self.incarnation_id),
            listeners=(self.listener, *self.kafka_listeners),
            rack=self.rack, previous_broker_epoch=self.previous_broker_epoch)
        body = await self._call("/controller/v1/broker-registration",
                                request.model_dump(mode="json"))
        if body is None:
            return
        answer = BrokerRegistrationResponse.model_validate(body)
        if answer.error_code:
            logger.warning("broker %d: registration refused: %s %s", self.node_id,
                           Errors.for_code(answer.error_code).name, answer.error_message)
            return
        self.broker_epoch = answer.broker_epoch
        self.registrations += 1
        self.fenced = True
        self.unfenced.clear()
        self.registered.set()
        self._changed()
        logger.info("broker %d registered with epoch %d (incarnation %s)", self.node_id,
                    self.broker_epoch, kafka_uuid_str(self.incarnation_id))

    async def _heartbeat(self) -> None:
        request = BrokerHeartbeatRequest(
            broker_id=self.node_id, broker_epoch=self.broker_epoch,
            current_metadata_offset=self.metadata_offset(), want_fence=self.want_fence,
            want_shut_down=self.shutting_down)
        body = await self._call("/controller/v1/broker-heartbeat",
                                request.model_dump(mode="json"))
        if body is None:
            self._changed()  # the failure count moved
            return
        answer = BrokerHeartbeatResponse.model_validate(body)
        self.heartbeats += 1
        if answer.error_code in _REREGISTER:
            logger.warning("broker %d: heartbeat refused (%s): registering again", self.node_id,
                           Errors.for_code(answer.error_code).name)
            self.previous_broker_epoch = self.broker_epoch
            self.broker_epoch = -1
            self.fenced = True
            self.unfenced.clear()
            if self.shutting_down:
                self.shut_down_allowed.set()  # not registered: nothing to hand over
            self._changed()
            return
        if answer.error_code:
            logger.warning("broker %d: heartbeat error %s: %s", self.node_id,
                           Errors.for_code(answer.error_code).name, answer.error_message)
            return
        was_fenced, self.fenced = self.fenced, answer.is_fenced
        self.caught_up = answer.is_caught_up
        if was_fenced and not self.fenced:
            logger.info("broker %d unfenced (epoch %d)", self.node_id, self.broker_epoch)
            self.unfenced.set()
        elif self.fenced and not was_fenced:
            logger.warning("broker %d fenced by the controller", self.node_id)
            self.unfenced.clear()
        if answer.should_shut_down:
            self.shut_down_allowed.set()
        self._changed()
