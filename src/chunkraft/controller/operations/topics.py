"""Topic operations: create_topics, delete_topics, and describe (the Metadata response).

Each is a pure function of (committed image, request) -> ControllerResult: it validates, builds
the records a success needs and the response, and changes nothing. Each topic succeeds or fails
on its own; a topic's records are all in the result or none are. Validation order and messages
follow Kafka's KRaft controller (``ControllerApis``, ``ReplicationControlManager``).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.controller.operations.configs import topic_config_records
from chunkraft.controller.operations.placement import (
    check_brokers_usable,
    place_replicas,
    validate_manual_assignment,
)
from chunkraft.controller.operations.record_budget import RecordBudget
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.topics import (
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponseChunk,
    MetadataResponsePartition,
    MetadataResponsePriorPartition,
    MetadataResponseTopic,
)
from chunkraft.records import PartitionRecord, RemoveTopicRecord, TopicRecord
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid, random_kafka_uuid
from chunkraft.records.validation import LEGAL_TOPIC_NAME, MAX_TOPIC_NAME_LENGTH

__all__ = [
    "DEFAULT_NUM_PARTITIONS",
    "DEFAULT_REPLICATION_FACTOR",
    "create_topics",
    "delete_topics",
    "describe",
    "new_partition_record",
    "topic_id_key",
    "validate_topic_name",
]

DEFAULT_NUM_PARTITIONS = 1
"""Kafka's ``num.partitions`` default, used for ``num_partitions = -1``."""
DEFAULT_REPLICATION_FACTOR = 1
"""Kafka's ``default.replication.factor`` default, used for ``replication_factor = -1``."""

_DUPLICATE_NAME = "Duplicate topic name."


def validate_topic_name(name: str) -> None:
    """Raises ApiException(INVALID_TOPIC_EXCEPTION) with Kafka's message for an illegal name."""
    if not name:
        raise Errors.INVALID_TOPIC_EXCEPTION.exception("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise Errors.INVALID_TOPIC_EXCEPTION.exception('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise Errors.INVALID_TOPIC_EXCEPTION.exception(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}"
        )
    if not LEGAL_TOPIC_NAME.fullmatch(name):
        raise Errors.INVALID_TOPIC_EXCEPTION.exception(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )


def _unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def new_partition_record(
    topic_id: uuid.UUID, partition_id: int, replicas: tuple[int, ...], **fields: Any
) -> PartitionRecord:
    """A new partition: ISR = replicas, the first replica leads at epoch 0, and its active
    chunk starts at offset 0 with no timestamp yet (-1). ``fields`` add e.g. prior epochs."""
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=replicas,
        leader=replicas[0],
        leader_epoch=0,
        partition_epoch=0,
        start_offset=0,
        start_timestamp=-1,
        **fields,
    )


# ------------------------------------------------------------------ create_topics


