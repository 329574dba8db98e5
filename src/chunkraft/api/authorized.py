"""Operations run as a principal: per-topic authorization inside the operation, Kafka's way.

Each wrapper returns an :data:`~chunkraft.controller.result.Operation` that first decides, on
the image the operation is about to validate against, which items the principal may touch; the
others are answered TOPIC_AUTHORIZATION_FAILED and never reach the operation. The order of
checks is Kafka's ``ControllerApis``: an item named twice is left to the operation (it answers
INVALID_REQUEST, whoever asks), then authorization, then the operation's own validation.
Results keep the request's order.

Checking inside the operation (and not in the HTTP handler) means the leader decides with the
ACLs it commits on top of, including ACL changes still in flight ahead of this write.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations import topics
from chunkraft.controller.operations.chunks import alter_chunk_assignments, create_chunks
from chunkraft.controller.operations.create_partitions import create_partitions
from chunkraft.controller.result import ControllerResult, Operation
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.protocol.chunks import (
    AlterChunkAssignmentResult,
    AlterChunkAssignmentsRequest,
    AlterChunkAssignmentsResponse,
    CreateChunksPartitionResult,
    CreateChunksRequest,
    CreateChunksResponse,
    CreateChunksTopic,
    CreateChunksTopicResult,
)
from chunkraft.protocol.topics import (
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicState,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseTopic,
)
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal

__all__ = [
    "alter_chunk_assignments_as",
    "create_chunks_as",
    "create_partitions_as",
    "create_topics_as",
    "delete_topics_as",
    "denied_message",
    "describe_as",
]

R = TypeVar("R")
Named = TypeVar("Named", CreatableTopicResult, CreatePartitionsTopicResult)

TopicCheck = Callable[[str], bool]
"""Whether the principal may perform the wrapper's operation on the named topic."""


def denied_message(principal: Principal, operation: AclOperation, topic: str) -> str:
    return f"Principal {principal.name} is not authorized to {operation.name} topic '{topic}'."


def _open(principal: Principal, authorizer: Authorizer | None) -> bool:
    """No check needed: no authorizer (in-process tests of other layers) or a super user."""
    return authorizer is None or authorizer.is_super_user(principal)


def _topic_check(image: MetadataImage, principal: Principal, authorizer: Authorizer,
                 operation: AclOperation) -> TopicCheck:
    def allowed(name: str) -> bool:
        return authorizer.authorize(image, principal, operation, AclResourceType.TOPIC, name)

    return allowed


# ------------------------------------------------------------------ CreateTopics


def create_topics_as(principal: Principal, authorizer: Authorizer | None,
                     request: CreateTopicsRequest) -> Operation[CreateTopicsResponse]:
    """CreateTopics needing CREATE on the cluster, or else CREATE on each topic."""
    if _open(principal, authorizer):
        return lambda image: topics.create_topics(image, request)
    assert authorizer is not None

    def operation(image: MetadataImage) -> ControllerResult[CreateTopicsResponse]:
        if authorizer.authorize_cluster(image, principal, AclOperation.CREATE):
            return topics.create_topics(image, request)
        allowed = _topic_check(image, principal, authorizer, AclOperation.CREATE)
        denied = _denied_names([t.name for t in request.topics], allowed)
        if not denied:
            return topics.create_topics(image, request)
        kept = tuple(t for t in request.topics if t.name not in denied)
        result = topics.create_topics(image, request.model_copy(update={"topics": kept}))
        merged = _merged_by_name(
            [t.name for t in request.topics], denied, result.response.topics,
            lambda name: CreatableTopicResult(
                name=name, error_code=Errors.TOPIC_AUTHORIZATION_FAILED.code,
                error_message=denied_message(principal, AclOperation.CREATE, name)))
        return _with_response(result, result.response.model_copy(update={"topics": merged}))

    return operation


# ------------------------------------------------------------------ CreatePartitions


