"""Messages of the broker agents' coordinators: transactions (KIP-98) and consumer groups.

They mirror Kafka's FindCoordinator, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, OffsetCommit, OffsetFetch, JoinGroup, SyncGroup, Heartbeat and LeaveGroup, with
Kafka's field names in snake_case, carried as JSON over HTTP (``POST /broker/v1/<name>``).
InitProducerId is in :mod:`chunkraft.protocol.data_plane`.

chunkraft's addition (the key-range fetch proposal): committed offsets of a partition may carry
``range_offsets``, the next offset to read for each key-hash range ``[lo, hi]`` a consumer of
that range was assigned (CommittedRangeOffsets); a partition committed as a whole has none.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict

from chunkraft.protocol.base import Message, StrictBool, StrictInt
from chunkraft.protocol.data_plane import KEY_HASH_MAX
from chunkraft.protocol.topics import Int16, Int32, Int64

__all__ = [
    "GROUP_KEY",
    "TRANSACTION_KEY",
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnPartitionResult",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AddPartitionsToTxnTopic",
    "AddPartitionsToTxnTopicResult",
    "Coordinator",
    "EndTxnRequest",
    "EndTxnResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupMember",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "OffsetCommitPartition",
    "OffsetCommitPartitionResult",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetCommitTopic",
    "OffsetCommitTopicResult",
    "OffsetFetchPartition",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetFetchTopic",
    "OffsetFetchTopicRequest",
    "RangeOffset",
    "SyncGroupAssignment",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicPartitions",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
]

GROUP_KEY = 0
TRANSACTION_KEY = 1

PartitionIndex = Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]
KeyHash = Annotated[int, Strict(), Field(ge=0, le=KEY_HASH_MAX)]


# ----------------------------------------------------------------------------- FindCoordinator


class FindCoordinatorRequest(Message):
    """Which broker coordinates ``keys`` of ``key_type`` (0 group, 1 transactional id): the
    leader of partition ``positive murmur2(key) % partitions`` of the internal topic
    (``__consumer_offsets`` / ``__transaction_state``)."""

    key_type: Annotated[int, Strict(), Field(ge=0, le=1)] = GROUP_KEY
    keys: tuple[str, ...]


class Coordinator(Message):
    key: str
    node_id: Int32 = -1
    host: str = ""
    port: Int32 = -1
    url: str = ""
    error_code: Int16 = 0
    error_message: str | None = None


class FindCoordinatorResponse(Message):
    throttle_time_ms: Int32 = 0
    coordinators: tuple[Coordinator, ...] = ()


# ------------------------------------------------------------------------------ transactions


class TopicPartitions(Message):
    name: str
    partitions: tuple[PartitionIndex, ...]


class AddPartitionsToTxnTopic(TopicPartitions):
    pass


class AddPartitionsToTxnRequest(Message):
    """Partitions the producer is about to write in its current transaction."""

    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    topics: tuple[AddPartitionsToTxnTopic, ...]


class AddPartitionsToTxnPartitionResult(Message):
    partition_index: StrictInt
    error_code: Int16 = 0
    error_message: str | None = None


class AddPartitionsToTxnTopicResult(Message):
    name: str
    results: tuple[AddPartitionsToTxnPartitionResult, ...]


class AddPartitionsToTxnResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
    results: tuple[AddPartitionsToTxnTopicResult, ...] = ()


class AddOffsetsToTxnRequest(Message):
    """The transaction will commit offsets of ``group_id`` (its ``__consumer_offsets``
    partition joins the transaction)."""

    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    group_id: str


class AddOffsetsToTxnResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None


class EndTxnRequest(Message):
    """Commit (``committed`` true) or abort the producer's current transaction."""

    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    committed: StrictBool


class EndTxnResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None


# --------------------------------------------------------------------------- offset commits


class RangeOffset(Message):
    """The next offset to read for keys whose hash is within ``[lo, hi]``."""

    lo: KeyHash
    hi: KeyHash
    offset: Int64


