"""The REST v3 bodies, as pydantic models: what ``/openapi.json`` declares for every route.

Resources follow Confluent's REST v3 shape: ``{"kind", "metadata": {...}, ...fields}``, and
lists ``{"kind": "Kafka<X>List", "metadata": {"self", "next", "metadata_offset"}, "data":
[...]}``. Links to related collections are ``{"related": url}``. Large answers (partitions with
their chunks) are written as JSON from plain values (see :mod:`chunkraft.api.v3.encoding`) and
never built from these classes item by item; the classes stay the contract, and the unit tests
validate the fast answers against them.

The ACL bodies are in :mod:`chunkraft.api.v3.acl_models` and the configuration bodies in
:mod:`chunkraft.api.v3.config_models`. Request bodies refuse unknown fields (a misspelt
``validate_only`` must not create a topic), and integers are strict and bounded to their Kafka
wire type.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from chunkraft.api.parameters import TOPIC_NAME_SCHEMA
from chunkraft.protocol.base import Int16, Int32, Int64, StrictBool
from chunkraft.protocol.configs import MAX_CONFIG_ENTRIES, ConfigName, ConfigValue

__all__ = [
    "MAX_BATCH_ITEMS",
    "AlterChunkAssignmentsBody",
    "AlterChunkItem",
    "ChunkAssignmentResult",
    "ChunkAssignmentResultList",
    "CreateChunkItem",
    "CreateChunksBody",
    "CreateChunksResult",
    "CreateChunksResultList",
    "CreatePartitionsBody",
    "CreatePartitionsItem",
    "CreatePartitionsResult",
    "CreatePartitionsResultList",
    "CreateTopicBody",
    "CreateTopicConfig",
    "KafkaBroker",
    "KafkaBrokerList",
    "KafkaChunk",
    "KafkaChunkList",
    "KafkaCluster",
    "KafkaClusterList",
    "KafkaPartition",
    "KafkaPartitionList",
    "KafkaReplica",
    "KafkaReplicaList",
    "KafkaTopic",
    "KafkaTopicList",
    "ListMetadata",
    "PriorPartitionEpoch",
    "Related",
    "ReplicaAssignment",
    "RequestBody",
    "ResourceMetadata",
    "UpdateTopicBody",
]

# Bounds the routes check themselves, declared in the schema only: a value outside them gets
# Kafka's own error and message (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
# INVALID_REPLICA_ASSIGNMENT) rather than a generic INVALID_REQUEST from the model, as topic
# names do (chunkraft.api.parameters). A count is -1 (the controller's default) or positive.
_COUNT_OR_DEFAULT: dict[str, Any] = {"minimum": -1, "not": {"const": 0}}
_POSITIVE: dict[str, Any] = {"minimum": 1}
_NOT_NEGATIVE: dict[str, Any] = {"minimum": 0}
BrokerId = Annotated[Int32, Field(json_schema_extra=_NOT_NEGATIVE)]
"""A broker id in a request: never negative (an unregistered one is INVALID_REPLICA_ASSIGNMENT)."""

MAX_BATCH_ITEMS = 1000
"""The default of ``request.max.batch.items``: items (topics, partitions, chunks) in one batch
request. The routes check the node's own limit (:mod:`chunkraft.api.limits`), not the model, so
the setting can change it."""


class RequestBody(BaseModel):
    """A request body: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ------------------------------------------------------------------ common parts


class Related(BaseModel):
    """A link to a related resource or collection."""

    related: str


class ResourceMetadata(BaseModel):
    """``self``: this resource's URL; ``resource_name``: its CRN
    (``crn:///kafka=<cluster>/topic=<name>/partition=<id>/chunk=<start>``);
    ``metadata_offset``: the metadata log offset the answer reflects."""

    self: str
    resource_name: str | None = None
    metadata_offset: int | None = None


class ListMetadata(BaseModel):
    """``next``: the URL of the next page, or null on the last one."""

    self: str
    next: str | None = None
    metadata_offset: int


# ------------------------------------------------------------------ clusters and brokers


class KafkaCluster(BaseModel):
    """The cluster this controller quorum serves; ``controller_id`` is the quorum's leader
    (-1 while there is none)."""

    kind: str = "KafkaCluster"
    metadata: ResourceMetadata
    cluster_id: str
    controller_id: int
    brokers: Related
    topics: Related
    acls: Related


class KafkaClusterList(BaseModel):
    kind: str = "KafkaClusterList"
    metadata: ListMetadata
    data: list[KafkaCluster]


