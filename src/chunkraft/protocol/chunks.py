"""Chunk messages (KIP-1114): CreateChunks, AlterChunkAssignments and ChunkReplicaState.

CreateChunks is nested topics -> partitions; AlterChunkAssignments and ChunkReplicaState list
chunks flat, one item per chunk, as the KIP's AlterChunkAssignments does. Responses carry one
result per request item, in request order, each with a Kafka error code and message.

Offsets are inclusive chunk offsets (DESIGN.md section 3). A ``chunk_epoch`` of -1 matches any
epoch; any other value must equal the chunk's current epoch.
"""

from __future__ import annotations

from enum import StrEnum

from chunkraft.protocol.base import Message, StrictBool
from chunkraft.protocol.topics import Int16, Int32, Int64

__all__ = [
    "AlterChunkAssignment",
    "AlterChunkAssignmentResult",
    "AlterChunkAssignmentsRequest",
    "AlterChunkAssignmentsResponse",
    "ChunkReplicaState",
    "ChunkReplicaStateItem",
    "ChunkReplicaStateRequest",
    "ChunkReplicaStateResponse",
    "ChunkReplicaStateResult",
    "CreateChunksPartition",
    "CreateChunksPartitionResult",
    "CreateChunksRequest",
    "CreateChunksResponse",
    "CreateChunksTopic",
    "CreateChunksTopicResult",
]


# ------------------------------------------------------------------ CreateChunks


class CreateChunksPartition(Message):
    """Cut the active chunk of one partition, with the offsets its leader read.

    The leader paused appends and waited for HW = LEO, then read LSO and HW:
    ``prev_stop_offset = LSO - 1``, ``prev_end_offset = HW - 1``, ``start_offset = LSO``.
    ``broker_ids`` are the replicas of the new active chunk (the partition's replication factor
    of them); ``leader`` is its leader (-1: the first replica). ``leader_epoch`` other than -1
    must equal the partition's, so a cut computed under an old leader is refused.
    """

    partition_index: Int32
    broker_ids: tuple[Int32, ...]
    leader: Int32 = -1
    leader_epoch: Int32 = -1
    prev_stop_offset: Int64
    prev_end_offset: Int64
    start_offset: Int64
    start_timestamp: Int64


class CreateChunksTopic(Message):
    """The partitions of one topic to cut."""

    name: str
    partitions: tuple[CreateChunksPartition, ...]


class CreateChunksRequest(Message):
    """CreateChunks, forwarded by the leader broker (``broker_id`` / ``broker_epoch``, checked
    against its registration) or sent by an operator (``broker_id`` -1: no broker checks).

    Each partition is cut, or refused, on its own; ``validate_only`` writes nothing.
    """

    topics: tuple[CreateChunksTopic, ...]
    broker_id: Int32 = -1
    broker_epoch: Int64 = -1
    validate_only: StrictBool = False


class CreateChunksPartitionResult(Message):
    """The outcome for one partition."""

    partition_index: Int32
    error_code: Int16 = 0
    error_message: str | None = None


class CreateChunksTopicResult(Message):
    """The outcomes for one topic entry of the request."""

    name: str
    partitions: tuple[CreateChunksPartitionResult, ...] = ()


class CreateChunksResponse(Message):
    """Per-partition outcomes; the top-level error is set when the whole request is refused
    (a stale broker epoch), and then every partition carries it too."""

    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
    topics: tuple[CreateChunksTopicResult, ...] = ()


# ------------------------------------------------------------------ AlterChunkAssignments


class AlterChunkAssignment(Message):
    """Move the inactive chunk ``(topic_name, partition_id, start_offset)`` to ``broker_ids``."""

    topic_name: str
    partition_id: Int32
    start_offset: Int64
    chunk_epoch: Int32 = -1
    broker_ids: tuple[Int32, ...]


class AlterChunkAssignmentsRequest(Message):
    """AlterChunkAssignments: each chunk moves, or is refused, on its own."""

    chunks: tuple[AlterChunkAssignment, ...]
    validate_only: StrictBool = False


class AlterChunkAssignmentResult(Message):
    """The outcome for one chunk of the request."""

    topic_name: str
    partition_id: Int32
    start_offset: Int64
    error_code: Int16 = 0
    error_message: str | None = None


class AlterChunkAssignmentsResponse(Message):
    """One result per request item, in request order."""

    throttle_time_ms: Int32 = 0
    results: tuple[AlterChunkAssignmentResult, ...] = ()


# ------------------------------------------------------------------ ChunkReplicaState


class ChunkReplicaState(StrEnum):
    """What a broker reports about its own replica of an inactive chunk.

    ``IN_SYNC``: it now holds the chunk's full range (an adding replica finished its copy, or a
    replica outside the ISR caught up). ``DROPPED``: retention removed all of its data, so it
    leaves the chunk's replicas; the last replica to leave removes the chunk.
    """

    IN_SYNC = "in_sync"
    DROPPED = "dropped"


class ChunkReplicaStateItem(Message):
    """One chunk and the state of the reporting broker's replica of it."""

    topic_name: str
    partition_id: Int32
    start_offset: Int64
    chunk_epoch: Int32 = -1
    state: ChunkReplicaState


class ChunkReplicaStateRequest(Message):
    """A broker's report on its own chunk replicas; ``broker_epoch`` must match its
    registration."""

    broker_id: Int32
    broker_epoch: Int64
    chunks: tuple[ChunkReplicaStateItem, ...]


class ChunkReplicaStateResult(Message):
    """The outcome for one chunk of the request."""

    topic_name: str
    partition_id: Int32
    start_offset: Int64
    error_code: Int16 = 0
    error_message: str | None = None


class ChunkReplicaStateResponse(Message):
    """One result per request item; the top-level error is set (and repeated on every item)
    when the whole report is refused (a stale broker epoch)."""

    error_code: Int16 = 0
    error_message: str | None = None
    results: tuple[ChunkReplicaStateResult, ...] = ()