def create_partitions_as(principal: Principal, authorizer: Authorizer | None,
                         request: CreatePartitionsRequest) -> Operation[CreatePartitionsResponse]:
    """CreatePartitions needing ALTER on each topic."""
    if _open(principal, authorizer):
        return lambda image: create_partitions(image, request)
    assert authorizer is not None

    def operation(image: MetadataImage) -> ControllerResult[CreatePartitionsResponse]:
        allowed = _topic_check(image, principal, authorizer, AclOperation.ALTER)
        denied = _denied_names([t.name for t in request.topics], allowed)
        if not denied:
            return create_partitions(image, request)
        kept = tuple(t for t in request.topics if t.name not in denied)
        result = create_partitions(image, request.model_copy(update={"topics": kept}))
        merged = _merged_by_name(
            [t.name for t in request.topics], denied, result.response.results,
            lambda name: CreatePartitionsTopicResult(
                name=name, error_code=Errors.TOPIC_AUTHORIZATION_FAILED.code,
                error_message=denied_message(principal, AclOperation.ALTER, name)))
        return _with_response(result, result.response.model_copy(update={"results": merged}))

    return operation


# ------------------------------------------------------------------ DeleteTopics


def delete_topics_as(principal: Principal, authorizer: Authorizer | None,
                     request: DeleteTopicsRequest) -> Operation[DeleteTopicsResponse]:
    """DeleteTopics needing DELETE on each topic, as Kafka checks it.

    By name: a topic the principal may not DESCRIBE, or may describe but not DELETE ->
    TOPIC_AUTHORIZATION_FAILED (whether it exists or not, so names do not leak). By id: the id
    of a topic the principal may not DESCRIBE -> UNKNOWN_TOPIC_ID, as for an unknown id.
    """
    if _open(principal, authorizer):
        return lambda image: topics.delete_topics(image, request)
    assert authorizer is not None

    def operation(image: MetadataImage) -> ControllerResult[DeleteTopicsResponse]:
        describable = _topic_check(image, principal, authorizer, AclOperation.DESCRIBE)
        deletable = _topic_check(image, principal, authorizer, AclOperation.DELETE)
        entries: list[tuple[str | None, str | None]] = [(n, None) for n in request.topic_names]
        entries.extend((s.name, s.topic_id) for s in request.topics)
        names = Counter(n for n, i in entries if n is not None and not i)
        ids = Counter(_id_key(i) for n, i in entries if i and n is None)

        def refusal(name: str | None, id_text: str | None) -> DeletableTopicResult | None:
            if name is not None and not id_text:
                if names[name] > 1:
                    return None
                if not describable(name) or not deletable(name):
                    return DeletableTopicResult(
                        name=name, error_code=Errors.TOPIC_AUTHORIZATION_FAILED.code,
                        error_message=denied_message(principal, AclOperation.DELETE, name))
            elif id_text and name is None:
                key = _id_key(id_text)
                found = image.topics.get(key) if isinstance(key, uuid.UUID) else None
                if ids[key] > 1 or found is None:
                    return None
                if not describable(found.name):
                    return DeletableTopicResult(
                        topic_id=id_text, error_code=Errors.UNKNOWN_TOPIC_ID.code,
                        error_message=f"Topic id {id_text} does not exist.")
                if not deletable(found.name):
                    return DeletableTopicResult(
                        name=found.name, topic_id=id_text,
                        error_code=Errors.TOPIC_AUTHORIZATION_FAILED.code,
                        error_message=denied_message(principal, AclOperation.DELETE,
                                                     found.name))
            return None

        refusals = [refusal(name, id_text) for name, id_text in entries]
        if not any(refusals):
            return topics.delete_topics(image, request)
        # Names and ids alike as topic states, in entry order (names first, as the operation
        # orders them), without the refused entries; each refused entry is the only one of
        # its name or id, so the operation answers every other entry as it would have.
        kept = tuple(DeleteTopicState(name=name, topic_id=id_text)
                     for (name, id_text), refused in zip(entries, refusals, strict=True)
                     if refused is None)
        result = topics.delete_topics(image, DeleteTopicsRequest(
            topics=kept, timeout_ms=request.timeout_ms))
        answers = iter(result.response.responses)
        merged = [refused if refused is not None else next(answers)
                  for refused in _answered(entries, refusals)]
        return _with_response(result, result.response.model_copy(
            update={"responses": tuple(merged)}))

    return operation