class KafkaBroker(BaseModel):
    """A registered broker: its first listener's host and port, and its registration state."""

    kind: str = "KafkaBroker"
    metadata: ResourceMetadata
    broker_id: int
    host: str | None
    port: int | None
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    broker_epoch: int
    incarnation_id: str


class KafkaBrokerList(BaseModel):
    kind: str = "KafkaBrokerList"
    metadata: ListMetadata
    data: list[KafkaBroker]


# ------------------------------------------------------------------ topics


class KafkaTopic(BaseModel):
    """A topic. ``topic_id`` is null only in a validate_only answer (nothing was created).
    ``replication_factor`` is partition 0's, counting the target of a reassignment in
    progress; ``chunks_count`` counts every chunk, the partitions' active chunks included."""

    kind: str = "KafkaTopic"
    metadata: ResourceMetadata
    topic_name: str
    topic_id: str | None
    is_internal: bool = False
    replication_factor: int
    partitions_count: int
    chunks_count: int
    partitions: Related


class KafkaTopicList(BaseModel):
    kind: str = "KafkaTopicList"
    metadata: ListMetadata
    data: list[KafkaTopic]


class ReplicaAssignment(RequestBody):
    """The replicas of one partition of a new topic, preferred leader first."""

    partition_id: Int32 = Field(json_schema_extra=_NOT_NEGATIVE)
    broker_ids: list[BrokerId] = Field(json_schema_extra={"minItems": 1, "uniqueItems": True})


class CreateTopicConfig(RequestBody):
    """A configuration of the new topic (Confluent's ``{name, value}``)."""

    name: ConfigName
    value: ConfigValue | None = None


class CreateTopicBody(RequestBody):
    """Create one topic: counts (absent: the controller's defaults) or a manual assignment of
    every partition (then no counts). ``validate_only`` answers 200 with the topic as it would
    be and creates nothing."""

    # A manual assignment leaves both counts out (or -1): Kafka's INVALID_REQUEST otherwise.
    model_config = ConfigDict(json_schema_extra={
        "if": {"required": ["replicas_assignments"],
               "properties": {"replicas_assignments": {"type": "array", "minItems": 1}}},
        "then": {"properties": {"partitions_count": {"enum": [None, -1]},
                                "replication_factor": {"enum": [None, -1]}}}})

    # The name's rules are declared, and checked by the route (INVALID_TOPIC_EXCEPTION).
    topic_name: str = Field(json_schema_extra=TOPIC_NAME_SCHEMA)
    partitions_count: Int32 | None = Field(default=None, json_schema_extra=_COUNT_OR_DEFAULT)
    replication_factor: Int16 | None = Field(default=None, json_schema_extra=_COUNT_OR_DEFAULT)
    replicas_assignments: list[ReplicaAssignment] | None = None
    configs: list[CreateTopicConfig] | None = Field(default=None,
                                                     max_length=MAX_CONFIG_ENTRIES)
    validate_only: StrictBool = False


class UpdateTopicBody(RequestBody):
    """Raise the topic's partition count to ``partitions_count`` (KIP-195: absolute)."""

    partitions_count: Int32 = Field(json_schema_extra=_POSITIVE)
    validate_only: StrictBool = False


# ------------------------------------------------------------------ partitions, replicas, chunks


class KafkaChunk(BaseModel):
    """A chunk of a partition; offsets are inclusive. The active chunk has ``is_active``,
    ``stop_offset`` = ``end_offset`` = -1, the partition's leader epoch as ``chunk_epoch`` and
    its leader; an inactive chunk has ``leader_id`` -1. In a partition's ``inactive_chunks``
    a chunk carries no ``kind`` and no ``metadata`` (its URL is the partition's ``chunks`` link
    and its start offset): that keeps the describe of a large topic half the size."""

    kind: str = "KafkaChunk"
    metadata: ResourceMetadata | None = None
    topic_name: str
    partition_id: int
    start_offset: int
    stop_offset: int
    end_offset: int
    start_timestamp: int
    chunk_epoch: int
    is_active: bool
    leader_id: int
    replica_ids: list[int]
    isr_ids: list[int]
    adding_replica_ids: list[int]
    removing_replica_ids: list[int]


class KafkaChunkList(BaseModel):
    kind: str = "KafkaChunkList"
    metadata: ListMetadata
    data: list[KafkaChunk]


