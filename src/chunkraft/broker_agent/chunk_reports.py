"""ChunkReports: ChunkReplicaState reports to the controller (KIP-1114), sent until accepted.

A replica that finished copying an inactive chunk reports IN_SYNC; one whose chunk data
retention removed entirely reports DROPPED (automatic chunk deletion). Reports are kept as a
set and sent in batches by one background task; a report the image no longer needs (the chunk
is gone, or this broker is already in its ISR) is dropped unsent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from chunkraft.broker_agent.background import logged
from chunkraft.broker_agent.partition_registry import PartitionRegistry
from chunkraft.broker_agent.peer_client import ControllerChannelLike
from chunkraft.error_codes import Errors
from chunkraft.protocol.chunks import (
    ChunkReplicaState,
    ChunkReplicaStateItem,
    ChunkReplicaStateRequest,
    ChunkReplicaStateResponse,
)

__all__ = ["CHUNK_REPLICA_STATE_PATH", "ChunkReports", "ReportKey"]

log = logging.getLogger(__name__)

CHUNK_REPLICA_STATE_PATH = "/controller/v1/chunk-replica-state"

ReportKey = tuple[str, int, int, ChunkReplicaState]
"""(topic, partition, chunk start offset, state) of a ChunkReplicaState report to send."""

_DONE_CODES = frozenset({0, Errors.UNKNOWN_CHUNK.code, Errors.NO_REASSIGNMENT_IN_PROGRESS.code})


class ChunkReports:
    """Pending ChunkReplicaState reports and the task that sends them.

    Not thread-safe: used on the broker's main event loop; :attr:`task` is cancelled by the
    ReplicaManager's stop (and :attr:`stopped` set).
    """

    def __init__(self, registry: PartitionRegistry, controller: ControllerChannelLike,
                 broker_epoch: Callable[[], int], backoff_s: float) -> None:
        self.registry = registry
        self.controller = controller
        self.broker_epoch = broker_epoch
        self.backoff_s = backoff_s
        self.pending: set[ReportKey] = set()
        self.task: asyncio.Task[None] | None = None
        self.stopped = False

    def report(self, topic: str, index: int, start: int, state: ChunkReplicaState) -> None:
        """Queues a report; starts the sender if none runs."""
        self.pending.add((topic, index, start, state))
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(
                logged(self._send, "chunk replica reports"))

    def _still_needed(self, key: ReportKey) -> bool:
        topic_name, index, start, state = key
        node_id = self.registry.node_id
        topic = self.registry.image.topics.get_by_name(topic_name)
        chunk = topic.chunk(index, start) if topic is not None else None
        if chunk is None or node_id not in chunk.replicas:
            return False
        return state is ChunkReplicaState.DROPPED or node_id not in chunk.isr

    async def _send(self) -> None:
        """Sends the pending reports until each is accepted (or no longer needed)."""
        while self.pending and not self.stopped:
            batch = sorted((k for k in self.pending if self._still_needed(k)),
                           key=lambda k: (k[0], k[1], k[2], k[3].value))
            self.pending.difference_update(set(self.pending) - set(batch))
            if not batch:
                return
            request = ChunkReplicaStateRequest(
                broker_id=self.registry.node_id,
                broker_epoch=self.broker_epoch(),
                chunks=tuple(ChunkReplicaStateItem(topic_name=t, partition_id=p,
                                                   start_offset=s, state=st)
                             for t, p, s, st in batch),
            )
            try:
                answer = ChunkReplicaStateResponse.model_validate(await self.controller.call(
                    CHUNK_REPLICA_STATE_PATH, request.model_dump(mode="json")))
            except Exception as error:
                log.info("ChunkReplicaState failed: %s", error)
                await asyncio.sleep(self.backoff_s)
                continue
            if answer.error_code == 0:
                for key, result in zip(batch, answer.results, strict=False):
                    if result.error_code in _DONE_CODES:
                        self.pending.discard(key)
            if self.pending:
                await asyncio.sleep(self.backoff_s)