def _answered(entries: list[tuple[str | None, str | None]],
              refusals: list[DeletableTopicResult | None]
              ) -> Iterator[DeletableTopicResult | None]:
    """For each entry DeleteTopics answers (it answers a name or an id once), its refusal or
    None; mirrors the operation's own de-duplication."""
    seen_names: set[str] = set()
    seen_ids: set[object] = set()
    for (name, id_text), refused in zip(entries, refusals, strict=True):
        if name is not None and not id_text:
            if name in seen_names:
                continue
            seen_names.add(name)
        elif name is None and id_text:
            key = _id_key(id_text)
            if key in seen_ids:
                continue
            seen_ids.add(key)
        yield refused


# ------------------------------------------------------------------ CreateChunks


def create_chunks_as(principal: Principal, authorizer: Authorizer | None,
                     request: CreateChunksRequest) -> Operation[CreateChunksResponse]:
    """CreateChunks: from a broker (``broker_id`` >= 0), the broker's own principal with
    CLUSTER_ACTION (else the whole request fails CLUSTER_AUTHORIZATION_FAILED); from an admin,
    ALTER on each topic."""
    if _open(principal, authorizer):
        return lambda image: create_chunks(image, request)
    assert authorizer is not None

    def operation(image: MetadataImage) -> ControllerResult[CreateChunksResponse]:
        if request.broker_id >= 0:
            if authorizer.may_act_as_broker(image, principal, request.broker_id):
                return create_chunks(image, request)
            message = f"Principal {principal.name} may not act as broker {request.broker_id}."
            return ControllerResult.of(CreateChunksResponse(
                error_code=Errors.CLUSTER_AUTHORIZATION_FAILED.code, error_message=message,
                topics=tuple(CreateChunksTopicResult(name=t.name, partitions=tuple(
                    CreateChunksPartitionResult(
                        partition_index=p.partition_index,
                        error_code=Errors.CLUSTER_AUTHORIZATION_FAILED.code,
                        error_message=message)
                    for p in t.partitions)) for t in request.topics)))
        allowed = _topic_check(image, principal, authorizer, AclOperation.ALTER)
        keys = Counter((t.name, p.partition_index) for t in request.topics
                       for p in t.partitions)
        denied = {t.name for t in request.topics if not allowed(t.name)}
        if not denied:
            return create_chunks(image, request)

        def refused(name: str, index: int) -> bool:
            return name in denied and keys[(name, index)] == 1

        kept = tuple(CreateChunksTopic(name=t.name, partitions=tuple(
            p for p in t.partitions if not refused(t.name, p.partition_index)))
            for t in request.topics)
        result = create_chunks(image, request.model_copy(update={"topics": kept}))
        merged: list[CreateChunksTopicResult] = []
        for topic, answered in zip(request.topics, result.response.topics, strict=True):
            answers = iter(answered.partitions)
            merged.append(CreateChunksTopicResult(name=topic.name, partitions=tuple(
                CreateChunksPartitionResult(
                    partition_index=p.partition_index,
                    error_code=Errors.TOPIC_AUTHORIZATION_FAILED.code,
                    error_message=denied_message(principal, AclOperation.ALTER, topic.name))
                if refused(topic.name, p.partition_index) else next(answers)
                for p in topic.partitions)))
        return _with_response(result, result.response.model_copy(
            update={"topics": tuple(merged)}))

    return operation