class PriorPartitionEpoch(BaseModel):
    """KIP-253: a partition that existed before an expansion, and its leader epoch then."""

    partition_id: int
    leader_epoch: int


class KafkaPartition(BaseModel):
    """A partition and its active chunk (start offset and timestamp). ``leader`` is null when
    the partition has no leader. ``inactive_chunks`` (by start offset) only with
    ``include_chunks=true``."""

    kind: str = "KafkaPartition"
    metadata: ResourceMetadata
    topic_name: str
    partition_id: int
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    replica_ids: list[int]
    isr_ids: list[int]
    adding_replica_ids: list[int]
    removing_replica_ids: list[int]
    start_offset: int
    start_timestamp: int
    prior_partition_epochs: list[PriorPartitionEpoch]
    chunks_count: int
    leader: Related | None
    replicas: Related
    chunks: Related
    inactive_chunks: list[KafkaChunk] | None = None


class KafkaPartitionList(BaseModel):
    kind: str = "KafkaPartitionList"
    metadata: ListMetadata
    data: list[KafkaPartition]


class KafkaReplica(BaseModel):
    """A replica of a partition's active chunk."""

    kind: str = "KafkaReplica"
    metadata: ResourceMetadata
    topic_name: str
    partition_id: int
    broker_id: int
    is_leader: bool
    is_in_sync: bool
    broker: Related


class KafkaReplicaList(BaseModel):
    kind: str = "KafkaReplicaList"
    metadata: ListMetadata
    data: list[KafkaReplica]


# ------------------------------------------------------------------ batch operations


class CreatePartitionsItem(RequestBody):
    """One topic to expand: the new absolute count and, optionally, the replicas of each new
    partition (exactly one list per new partition, each of the replication factor)."""

    topic_name: str
    partitions_count: Int32
    assignments: list[list[Int32]] | None = None


class CreatePartitionsBody(RequestBody):
    """KIP-195 createPartitions over many topics. ``timeout_ms``: how long to wait for the
    change to commit; past it every topic answers REQUEST_TIMED_OUT (0 times out at once,
    as Kafka's controller does with a deadline already past)."""

    topics: list[CreatePartitionsItem]
    validate_only: StrictBool = False
    timeout_ms: Annotated[int, Field(ge=0, le=2**31 - 1, strict=True)] = 60_000


class CreatePartitionsResult(BaseModel):
    topic_name: str
    error_code: int
    error_name: str
    error_message: str | None


class CreatePartitionsResultList(BaseModel):
    kind: str = "CreatePartitionsResultList"
    metadata: ListMetadata
    data: list[CreatePartitionsResult]


class CreateChunkItem(RequestBody):
    """Cut one partition's active chunk (the KIP's create-chunk file, snake_case).

    With ``prev_stop_offset``, ``prev_end_offset`` and ``start_offset`` (all three), the cut
    goes to the controller's CreateChunks as given (``start_timestamp`` -1 if absent). Without
    offsets (the KIP's admin form) the partition's leader broker is asked to cut."""

    topic: str
    partition: Int32
    replicas: list[Int32]
    leader: Int32 | None = None
    prev_stop_offset: Int64 | None = None
    prev_end_offset: Int64 | None = None
    start_offset: Int64 | None = None
    start_timestamp: Int64 | None = None


class CreateChunksBody(RequestBody):
    partitions: list[CreateChunkItem]
    validate_only: StrictBool = False


class CreateChunksResult(BaseModel):
    topic_name: str
    partition_id: int
    error_code: int
    error_name: str
    error_message: str | None


class CreateChunksResultList(BaseModel):
    kind: str = "CreateChunksResultList"
    metadata: ListMetadata
    data: list[CreateChunksResult]


class AlterChunkItem(RequestBody):
    """Move the inactive chunk starting at ``start_offset`` to ``replicas``; ``chunk_epoch``
    other than -1 must be the chunk's current epoch."""

    topic: str
    partition: Int32
    start_offset: Int64
    chunk_epoch: Int32 = -1
    replicas: list[Int32]


class AlterChunkAssignmentsBody(RequestBody):
    chunks: list[AlterChunkItem]
    validate_only: StrictBool = False


class ChunkAssignmentResult(BaseModel):
    topic_name: str
    partition_id: int
    start_offset: int
    error_code: int
    error_name: str
    error_message: str | None


class ChunkAssignmentResultList(BaseModel):
    kind: str = "AlterChunkAssignmentsResultList"
    metadata: ListMetadata
    data: list[ChunkAssignmentResult]
