"""Messages of the broker's data plane (``/broker/v1/...`` on every broker agent).

They mirror Kafka's Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch, InitProducerId and
WriteTxnMarkers messages, with Kafka's field names in snake_case, carried as JSON over HTTP.
Record data travels as Kafka v2 record batches (``chunkraft.dataplane.record_batch``), one or
more concatenated, in the ``records`` field (:mod:`.record_bytes`): raw bytes in a batch frame
(:mod:`.batch_frame`, what produce and fetch use), base64 in plain JSON.

chunkraft's additions: ``partition_count`` on produce (KIP-253: the broker refuses a produce
whose count differs from its own with INVALID_PARTITION_COUNT), ``key_range`` on fetch (the
key-range fetch proposal: only records whose murmur2 key hash is in ``[lo, hi]``),
``chunk_start_offset`` on fetch (a replica copying an inactive chunk, KIP-1114) and
``chunk_stop_offset`` in fetch answers (where a consumer must move on to the next chunk).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict

from chunkraft.protocol.base import Message, StrictBool, StrictInt
from chunkraft.protocol.record_bytes import RecordBytes
from chunkraft.protocol.topics import Int16, Int32, Int64

__all__ = [
    "EARLIEST_TIMESTAMP",
    "KEY_HASH_MAX",
    "LATEST_TIMESTAMP",
    "AbortedTransaction",
    "BrokerStatus",
    "EpochEndOffset",
    "FetchPartition",
    "FetchPartitionResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchTopic",
    "FetchTopicResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "IsolationLevel",
    "ListOffsetsPartition",
    "ListOffsetsPartitionResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListOffsetsTopic",
    "ListOffsetsTopicResponse",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "OffsetForLeaderPartition",
    "OffsetForLeaderPartitionResult",
    "OffsetForLeaderTopic",
    "OffsetForLeaderTopicResult",
    "ProducePartitionData",
    "ProducePartitionResponse",
    "ProduceRequest",
    "ProduceResponse",
    "ProduceTopicData",
    "ProduceTopicResponse",
    "TxnMarkerPartitionResult",
    "TxnMarkerResult",
    "TxnMarkerTopicResult",
    "WritableTxnMarker",
    "WritableTxnMarkerTopic",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
]

KEY_HASH_MAX = 2**31 - 1
"""Key hashes are Kafka's positive murmur2 (``murmur2(key) & 0x7fffffff``): 0 .. 2^31-1."""

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
"""ListOffsets' "the record with the largest timestamp" (KIP-734)."""

PartitionIndex = Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]
IsolationLevel = Annotated[int, Strict(), Field(ge=0, le=1,
                                       description="0 read_uncommitted, 1 read_committed")]


# ---------------------------------------------------------------------------------- Produce


class ProducePartitionData(Message):
    """Record batches for one partition: one or more v2 record batches."""

    index: PartitionIndex
    records: RecordBytes


class ProduceTopicData(Message):
    """One topic's batches and the partition count the producer believes in (KIP-253)."""

    name: str
    partition_count: Annotated[int, Strict(), Field(ge=1, le=2**31 - 1)]
    partitions: tuple[ProducePartitionData, ...]


class ProduceRequest(Message):
    """Kafka's ProduceRequest. ``acks``: 0 (no wait), 1 (leader's log), -1 (every ISR member)."""

    transactional_id: str | None = None
    acks: Annotated[int, Strict(), Field(ge=-1, le=1)] = -1
    timeout_ms: Annotated[int, Strict(), Field(ge=0, le=300_000)] = 30_000
    topics: tuple[ProduceTopicData, ...]


class ProducePartitionResponse(Message):
    """One partition's outcome: the first offset given to the batches, or an error."""

    index: StrictInt
    error_code: Int16 = 0
    error_message: str | None = None
    base_offset: Int64 = -1
    log_append_time_ms: Int64 = -1
    log_start_offset: Int64 = -1


class ProduceTopicResponse(Message):
    name: str
    partitions: tuple[ProducePartitionResponse, ...]