# ------------------------------------------------------------------ AlterChunkAssignments


def alter_chunk_assignments_as(
        principal: Principal, authorizer: Authorizer | None,
        request: AlterChunkAssignmentsRequest) -> Operation[AlterChunkAssignmentsResponse]:
    """AlterChunkAssignments needing ALTER on each chunk's topic."""
    if _open(principal, authorizer):
        return lambda image: alter_chunk_assignments(image, request)
    assert authorizer is not None

    def operation(image: MetadataImage) -> ControllerResult[AlterChunkAssignmentsResponse]:
        allowed = _topic_check(image, principal, authorizer, AclOperation.ALTER)
        keys = Counter((c.topic_name, c.partition_id, c.start_offset) for c in request.chunks)
        refusals = [
            keys[(c.topic_name, c.partition_id, c.start_offset)] == 1
            and not allowed(c.topic_name)
            for c in request.chunks]
        if not any(refusals):
            return alter_chunk_assignments(image, request)
        kept = tuple(c for c, refused in zip(request.chunks, refusals, strict=True)
                     if not refused)
        result = alter_chunk_assignments(image, request.model_copy(update={"chunks": kept}))
        answers = iter(result.response.results)
        merged = [
            AlterChunkAssignmentResult(
                topic_name=c.topic_name, partition_id=c.partition_id,
                start_offset=c.start_offset,
                error_code=Errors.TOPIC_AUTHORIZATION_FAILED.code,
                error_message=denied_message(principal, AclOperation.ALTER, c.topic_name))
            if refused else next(answers)
            for c, refused in zip(request.chunks, refusals, strict=True)]
        return _with_response(result, result.response.model_copy(
            update={"results": tuple(merged)}))

    return operation


# ------------------------------------------------------------------ Metadata


def describe_as(image: MetadataImage, principal: Principal, authorizer: Authorizer | None,
                request: MetadataRequest, *, cluster_id: str, controller_id: int
                ) -> MetadataResponse:
    """Metadata v13 showing only topics the principal may DESCRIBE: all topics -> the others
    are left out; a topic asked for -> TOPIC_AUTHORIZATION_FAILED, whether it exists or not."""
    response = topics.describe(image, request, cluster_id=cluster_id,
                               controller_id=controller_id).response
    if _open(principal, authorizer):
        return response
    assert authorizer is not None
    allowed = _topic_check(image, principal, authorizer, AclOperation.DESCRIBE)
    shown: list[MetadataResponseTopic] = []
    for topic in response.topics:
        if topic.name is None or allowed(topic.name):
            shown.append(topic)
        elif request.topics is not None:
            shown.append(MetadataResponseTopic(
                name=topic.name, error_code=Errors.TOPIC_AUTHORIZATION_FAILED.code,
                error_message=denied_message(principal, AclOperation.DESCRIBE, topic.name)))
    return response.model_copy(update={"topics": tuple(shown)})


# ------------------------------------------------------------------ helpers


def _merged_by_name(names: list[str], denied: set[str], answered: Iterable[Named],
                    refusal: Callable[[str], Named]) -> tuple[Named, ...]:
    """One result per distinct name, in request order: a refusal for each denied name, else
    the operation's answer for it (operations answer each distinct name once)."""
    by_name = {result.name: result for result in answered}
    return tuple(refusal(name) if name in denied else by_name[name]
                 for name in dict.fromkeys(names))


def _denied_names(names: list[str], allowed: TopicCheck) -> set[str]:
    """Names the principal may not use, leaving a name given twice to the operation (Kafka
    answers duplicates INVALID_REQUEST before it authorizes)."""
    counts = Counter(names)
    return {name for name in counts if counts[name] == 1 and not allowed(name)}


def _id_key(text: str) -> object:
    return topics.topic_id_key(text)


def _with_response(result: ControllerResult[Any], response: R) -> ControllerResult[R]:
    return ControllerResult(result.records, response, result.atomic)