class _TopicCreation:
    """The state one create_topics call shares across its topics."""

    def __init__(
        self,
        image: MetadataImage,
        default_num_partitions: int,
        default_replication_factor: int,
        new_topic_id: Callable[[], uuid.UUID],
    ) -> None:
        self.image = image
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self.new_topic_id = new_topic_id
        self.budget = RecordBudget()
        self.used_ids: set[uuid.UUID] = set()
        self.collisions: dict[str, str] | None = None  # unified name -> a topic with it

    def collision_of(self, name: str) -> str | None:
        if "." not in name and "_" not in name:
            return None
        if self.collisions is None:
            self.collisions = {}
            for existing in self.image.topics.by_name:
                if "." in existing or "_" in existing:
                    self.collisions.setdefault(_unify_collision_chars(existing), existing)
        return self.collisions.get(_unify_collision_chars(name))

    def add_collision_name(self, name: str) -> None:
        if self.collisions is not None and ("." in name or "_" in name):
            self.collisions.setdefault(_unify_collision_chars(name), name)

    def fresh_topic_id(self) -> uuid.UUID:
        while True:
            topic_id = self.new_topic_id()
            if topic_id not in self.used_ids and self.image.topics.get(topic_id) is None:
                self.used_ids.add(topic_id)
                return topic_id

    def create(self, topic: CreatableTopic) -> tuple[list[Any], CreatableTopicResult]:
        """The records and result of one topic; raises ApiException if it cannot be created."""
        name = topic.name
        validate_topic_name(name)
        if self.image.topics.get_by_name(name) is not None:
            raise Errors.TOPIC_ALREADY_EXISTS.exception(f"Topic '{name}' already exists.")
        colliding = self.collision_of(name)
        if colliding is not None:
            raise Errors.INVALID_TOPIC_EXCEPTION.exception(
                f"Topic '{name}' collides with existing topic: {colliding}"
            )
        placements = (
            self._manual_placements(topic) if topic.assignments else self._placed(topic)
        )
        configs = topic_config_records(self.image, name, topic.configs)
        topic_id = self.fresh_topic_id()
        records: list[Any] = [TopicRecord(name=name, topic_id=topic_id), *configs]
        records.extend(
            new_partition_record(topic_id, index, replicas)
            for index, replicas in enumerate(placements)
        )
        self.budget.check(len(records), f"Creating topic '{topic.name}'")
        self.budget.spend(len(records))
        self.add_collision_name(name)
        result = CreatableTopicResult(
            name=name,
            topic_id=kafka_uuid_str(topic_id),
            num_partitions=len(placements),
            replication_factor=len(placements[0]),
        )
        return records, result

    def _manual_placements(self, topic: CreatableTopic) -> list[tuple[int, ...]]:
        if topic.replication_factor != -1:
            raise Errors.INVALID_REQUEST.exception(
                "A manual partition assignment was specified, but replication factor was not "
                "set to -1."
            )
        if topic.num_partitions != -1:
            raise Errors.INVALID_REQUEST.exception(
                "A manual partition assignment was specified, but numPartitions was not set "
                "to -1."
            )
        # A count, checked before the assignments, whose checks cost per broker id.
        self.budget.check(1 + len(topic.assignments), f"Creating topic '{topic.name}'")
        by_index: dict[int, tuple[int, ...]] = {}
        replication_factor: int | None = None
        subject = "manual partition assignment"
        for assignment in topic.assignments:
            if assignment.partition_index in by_index:
                raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                    "Found multiple manual partition assignments for partition "
                    f"{assignment.partition_index}"
                )
            replicas = assignment.broker_ids
            validate_manual_assignment(self.image, replicas, subject)
            if replication_factor is not None and len(replicas) != replication_factor:
                raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                    f"The manual partition assignment includes a partition with {len(replicas)} "
                    "replica(s), but this is not consistent with previous partitions, which "
                    f"have {replication_factor} replica(s)."
                )
            replication_factor = len(replicas)
            check_brokers_usable(self.image, replicas, subject)
            by_index[assignment.partition_index] = replicas
        for index in range(len(by_index)):
            if index not in by_index:
                raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                    "partitions should be a consecutive 0-based integer sequence"
                )
        self.budget.check(1 + len(by_index), f"Creating topic '{topic.name}'")
        return [by_index[index] for index in range(len(by_index))]

    def _placed(self, topic: CreatableTopic) -> list[tuple[int, ...]]:
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            raise Errors.INVALID_REPLICATION_FACTOR.exception(
                "Replication factor must be larger than 0, or -1 to use the default value."
            )
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise Errors.INVALID_PARTITIONS.exception(
                "Number of partitions was set to an invalid non-positive value."
            )
        num_partitions = (
            self.default_num_partitions if topic.num_partitions == -1 else topic.num_partitions
        )
        replication_factor = (
            self.default_replication_factor
            if topic.replication_factor == -1
            else topic.replication_factor
        )
        self.budget.check(1 + num_partitions, f"Creating topic '{topic.name}'")
        return place_replicas(
            self.image, num_partitions, replication_factor, f"{self.image.offset}/{topic.name}"
        )


