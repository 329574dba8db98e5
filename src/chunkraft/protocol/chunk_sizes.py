"""ChunkSizes: a broker tells the leader how many bytes it holds of each chunk.

The controller cannot see chunk sizes in the metadata (ChunkRecord carries offsets, not bytes),
yet ``retention.bytes`` is a limit on a whole partition across its chunks. So brokers report,
for the topics whose metadata sets ``retention.bytes``, the bytes they hold of every chunk of
such a topic, active chunk included. The leader keeps the latest report in memory only (like
heartbeats: a new leader learns the sizes again from the next reports) and its retention pass
reads them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chunkraft.protocol.base import Message
from chunkraft.protocol.brokers import BrokerEpoch, BrokerId
from chunkraft.protocol.topics import Int16, Int32, Int64

__all__ = ["MAX_CHUNK_SIZES", "ChunkSize", "ChunkSizesRequest", "ChunkSizesResponse"]

MAX_CHUNK_SIZES = 10_000
"""Items one report may carry; a broker holding more sends several reports."""


class ChunkSize(Message):
    """The bytes a broker holds of one chunk (an estimate from its segments' sizes)."""

    topic_name: Annotated[str, Field(min_length=1, max_length=249)]
    partition_id: Annotated[int, Field(ge=0, le=2**31 - 1, strict=True)]
    start_offset: Int64
    size_in_bytes: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)]


class ChunkSizesRequest(Message):
    """A broker's report; ``broker_epoch`` must match its registration."""

    broker_id: BrokerId
    broker_epoch: BrokerEpoch
    sizes: Annotated[tuple[ChunkSize, ...], Field(max_length=MAX_CHUNK_SIZES)]


class ChunkSizesResponse(Message):
    """``error_code`` 0 once the leader holds the report; STALE_BROKER_EPOCH refuses it all.
    ``accepted`` counts the items of chunks the leader's image has (others are left out)."""

    error_code: Int16 = 0
    error_message: str | None = None
    accepted: Int32 = 0
