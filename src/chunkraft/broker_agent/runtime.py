"""BrokerRuntime: everything one broker process runs, in one object the HTTP app can read.

Built once by :mod:`chunkraft.broker_agent.process` and kept in ``app.state.runtime``; its parts
live on the broker's main event loop (uvicorn's), so nothing here locks, except the heartbeats:
``lifecycle`` runs them on a thread and loop of its own and hands each answer back to the main
loop (:mod:`chunkraft.broker_agent.lifecycle_thread`). The data plane reads
``follower.image``, ``lifecycle``, ``replica_manager`` and ``producer_ids``; the process starts
and stops the tasks (:meth:`BrokerRuntime.start`, :meth:`BrokerRuntime.stop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from chunkraft.api.authentication import Authenticator
from chunkraft.broker_agent.config import BrokerConfig
from chunkraft.broker_agent.controller_channel import ControllerChannel
from chunkraft.broker_agent.lifecycle_thread import LifecycleThread
from chunkraft.broker_agent.metadata_follower import MetadataFollower
from chunkraft.security.authorizer import Authorizer

__all__ = ["BrokerRuntime"]

logger = logging.getLogger(__name__)


@dataclass
class BrokerRuntime:
    """One broker agent: its configuration and the running parts; see the module docstring.

    ``replica_manager`` is the ReplicaManager (a listener of ``follower``), ``producer_ids`` the
    ProducerIdManager, ``logs`` the LogManager and ``peers`` the client to other brokers; they
    are typed loosely here because the process wires whichever implementation it has.
    """

    config: BrokerConfig
    controller: ControllerChannel
    follower: MetadataFollower
    lifecycle: LifecycleThread
    replica_manager: Any
    producer_ids: Any
    logs: Any = None
    peers: Any = None
    authenticator: Authenticator | None = None
    authorizer: Authorizer | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    stopped: bool = False

    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def cluster_id(self) -> uuid.UUID | str:
        """The cluster id (configured, or learnt from the controllers; "" before either)."""
        known = self.follower.cluster_id or self.config.cluster_id
        return known if known is not None else ""

    async def start(self) -> None:
        """Starts the replica manager, the metadata follower and the lifecycle tasks."""
        start = getattr(self.replica_manager, "start", None)
        if start is not None:
            await start()
        self.tasks.append(asyncio.create_task(self.follower.run(), name="metadata-follower"))
        self.tasks.append(asyncio.create_task(self.lifecycle.run(), name="broker-lifecycle"))

    async def controlled_shutdown(self) -> bool:
        """Asks the controller to move leadership away (heartbeats want_shut_down) and waits up
        to ``controlled.shutdown.timeout.ms``; whether it allowed the shutdown in time."""
        timeout = self.config.controlled_shutdown_timeout_ms / 1000
        allowed = await self.lifecycle.controlled_shutdown(timeout)
        if allowed:
            logger.info("broker %d: controlled shutdown allowed by the controller",
                        self.node_id)
        else:
            logger.warning("broker %d: the controller did not allow the shutdown within %.1f "
                           "s; stopping anyway", self.node_id, timeout)
        return allowed

    async def stop(self) -> None:
        """Stops every task, the replica manager, flushes and closes the logs; idempotent."""
        if self.stopped:
            return
        self.stopped = True
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        stop = getattr(self.replica_manager, "stop", None)
        if stop is not None:
            try:
                await stop()
            except Exception:
                logger.exception("broker %d: stopping the replica manager failed", self.node_id)
        if self.logs is not None:
            try:
                self.logs.close_all()  # flushes every log
            except Exception:
                logger.exception("broker %d: closing the logs failed", self.node_id)
        if self.peers is not None:
            close = getattr(self.peers, "close", None) or getattr(self.peers, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    result = close()
                    if asyncio.iscoroutine(result):
                        await result
        await self.controller.aclose()
