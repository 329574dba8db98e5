"""Topic messages: CreateTopics, DeleteTopics, CreatePartitions (KIP-195) and Metadata (v13).

Field names are Kafka's, in snake_case. Topic ids travel as text in Kafka's form (22 characters
of URL-safe base64, see :mod:`chunkraft.records.uuids`). Integers are strict and range-checked
to their Kafka wire type, so a malformed body fails validation (HTTP 400) before any operation
sees it; everything that is well-formed but wrong gets a Kafka error code per item.

A topic to create may carry ``configs`` (name and value, as Kafka's CreateTopics): each is
checked as IncrementalAlterConfigs checks a SET (:mod:`chunkraft.configs.keys`) and written in
the topic's own atomic batch. Differences from Kafka, on purpose: an unknown topic's
``topic_id`` (or ``name``, when asked by id) is null rather than the zero uuid.
"""

from __future__ import annotations

from pydantic import Field

from chunkraft.protocol.base import Int16, Int32, Int64, Message, StrictBool
from chunkraft.protocol.configs import MAX_CONFIG_ENTRIES, ConfigName, ConfigValue

__all__ = [
    "CreatableReplicaAssignment",
    "CreatableTopic",
    "CreatableTopicConfig",
    "CreatableTopicResult",
    "CreatePartitionsAssignment",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreatePartitionsTopic",
    "CreatePartitionsTopicResult",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeletableTopicResult",
    "DeleteTopicState",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "Int16",
    "Int32",
    "Int64",
    "MetadataRequest",
    "MetadataRequestTopic",
    "MetadataResponse",
    "MetadataResponseBroker",
    "MetadataResponseChunk",
    "MetadataResponsePartition",
    "MetadataResponsePriorPartition",
    "MetadataResponseTopic",
]

DEFAULT_TIMEOUT_MS = 60_000


# ------------------------------------------------------------------ CreateTopics


class CreatableReplicaAssignment(Message):
    """A manual assignment of one new partition: its index and its replicas, leader first."""

    partition_index: Int32
    broker_ids: tuple[Int32, ...]


class CreatableTopicConfig(Message):
    """A configuration of the new topic (a null value is refused, INVALID_CONFIG)."""

    name: ConfigName
    value: ConfigValue | None = None


class CreatableTopic(Message):
    """One topic to create.

    ``num_partitions`` and ``replication_factor`` of -1 take the controller's defaults. With
    ``assignments``, both must be -1 and the assignments give every partition (0..n-1) its
    replicas. ``configs`` are the topic's own configuration keys.
    """

    name: str
    num_partitions: Int32 = -1
    replication_factor: Int16 = -1
    assignments: tuple[CreatableReplicaAssignment, ...] = ()
    configs: tuple[CreatableTopicConfig, ...] = Field(default=(), max_length=MAX_CONFIG_ENTRIES)


class CreateTopicsRequest(Message):
    """CreateTopics: each topic is created, or fails, on its own; ``validate_only`` writes
    nothing."""

    topics: tuple[CreatableTopic, ...]
    timeout_ms: Int32 = DEFAULT_TIMEOUT_MS
    validate_only: StrictBool = False


class CreatableTopicResult(Message):
    """The outcome for one topic: on success its id (null for validate_only), partition count
    and replication factor; on failure -1 for both and a message."""

    name: str
    topic_id: str | None = None
    error_code: Int16 = 0
    error_message: str | None = None
    num_partitions: Int32 = -1
    replication_factor: Int16 = -1


class CreateTopicsResponse(Message):
    """One result per distinct topic name of the request, in request order."""

    throttle_time_ms: Int32 = 0
    topics: tuple[CreatableTopicResult, ...] = ()


# ------------------------------------------------------------------ DeleteTopics


class DeleteTopicState(Message):
    """A topic to delete, named by ``name`` or by ``topic_id`` (exactly one of them)."""

    name: str | None = None
    topic_id: str | None = None


class DeleteTopicsRequest(Message):
    """DeleteTopics by names (``topic_names``, as versions 0-5) and/or ``topics`` (version 6+)."""

    topic_names: tuple[str, ...] = ()
    topics: tuple[DeleteTopicState, ...] = ()
    timeout_ms: Int32 = DEFAULT_TIMEOUT_MS