def create_topics(
    image: MetadataImage,
    request: CreateTopicsRequest,
    *,
    default_num_partitions: int = DEFAULT_NUM_PARTITIONS,
    default_replication_factor: int = DEFAULT_REPLICATION_FACTOR,
    new_topic_id: Callable[[], uuid.UUID] = random_kafka_uuid,
) -> ControllerResult[CreateTopicsResponse]:
    """CreateTopics: a TopicRecord and its PartitionRecords for each topic that validates.

    Per topic, in order: a name given twice in the request -> INVALID_REQUEST; an illegal name
    or one that collides with an existing topic ('.' vs '_') -> INVALID_TOPIC_EXCEPTION; an
    existing topic -> TOPIC_ALREADY_EXISTS; then either the manual assignments (replication
    factor and partition count must be -1 -> INVALID_REQUEST; duplicate, inconsistent or
    non-consecutive partitions, unknown, repeated, fenced or shutting-down brokers ->
    INVALID_REPLICA_ASSIGNMENT) or the counts (INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS)
    and placement (INVALID_REPLICATION_FACTOR); its ``configs`` (a key given twice ->
    INVALID_REQUEST; an unknown key, a bad or null value -> INVALID_CONFIG), written as
    ConfigRecords in the topic's batch; a topic that would take the operation past 10,000
    records -> POLICY_VIOLATION. New partitions start with ISR = replicas, the first replica
    as leader at epoch 0 and their active chunk at offset 0.

    ``new_topic_id`` draws topic ids (a fresh one is drawn on a clash). ``validate_only``
    answers the same outcomes (without topic ids) and returns no records.
    """
    creation = _TopicCreation(image, default_num_partitions, default_replication_factor,
                              new_topic_id)
    names = Counter(topic.name for topic in request.topics)
    results: dict[str, CreatableTopicResult] = {}
    records: list[Any] = []
    for topic in request.topics:
        name = topic.name
        if name in results:
            continue
        if names[name] > 1:
            results[name] = _create_error(name, Errors.INVALID_REQUEST.exception(_DUPLICATE_NAME))
            continue
        try:
            topic_records, result = creation.create(topic)
        except ApiException as exc:
            results[name] = _create_error(name, exc)
            continue
        records.extend(topic_records)
        if request.validate_only:
            result = result.model_copy(update={"topic_id": None})  # nothing was created
        results[name] = result
    response = CreateTopicsResponse(topics=tuple(results.values()))
    return ControllerResult.of(response, () if request.validate_only else records)


def _create_error(name: str, exc: ApiException) -> CreatableTopicResult:
    return CreatableTopicResult(name=name, error_code=exc.code, error_message=exc.message)


# ------------------------------------------------------------------ delete_topics


