"""create_partitions: KIP-195 partition expansion with KIP-253's leader epoch bookkeeping.

A pure function of (committed image, request) -> ControllerResult. For a topic that validates,
the result holds, in this order:

1. for every existing partition, a PartitionChangeRecord whose ``leader`` is the partition's
   current leader. Replay treats any leader other than -2 as a leader change and bumps the
   leader epoch by exactly one (and the partition epoch by one) while the leader stays the same;
   a partition without a leader (-1) gets leader -1, which replay also counts as a change, so
   its epoch is bumped too and it stays leaderless;
2. for every new partition, a PartitionRecord (ISR = replicas, first replica leads at epoch 0,
   active chunk at offset 0) whose ``prior_partition_epochs`` maps each existing partition to
   its leader epoch *before* the bump.

A consumer of a new partition turns those prior epochs into offset thresholds (KIP-253); a
broker that sees the bump learns the new partition count. Each topic's records are all in the
result or none are.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.controller.operations.placement import (
    check_brokers_usable,
    place_replicas,
    validate_manual_assignment,
)
from chunkraft.controller.operations.record_budget import (
    MAX_PRIOR_EPOCHS_PER_USER_OP,
    RecordBudget,
)
from chunkraft.controller.operations.topics import (
    new_partition_record,
    validate_topic_name,
)
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)
from chunkraft.records import PartitionChangeRecord, PartitionRecord, PriorPartitionEpoch

__all__ = ["create_partitions"]


def create_partitions(
    image: MetadataImage, request: CreatePartitionsRequest
) -> ControllerResult[CreatePartitionsResponse]:
    """CreatePartitions (KIP-195): raise each topic's partition count to ``count``.

    Per topic, in Kafka's order: a name given twice -> INVALID_REQUEST "Duplicate topic name.";
    an illegal name (empty, over 249 characters, a character outside ``[a-zA-Z0-9._-]``, ``.``
    or ``..``) -> INVALID_TOPIC_EXCEPTION with Kafka's message; unknown topic ->
    UNKNOWN_TOPIC_OR_PARTITION; ``count`` equal to the current count ->
    INVALID_PARTITIONS "Topic already has N partition(s)."; smaller -> INVALID_PARTITIONS "The
    topic T currently has N partition(s); M would not be an increase."; assignments given but
    not one per new partition -> INVALID_REPLICA_ASSIGNMENT "Attempted to add X additional
    partition(s), but only Y assignment(s) were specified."; more records than the operation
    has left of its 10,000, or more KIP-253 prior partition epochs (existing x new partitions)
    than it has left of its 100,000 -> POLICY_VIOLATION (counts, so checked before the
    assignments); each assignment: empty, an unregistered broker, a broker twice, a length other
    than the topic's replication factor, a fenced or shutting-down broker ->
    INVALID_REPLICA_ASSIGNMENT; without assignments, placement over the usable brokers ->
    INVALID_REPLICATION_FACTOR if there are too few.

    The replication factor is that of partition 0, counting the target replicas of a
    reassignment in progress (replicas minus removing replicas). ``validate_only`` answers the
    same outcomes and returns no records. Results come one per distinct name, in request order.
    """
    names = Counter(topic.name for topic in request.topics)
    budget = RecordBudget()
    prior_budget = RecordBudget(MAX_PRIOR_EPOCHS_PER_USER_OP, "prior partition epochs")
    results: dict[str, CreatePartitionsTopicResult] = {}
    records: list[Any] = []
    for topic in request.topics:
        name = topic.name
        if name in results:
            continue
        if names[name] > 1:
            results[name] = CreatePartitionsTopicResult(
                name=name, error_code=Errors.INVALID_REQUEST.code,
                error_message="Duplicate topic name.",
            )
            continue
        try:
            topic_records = _expand(image, topic, budget, prior_budget)
        except ApiException as exc:
            results[name] = CreatePartitionsTopicResult(
                name=name, error_code=exc.code, error_message=exc.message
            )
            continue
        budget.spend(len(topic_records))
        prior_budget.spend(_prior_epochs(topic_records))
        records.extend(topic_records)
        results[name] = CreatePartitionsTopicResult(name=name)
    response = CreatePartitionsResponse(results=tuple(results.values()))
    return ControllerResult.of(response, () if request.validate_only else records)


def _prior_epochs(records: list[Any]) -> int:
    return sum(len(r.prior_partition_epochs) for r in records if isinstance(r, PartitionRecord))


def _expand(
    image: MetadataImage,
    request: CreatePartitionsTopic,
    budget: RecordBudget,
    prior_budget: RecordBudget,
) -> list[Any]:
    """The records of one topic's expansion; raises ApiException if it is refused."""
    name = request.name
    validate_topic_name(name)  # an illegal name is INVALID_TOPIC_EXCEPTION, not unknown
    topic = image.topics.get_by_name(name)
    if topic is None:
        raise Errors.UNKNOWN_TOPIC_OR_PARTITION.exception(f"Topic '{name}' does not exist.")
    existing = len(topic.partitions)
    if request.count == existing:
        raise Errors.INVALID_PARTITIONS.exception(f"Topic already has {existing} partition(s).")
    if request.count < existing:
        raise Errors.INVALID_PARTITIONS.exception(
            f"The topic {name} currently has {existing} partition(s); {request.count} would "
            "not be an increase."
        )
    additional = request.count - existing
    assignments = request.assignments
    if assignments is not None and len(assignments) != additional:
        raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified."
        )
    partition_ids = sorted(topic.partitions)
    if not partition_ids or partition_ids[-1] != existing - 1:
        raise Errors.UNKNOWN_SERVER_ERROR.exception(
            f"Invalid state: topic {name} does not have partitions 0..{existing - 1}."
        )
    first = topic.partitions[partition_ids[0]]
    replication_factor = len(first.replicas) - len(first.removing_replicas)
    # The budgets are counts: checked before the assignments, whose checks cost per broker id,
    # so an expansion too large to write is refused without looking at any of them.
    what = f"Adding {additional} partition(s) to topic '{name}'"
    budget.check(
        existing + additional,
        f"{what} ({existing} leader epoch bumps and {additional} new partitions)",
    )
    prior_budget.check(
        existing * additional,
        f"{what} (each new partition lists the epochs of the {existing} existing ones)",
    )
    placements: list[tuple[int, ...]] = []
    if assignments is not None:
        subject = "manual partition assignment"
        for assignment in assignments:
            replicas = assignment.broker_ids
            validate_manual_assignment(image, replicas, subject)
            if len(replicas) != replication_factor:
                raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                    f"The manual partition assignment includes a partition with {len(replicas)} "
                    "replica(s), but this is not consistent with previous partitions, which "
                    f"have {replication_factor} replica(s)."
                )
            check_brokers_usable(image, replicas, subject)
            placements.append(replicas)
    if assignments is None:
        placements = place_replicas(image, additional, replication_factor,
                                    f"{image.offset}/{name}")
    return _expansion_records(topic, partition_ids, placements)


def _expansion_records(
    topic: TopicImage, partition_ids: list[int], placements: list[tuple[int, ...]]
) -> list[Any]:
    partitions = topic.partitions
    prior = tuple(
        PriorPartitionEpoch(partition_id=p, leader_epoch=partitions[p].leader_epoch)
        for p in partition_ids
    )
    records: list[Any] = [
        PartitionChangeRecord(partition_id=p, topic_id=topic.topic_id, leader=partitions[p].leader)
        for p in partition_ids
    ]
    start = len(partition_ids)
    records.extend(
        new_partition_record(topic.topic_id, start + i, replicas, prior_partition_epochs=prior)
        for i, replicas in enumerate(placements)
    )
    return records