class DeletableTopicResult(Message):
    """The outcome for one requested topic; ``name`` / ``topic_id`` are filled where known."""

    name: str | None = None
    topic_id: str | None = None
    error_code: Int16 = 0
    error_message: str | None = None


class DeleteTopicsResponse(Message):
    """One result per distinct requested topic."""

    throttle_time_ms: Int32 = 0
    responses: tuple[DeletableTopicResult, ...] = ()


# ------------------------------------------------------------------ CreatePartitions (KIP-195)


class CreatePartitionsAssignment(Message):
    """The replicas of one new partition, preferred leader first."""

    broker_ids: tuple[Int32, ...]


class CreatePartitionsTopic(Message):
    """Raise ``name``'s partition count to ``count`` (absolute, not an increment).

    ``assignments``: null lets the controller place the new partitions; otherwise exactly one
    entry per new partition, each with the topic's replication factor.
    """

    name: str
    count: Int32
    assignments: tuple[CreatePartitionsAssignment, ...] | None = None


class CreatePartitionsRequest(Message):
    """CreatePartitions (KIP-195): per-topic outcome; ``validate_only`` writes nothing."""

    topics: tuple[CreatePartitionsTopic, ...]
    timeout_ms: Int32 = DEFAULT_TIMEOUT_MS
    validate_only: StrictBool = False


class CreatePartitionsTopicResult(Message):
    """The outcome for one topic: error code 0 (NONE) on success."""

    name: str
    error_code: Int16 = 0
    error_message: str | None = None


class CreatePartitionsResponse(Message):
    """One result per distinct topic name of the request, in request order."""

    throttle_time_ms: Int32 = 0
    results: tuple[CreatePartitionsTopicResult, ...] = ()


# ------------------------------------------------------------------ Metadata (v13, KIP-1114)


class MetadataRequestTopic(Message):
    """A topic to describe, by ``topic_id`` if given, else by ``name``."""

    name: str | None = None
    topic_id: str | None = None


class MetadataRequest(Message):
    """Metadata: ``topics`` null describes every topic; ``include_chunks`` adds inactive chunks."""

    topics: tuple[MetadataRequestTopic, ...] | None = None
    include_chunks: StrictBool = True


class MetadataResponseBroker(Message):
    """A registered broker and its first listener."""

    node_id: Int32
    host: str
    port: Int32
    rack: str | None = None
    fenced: StrictBool = False


class MetadataResponseChunk(Message):
    """An inactive chunk (offsets inclusive, see DESIGN.md section 3)."""

    start_offset: Int64
    start_timestamp: Int64
    stop_offset: Int64
    end_offset: Int64
    chunk_epoch: Int32
    replicas: tuple[Int32, ...]
    isr: tuple[Int32, ...]
    adding_replicas: tuple[Int32, ...] = ()
    removing_replicas: tuple[Int32, ...] = ()


class MetadataResponsePriorPartition(Message):
    """KIP-253: a partition that existed before an expansion and its leader epoch then."""

    partition_index: Int32
    leader_epoch: Int32


class MetadataResponsePartition(Message):
    """A partition (its active chunk) and, if asked, its inactive chunks by start offset."""

    error_code: Int16 = 0
    partition_index: Int32
    leader_id: Int32
    leader_epoch: Int32
    replica_nodes: tuple[Int32, ...]
    isr_nodes: tuple[Int32, ...]
    offline_replicas: tuple[Int32, ...] = ()
    start_offset: Int64 = -1
    start_timestamp: Int64 = -1
    prior_partition_epochs: tuple[MetadataResponsePriorPartition, ...] = ()
    chunks: tuple[MetadataResponseChunk, ...] = ()


class MetadataResponseTopic(Message):
    """A topic; for an unknown one, only the error and what the request named."""

    error_code: Int16 = 0
    error_message: str | None = None
    name: str | None = None
    topic_id: str | None = None
    partitions: tuple[MetadataResponsePartition, ...] = ()


class MetadataResponse(Message):
    """The cluster as of the image at ``metadata_offset``."""

    throttle_time_ms: Int32 = 0
    cluster_id: str | None = None
    controller_id: Int32 = -1
    brokers: tuple[MetadataResponseBroker, ...] = ()
    topics: tuple[MetadataResponseTopic, ...] = ()
    metadata_offset: Int64 = -1