def delete_topics(
    image: MetadataImage, request: DeleteTopicsRequest
) -> ControllerResult[DeleteTopicsResponse]:
    """DeleteTopics: a RemoveTopicRecord per topic that exists (its partitions and chunks go
    with it at replay).

    Checks, as Kafka's controller does: an entry with both a name and an id, or neither ->
    INVALID_REQUEST; a name or id given twice -> INVALID_REQUEST ("Duplicate topic name." /
    "Duplicate topic id."); an id that is not a uuid -> INVALID_REQUEST; an unknown name ->
    UNKNOWN_TOPIC_OR_PARTITION; an unknown id -> UNKNOWN_TOPIC_ID; a name that resolves to an
    id also given -> INVALID_REQUEST; past 10,000 records -> POLICY_VIOLATION. Results come one
    per distinct requested topic: ``topic_names`` first, then ``topics``, in request order.
    """
    entries: list[tuple[str | None, str | None]] = [(name, None) for name in request.topic_names]
    entries.extend((state.name, state.topic_id) for state in request.topics)
    name_counts = Counter(name for name, topic_id in entries if name is not None and not topic_id)
    # Ids count by value: the hex and the base64 form of one id are the same topic.
    id_counts = Counter(topic_id_key(topic_id) for name, topic_id in entries
                        if topic_id and name is None)

    results: list[DeletableTopicResult] = []
    reported_names: set[str] = set()
    reported_ids: set[uuid.UUID | str] = set()
    resolved: list[tuple[int, TopicImage, bool]] = []  # (result index, topic, by name)

    def fail(name: str | None, topic_id: str | None, error: Errors, message: str) -> None:
        results.append(DeletableTopicResult(name=name, topic_id=topic_id,
                                            error_code=error.code, error_message=message))

    for name, id_text in entries:
        if name is not None and id_text:
            fail(name, id_text, Errors.INVALID_REQUEST,
                 "You may not specify both topic name and topic id.")
        elif name is None and not id_text:
            fail(None, None, Errors.INVALID_REQUEST, "Neither topic name nor id were specified.")
        elif name is not None:
            if name in reported_names:
                continue
            reported_names.add(name)
            if name_counts[name] > 1:
                fail(name, None, Errors.INVALID_REQUEST, _DUPLICATE_NAME)
                continue
            topic = image.topics.get_by_name(name)
            if topic is None:
                fail(name, None, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                     f"Topic '{name}' does not exist.")
                continue
            resolved.append((len(results), topic, True))
            results.append(DeletableTopicResult(name=name, topic_id=kafka_uuid_str(topic.topic_id)))
        else:
            assert id_text is not None
            key = topic_id_key(id_text)
            if key in reported_ids:
                continue
            reported_ids.add(key)
            if id_counts[key] > 1:
                fail(None, id_text, Errors.INVALID_REQUEST, "Duplicate topic id.")
                continue
            if not isinstance(key, uuid.UUID):
                fail(None, id_text, Errors.INVALID_REQUEST, f"Invalid topic id {id_text!r}.")
                continue
            found = image.topics.get(key)
            if found is None:
                fail(None, id_text, Errors.UNKNOWN_TOPIC_ID,
                     f"Topic id {id_text} does not exist.")
                continue
            resolved.append((len(results), found, False))
            results.append(DeletableTopicResult(name=found.name, topic_id=id_text))

    by_id = {topic.topic_id for _, topic, by_name in resolved if not by_name}
    budget = RecordBudget()
    records: list[Any] = []
    for index, topic, by_name in resolved:
        result = results[index]
        error: ApiException | None = None
        if by_name and topic.topic_id in by_id:
            error = Errors.INVALID_REQUEST.exception(
                "The provided topic name maps to an ID that was already supplied."
            )
        else:
            try:
                budget.check(1, f"Deleting topic '{topic.name}'")
            except ApiException as exc:
                error = exc
        if error is not None:
            results[index] = result.model_copy(
                update={"error_code": error.code, "error_message": error.message}
            )
            continue
        budget.spend(1)
        records.append(RemoveTopicRecord(topic_id=topic.topic_id))
    return ControllerResult.of(DeleteTopicsResponse(responses=tuple(results)), records)


def topic_id_key(text: str) -> uuid.UUID | str:
    """The uuid a topic id text names, or the text itself if it names none."""
    try:
        return parse_kafka_uuid(text)
    except ValueError:
        return text


# ------------------------------------------------------------------ describe


def describe(
    image: MetadataImage,
    request: MetadataRequest,
    *,
    cluster_id: str | None,
    controller_id: int,
) -> ControllerResult[MetadataResponse]:
    """Metadata v13 from the image: brokers, the requested topics (all for null) with their
    partitions (active chunks), KIP-253 prior partition epochs and, if asked, inactive chunks.

    A read: no records. A topic asked by id that is unknown -> UNKNOWN_TOPIC_ID, by name ->
    UNKNOWN_TOPIC_OR_PARTITION, by neither or by a malformed id -> INVALID_REQUEST. A
    partition whose leader is -1, fenced or unregistered -> LEADER_NOT_AVAILABLE, with the
    rest of its state; offline replicas are those on fenced or unregistered brokers.
    ``metadata_offset`` is the image offset the answer reflects.
    """
    brokers = tuple(_broker(registration) for registration in image.brokers)
    online = {b.broker_id for b in image.brokers if not b.fenced}
    topics: list[MetadataResponseTopic] = []
    if request.topics is None:
        topics.extend(_topic(t, online, request.include_chunks) for t in image.topics)
    else:
        seen: set[tuple[str | None, str | None]] = set()
        for wanted in request.topics:
            key = (wanted.name, wanted.topic_id)
            if key in seen:
                continue
            seen.add(key)
            topics.append(_requested_topic(image, wanted, online, request.include_chunks))
    response = MetadataResponse(
        cluster_id=cluster_id,
        controller_id=controller_id,
        brokers=brokers,
        topics=tuple(topics),
        metadata_offset=image.offset,
    )
    return ControllerResult.of(response)


