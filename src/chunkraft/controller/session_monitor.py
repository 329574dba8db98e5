"""Fences brokers whose heartbeats stopped: the leader's periodic session check.

Sessions live in the leader's memory only (:class:`BrokerHeartbeatTracker`), as in Kafka: a new
leader gives every broker a fresh session, so a failover never fences a healthy broker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.brokers import fence_broker
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException
from chunkraft.protocol.base import Message

__all__ = ["FenceBrokerResponse", "fence_operation", "run_session_monitor"]

logger = logging.getLogger(__name__)


class FenceBrokerResponse(Message):
    """What fencing a broker whose session expired answers (kept with its records)."""

    broker_id: int
    fenced: bool


def fence_operation(broker_id: int) -> Callable[[MetadataImage], ControllerResult[
        FenceBrokerResponse]]:
    def operation(image: MetadataImage) -> ControllerResult[FenceBrokerResponse]:
        result = fence_broker(image, broker_id)
        return ControllerResult(result.records, FenceBrokerResponse(
            broker_id=broker_id, fenced=bool(result.records)), atomic=result.atomic)

    return operation


async def run_session_monitor(
    controller: QuorumController,
    tracker: BrokerHeartbeatTracker,
    *,
    interval: float = 0.5,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """Runs until cancelled: on the leader, fences every broker whose session expired."""
    was_leader = False
    while True:
        await asyncio.sleep(interval)
        leader = controller.is_leader()
        now = monotonic()
        if leader and not was_leader:
            tracker.reset(now)  # every broker gets a full session with the new leader
        was_leader = leader
        if not leader:
            continue
        for broker_id in tracker.expired(now, controller.image):
            try:
                await controller.write(fence_operation(broker_id), FenceBrokerResponse,
                                       offload=True)
                logger.warning("broker %d fenced: no heartbeat for %.1f s", broker_id,
                               tracker.session_timeout)
            except ApiException as error:
                logger.info("fencing broker %d did not commit: %s", broker_id, error)
                break
