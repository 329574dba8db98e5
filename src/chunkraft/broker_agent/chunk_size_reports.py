"""ChunkSizeReports: a broker's periodic report of the bytes it holds of each chunk.

The controller applies ``retention.bytes`` across a partition's chunks but cannot see chunk
sizes in the metadata. So at every ``log.retention.check.interval.ms`` a broker reports, for
the topics whose metadata sets ``retention.bytes`` (the topic's key or the cluster default,
exactly as the controller reads it), the bytes it holds of every chunk of those topics, active
chunk included (:mod:`chunkraft.protocol.chunk_sizes`). Nothing is sent while no topic has a
limit. Reports go on whatever happened to the last one: the leader keeps them in memory only,
so a new leader learns the sizes from the next round.

Bytes per chunk are the estimate of :func:`~chunkraft.broker_agent.local_replicas.chunk_holdings`
(whole segments, shared out by offsets), as ``GET /broker/v1/local-replicas`` shows them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from chunkraft.broker_agent.local_replicas import chunk_holdings, log_chunks
from chunkraft.broker_agent.partition_registry import PartitionRegistry
from chunkraft.broker_agent.peer_client import ControllerChannelLike
from chunkraft.configs.resolve import topic_int
from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.chunk_sizes import (
    MAX_CHUNK_SIZES,
    ChunkSize,
    ChunkSizesRequest,
    ChunkSizesResponse,
)

__all__ = ["CHUNK_SIZES_PATH", "ChunkSizeReports", "limited_topics"]

log = logging.getLogger(__name__)

CHUNK_SIZES_PATH = "/controller/v1/chunk-sizes"


def limited_topics(image: MetadataImage) -> set[str]:
    """The topics whose metadata sets a ``retention.bytes`` limit (>= 0)."""
    return {topic.name for topic in image.topics
            if topic_int(image.configs, topic.name, "retention.bytes") >= 0}


class ChunkSizeReports:
    """Builds and sends the size reports; not thread-safe (the broker's event loop only)."""

    def __init__(self, registry: PartitionRegistry, logs: Any,
                 controller: ControllerChannelLike, broker_epoch: Callable[[], int]) -> None:
        self.registry = registry
        self.logs = logs
        self.controller = controller
        self.broker_epoch = broker_epoch
        self.sent = 0
        """Reports the leader accepted (for tests and the log)."""

    def sizes(self) -> list[ChunkSize]:
        """Every chunk of a limited topic this broker holds bytes of, sorted."""
        image = self.registry.image
        topics = limited_topics(image)
        if not topics:
            return []
        found: dict[tuple[str, int, int], int] = {}
        for (name, partition_id), log_ in self.logs.logs().items():
            of_log = log_chunks(name, partition_id, log_, image)
            if of_log.owner not in topics:
                continue
            for chunk in chunk_holdings(log_, of_log.active, of_log.chunks):
                if chunk["bytes_held"] > 0:
                    key = (of_log.owner, partition_id, chunk["start_offset"])
                    found[key] = max(found.get(key, 0), chunk["bytes_held"])
        return [ChunkSize(topic_name=topic, partition_id=partition, start_offset=start,
                          size_in_bytes=size)
                for (topic, partition, start), size in sorted(found.items())]

    async def send(self) -> None:
        """One round of reports (several requests past :data:`MAX_CHUNK_SIZES` items)."""
        sizes = self.sizes()
        for first in range(0, len(sizes), MAX_CHUNK_SIZES):
            request = ChunkSizesRequest(broker_id=self.registry.node_id,
                                        broker_epoch=self.broker_epoch(),
                                        sizes=tuple(sizes[first:first + MAX_CHUNK_SIZES]))
            try:
                answer = ChunkSizesResponse.model_validate(await self.controller.call(
                    CHUNK_SIZES_PATH, request.model_dump(mode="json")))
            except Exception as error:
                log.info("chunk size report failed: %s", error)
                return
            if answer.error_code != 0:
                log.info("chunk size report refused: %s", answer.error_message)
                return
            self.sent += 1