def _broker(registration: Any) -> MetadataResponseBroker:
    endpoint = registration.end_points[0] if registration.end_points else None
    return MetadataResponseBroker(
        node_id=registration.broker_id,
        host=endpoint.host if endpoint is not None else "",
        port=endpoint.port if endpoint is not None else 0,
        rack=registration.rack,
        fenced=registration.fenced,
    )


def _requested_topic(
    image: MetadataImage, wanted: MetadataRequestTopic, online: set[int], include_chunks: bool
) -> MetadataResponseTopic:
    if wanted.topic_id:
        try:
            topic_id = parse_kafka_uuid(wanted.topic_id)
        except ValueError:
            return _unknown(Errors.INVALID_REQUEST, f"Invalid topic id {wanted.topic_id!r}.",
                            wanted)
        by_id = image.topics.get(topic_id)
        if by_id is None:
            return _unknown(Errors.UNKNOWN_TOPIC_ID, f"Topic id {wanted.topic_id} does not exist.",
                            wanted)
        return _topic(by_id, online, include_chunks)
    if wanted.name is None:
        return _unknown(Errors.INVALID_REQUEST, "Neither topic name nor id were specified.",
                        wanted)
    by_name = image.topics.get_by_name(wanted.name)
    if by_name is None:
        return _unknown(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Topic '{wanted.name}' does not exist.", wanted)
    return _topic(by_name, online, include_chunks)


def _unknown(error: Errors, message: str, wanted: MetadataRequestTopic) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=error.code, error_message=message, name=wanted.name,
                                 topic_id=wanted.topic_id)


def _topic(topic: TopicImage, online: set[int], include_chunks: bool) -> MetadataResponseTopic:
    partitions = tuple(
        _partition(topic, topic.partitions[p], online, include_chunks)
        for p in sorted(topic.partitions)
    )
    return MetadataResponseTopic(name=topic.name, topic_id=kafka_uuid_str(topic.topic_id),
                                 partitions=partitions)


def _partition(
    topic: TopicImage, partition: PartitionRecord, online: set[int], include_chunks: bool
) -> MetadataResponsePartition:
    leader_ok = partition.leader in online
    chunks = (
        tuple(
            MetadataResponseChunk(
                start_offset=c.start_offset,
                start_timestamp=c.start_timestamp,
                stop_offset=c.stop_offset,
                end_offset=c.end_offset,
                chunk_epoch=c.chunk_epoch,
                replicas=c.replicas,
                isr=c.isr,
                adding_replicas=c.adding_replicas,
                removing_replicas=c.removing_replicas,
            )
            for c in topic.chunks_of(partition.partition_id)
        )
        if include_chunks
        else ()
    )
    return MetadataResponsePartition(
        error_code=Errors.NONE.code if leader_ok else Errors.LEADER_NOT_AVAILABLE.code,
        partition_index=partition.partition_id,
        leader_id=partition.leader,
        leader_epoch=partition.leader_epoch,
        replica_nodes=partition.replicas,
        isr_nodes=partition.isr,
        offline_replicas=tuple(r for r in partition.replicas if r not in online),
        start_offset=partition.start_offset,
        start_timestamp=partition.start_timestamp,
        prior_partition_epochs=tuple(
            MetadataResponsePriorPartition(partition_index=p.partition_id,
                                           leader_epoch=p.leader_epoch)
            for p in partition.prior_partition_epochs
        ),
        chunks=chunks,
    )

