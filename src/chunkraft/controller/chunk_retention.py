"""Deletes inactive chunks past their topic's retention: the leader's periodic retention pass.

Every ``log.retention.check.interval.ms`` the leader runs
:func:`~chunkraft.controller.operations.chunk_retention.delete_expired_chunks` on its image
through :meth:`QuorumController.write`, like any operation: the records commit (or not) and
replay is what removes the chunks, on every controller and broker. The scan runs on the write
worker (``offload``), off the event loop, and one pass deletes at most
:data:`~chunkraft.controller.operations.chunk_retention.MAX_CHUNKS_PER_PASS` chunks; a pass
that hit the limit is followed by the next one a tenth of an interval later, so a backlog
drains without any pass growing. A follower does nothing; a new leader runs its first pass
within one interval. ``retention.bytes`` reads the chunk sizes brokers reported to this leader
(``sizes``: the :class:`~chunkraft.controller.operations.chunk_sizes.ChunkSizeTable`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.chunk_retention import (
    MAX_CHUNKS_PER_PASS,
    ChunkRetentionResponse,
    delete_expired_chunks,
)
from chunkraft.controller.operations.chunk_sizes import ChunkKey
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException

__all__ = ["retention_operation", "run_chunk_retention", "run_retention_pass"]

logger = logging.getLogger(__name__)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


SizesOf = Callable[[MetadataImage], Mapping[ChunkKey, int]]
"""The reported chunk sizes that still apply to an image (ChunkSizeTable.sizes)."""


def retention_operation(now_ms: int, limit: int = MAX_CHUNKS_PER_PASS,
                        sizes: SizesOf | None = None
                        ) -> Callable[[MetadataImage], ControllerResult[ChunkRetentionResponse]]:
    """The retention pass at ``now_ms`` as an operation (image in, records out)."""
    def operation(image: MetadataImage) -> ControllerResult[ChunkRetentionResponse]:
        return delete_expired_chunks(image, now_ms, limit=limit,
                                     sizes=sizes(image) if sizes is not None else None)

    return operation


async def run_retention_pass(controller: QuorumController, *, now_ms: int,
                             limit: int = MAX_CHUNKS_PER_PASS,
                             sizes: SizesOf | None = None) -> int:
    """One pass on the leader: how many chunks it deleted (0 when the write did not commit:
    the next pass tries again)."""
    try:
        result = await controller.write(retention_operation(now_ms, limit, sizes),
                                        ChunkRetentionResponse, offload=True)
    except ApiException as error:
        logger.info("chunk retention pass did not commit: %s", error)
        return 0
    deleted = result.response.deleted if result.committed else 0
    if deleted:
        logger.info("chunk retention deleted %d inactive chunks past their topics' retention",
                    deleted)
    return deleted


async def run_chunk_retention(
    controller: QuorumController,
    *,
    interval: float,
    limit: int = MAX_CHUNKS_PER_PASS,
    clock_ms: Callable[[], int] = _wall_clock_ms,
    sizes: SizesOf | None = None,
) -> None:
    """Runs until cancelled: on the leader, a retention pass every ``interval`` seconds."""
    wait = interval
    while True:
        await asyncio.sleep(wait)
        wait = interval
        if not controller.is_leader():
            continue
        try:
            deleted = await run_retention_pass(controller, now_ms=clock_ms(), limit=limit,
                                               sizes=sizes)
        except Exception:
            logger.exception("chunk retention pass failed")
            continue
        if deleted >= limit:
            wait = interval / 10