class ProduceResponse(Message):
    """Per partition outcomes, in request order."""

    topics: tuple[ProduceTopicResponse, ...] = ()
    throttle_time_ms: Int32 = 0


# ------------------------------------------------------------------------------------ Fetch


class FetchPartition(Message):
    """Where to read one partition from.

    ``key_range``: only records whose positive murmur2 key hash is within ``[lo, hi]``
    (inclusive; records without a key hash as 0). ``chunk_start_offset``: a replica copying
    the inactive chunk starting there reads up to the chunk's end offset (not its stop offset);
    the serving broker must be a replica of that chunk.
    """

    partition: PartitionIndex
    fetch_offset: Int64
    partition_max_bytes: Annotated[int, Strict(), Field(ge=1, le=2**31 - 1)] = 1024 * 1024
    current_leader_epoch: Int32 = -1
    last_fetched_epoch: Int32 = -1
    log_start_offset: Int64 = -1
    key_range: tuple[Annotated[int, Strict(), Field(ge=0, le=KEY_HASH_MAX)],
                     Annotated[int, Strict(), Field(ge=0, le=KEY_HASH_MAX)]] | None = None
    chunk_start_offset: Int64 = -1


class FetchTopic(Message):
    topic: str
    partitions: tuple[FetchPartition, ...]


class FetchRequest(Message):
    """Kafka's FetchRequest. ``replica_id`` >= 0 is a follower (or a chunk copier) reading up to
    the log end; -1 is a consumer reading up to the high watermark (or the last stable offset
    with ``isolation_level`` 1). The broker waits up to ``max_wait_ms`` for ``min_bytes``."""

    replica_id: Int32 = -1
    replica_epoch: Int64 = -1
    max_wait_ms: Annotated[int, Strict(), Field(ge=0, le=30_000)] = 500
    min_bytes: Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)] = 1
    max_bytes: Annotated[int, Strict(), Field(ge=1, le=2**31 - 1)] = 50 * 1024 * 1024
    isolation_level: IsolationLevel = 0
    topics: tuple[FetchTopic, ...]


class AbortedTransaction(Message):
    producer_id: Int64
    first_offset: Int64


class EpochEndOffset(Message):
    """A leader epoch and the end offset (exclusive) of its entries on the answering replica."""

    epoch: Int32 = -1
    end_offset: Int64 = -1


class FetchPartitionResponse(Message):
    """What one partition gave: record batches and the offsets a reader needs.

    ``chunk_stop_offset`` is >= 0 when the data came from an inactive chunk: the last offset a
    consumer may read from it before moving to the next chunk. ``diverging_epoch`` tells a
    follower its log diverged from the leader's (truncate to ``end_offset``, KIP-320).
    ``preferred_read_replica`` (KIP-392) is >= 0 only in answers to stock Kafka consumers: the
    broker that serves the offset, with no records.
    """

    partition: StrictInt
    error_code: Int16 = 0
    error_message: str | None = None
    high_watermark: Int64 = -1
    last_stable_offset: Int64 = -1
    log_start_offset: Int64 = -1
    log_end_offset: Int64 = -1
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    chunk_stop_offset: Int64 = -1
    diverging_epoch: EpochEndOffset | None = None
    preferred_read_replica: Int32 = -1
    records: RecordBytes = b""


class FetchTopicResponse(Message):
    topic: str
    partitions: tuple[FetchPartitionResponse, ...]


class FetchResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    responses: tuple[FetchTopicResponse, ...] = ()


# ------------------------------------------------------------------------------ ListOffsets


class ListOffsetsPartition(Message):
    """``timestamp``: -2 earliest, -1 latest, -3 the record with the largest timestamp, else
    the first offset with a timestamp >= it."""

    partition_index: PartitionIndex
    timestamp: Int64
    current_leader_epoch: Int32 = -1


class ListOffsetsTopic(Message):
    name: str
    partitions: tuple[ListOffsetsPartition, ...]