class OffsetCommitPartition(Message):
    partition_index: PartitionIndex
    committed_offset: Int64
    committed_leader_epoch: Int32 = -1
    committed_metadata: str | None = None
    range_offsets: tuple[RangeOffset, ...] = ()


class OffsetCommitTopic(Message):
    name: str
    partitions: tuple[OffsetCommitPartition, ...]


class OffsetCommitRequest(Message):
    """Kafka's OffsetCommit. ``generation_id`` -1 and an empty ``member_id``: a consumer that
    assigns itself (no group membership), as Kafka allows."""

    group_id: str
    generation_id: Int32 = -1
    member_id: str = ""
    topics: tuple[OffsetCommitTopic, ...]


class OffsetCommitPartitionResult(Message):
    partition_index: StrictInt
    error_code: Int16 = 0
    error_message: str | None = None


class OffsetCommitTopicResult(Message):
    name: str
    partitions: tuple[OffsetCommitPartitionResult, ...]


class OffsetCommitResponse(Message):
    throttle_time_ms: Int32 = 0
    topics: tuple[OffsetCommitTopicResult, ...] = ()


class TxnOffsetCommitRequest(Message):
    """Offsets committed as part of a transaction: visible once the transaction commits,
    dropped if it aborts."""

    transactional_id: str
    group_id: str
    producer_id: Int64
    producer_epoch: Int16
    generation_id: Int32 = -1
    member_id: str = ""
    topics: tuple[OffsetCommitTopic, ...]


class TxnOffsetCommitResponse(Message):
    throttle_time_ms: Int32 = 0
    topics: tuple[OffsetCommitTopicResult, ...] = ()


class OffsetFetchTopicRequest(Message):
    name: str
    partition_indexes: tuple[PartitionIndex, ...]


class OffsetFetchRequest(Message):
    """Committed offsets of ``group_id``; ``topics`` None: every partition it committed.
    ``require_stable``: answer UNSTABLE_OFFSET_COMMIT while a transaction's offsets are
    pending (KIP-447)."""

    group_id: str
    topics: tuple[OffsetFetchTopicRequest, ...] | None = None
    require_stable: StrictBool = False


class OffsetFetchPartition(Message):
    partition_index: StrictInt
    committed_offset: Int64 = -1
    committed_leader_epoch: Int32 = -1
    metadata: str | None = None
    range_offsets: tuple[RangeOffset, ...] = ()
    error_code: Int16 = 0
    error_message: str | None = None


class OffsetFetchTopic(Message):
    name: str
    partitions: tuple[OffsetFetchPartition, ...]


class OffsetFetchResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
    topics: tuple[OffsetFetchTopic, ...] = ()


# ----------------------------------------------------------------------------- membership


class JoinGroupRequest(Message):
    """Join (or rejoin) ``group_id``; ``topics``: what this member subscribes to."""

    group_id: str
    session_timeout_ms: Annotated[int, Strict(), Field(ge=1000, le=300_000)] = 10_000
    rebalance_timeout_ms: Annotated[int, Strict(), Field(ge=1000, le=300_000)] = 30_000
    member_id: str = ""
    topics: tuple[str, ...]


class JoinGroupMember(Message):
    member_id: str
    topics: tuple[str, ...]


class JoinGroupResponse(Message):
    """The leader (``member_id == leader``) gets every member and computes the assignment."""

    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
    generation_id: Int32 = -1
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()


class SyncGroupAssignment(Message):
    member_id: str
    partitions: tuple[TopicPartitions, ...]


class SyncGroupRequest(Message):
    group_id: str
    generation_id: Int32
    member_id: str
    assignments: tuple[SyncGroupAssignment, ...] = ()


class SyncGroupResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
    partitions: tuple[TopicPartitions, ...] = ()


class HeartbeatRequest(Message):
    group_id: str
    generation_id: Int32
    member_id: str


class HeartbeatResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None


class LeaveGroupRequest(Message):
    group_id: str
    member_id: str


class LeaveGroupResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