class ListOffsetsRequest(Message):
    replica_id: Int32 = -1
    isolation_level: IsolationLevel = 0
    topics: tuple[ListOffsetsTopic, ...]


class ListOffsetsPartitionResponse(Message):
    partition_index: StrictInt
    error_code: Int16 = 0
    error_message: str | None = None
    timestamp: Int64 = -1
    offset: Int64 = -1
    leader_epoch: Int32 = -1


class ListOffsetsTopicResponse(Message):
    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...]


class ListOffsetsResponse(Message):
    throttle_time_ms: Int32 = 0
    topics: tuple[ListOffsetsTopicResponse, ...] = ()


# ------------------------------------------------------------------- OffsetsForLeaderEpoch


class OffsetForLeaderPartition(Message):
    partition: PartitionIndex
    current_leader_epoch: Int32 = -1
    leader_epoch: Int32


class OffsetForLeaderTopic(Message):
    topic: str
    partitions: tuple[OffsetForLeaderPartition, ...]


class OffsetForLeaderEpochRequest(Message):
    """The end offset of a leader epoch: the start offset of the next higher epoch on the
    answering replica, or its log end offset for the latest epoch (KIP-101 / KIP-279)."""

    replica_id: Int32 = -1
    topics: tuple[OffsetForLeaderTopic, ...]


class OffsetForLeaderPartitionResult(Message):
    partition: StrictInt
    error_code: Int16 = 0
    error_message: str | None = None
    leader_epoch: Int32 = -1
    end_offset: Int64 = -1


class OffsetForLeaderTopicResult(Message):
    topic: str
    partitions: tuple[OffsetForLeaderPartitionResult, ...]


class OffsetForLeaderEpochResponse(Message):
    throttle_time_ms: Int32 = 0
    topics: tuple[OffsetForLeaderTopicResult, ...] = ()


# --------------------------------------------------------------------------- InitProducerId


class InitProducerIdRequest(Message):
    """Kafka's InitProducerId. Without a transactional id, an idempotent producer gets a fresh
    id from the broker's block (epoch 0)."""

    transactional_id: str | None = None
    transaction_timeout_ms: Annotated[int, Strict(), Field(ge=-1, le=2**31 - 1)] = 60_000
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1


class InitProducerIdResponse(Message):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1


# --------------------------------------------------------------------------- WriteTxnMarkers


class WritableTxnMarkerTopic(Message):
    name: str
    partition_indexes: tuple[PartitionIndex, ...]


class WritableTxnMarker(Message):
    """A COMMIT (``transaction_result`` true) or ABORT control record to write on each partition
    (to the leader of its active chunk)."""

    producer_id: Int64
    producer_epoch: Int16
    transaction_result: StrictBool
    topics: tuple[WritableTxnMarkerTopic, ...]
    coordinator_epoch: Int32 = 0


class WriteTxnMarkersRequest(Message):
    markers: tuple[WritableTxnMarker, ...]


class TxnMarkerPartitionResult(Message):
    partition_index: StrictInt
    error_code: Int16 = 0
    error_message: str | None = None


class TxnMarkerTopicResult(Message):
    name: str
    partitions: tuple[TxnMarkerPartitionResult, ...]


class TxnMarkerResult(Message):
    producer_id: Int64
    topics: tuple[TxnMarkerTopicResult, ...]


class WriteTxnMarkersResponse(Message):
    markers: tuple[TxnMarkerResult, ...] = ()


# ----------------------------------------------------------------------------------- Status


class BrokerStatus(Message):
    """``GET /broker/v1/status``: what a broker agent is and how far its metadata got.

    ``image_hash`` (only with ``?hash=true``) is the content hash of its image at
    ``metadata_offset``, comparable with the controller's at the same offset."""

    node_id: StrictInt
    cluster_id: str
    broker_epoch: Int64 = -1
    fenced: StrictBool = True
    shutting_down: StrictBool = False
    metadata_offset: Int64 = -1
    image_hash: str | None = None
    leaders: StrictInt = 0
    followers: StrictInt = 0
    inactive_chunks: StrictInt = 0
