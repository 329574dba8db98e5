"""The data-plane routes: ``POST /broker/v1/...``, one per Kafka request.

Handlers only translate: parse the ``chunkraft.protocol.data_plane`` message, authorize
(:mod:`.access`), call the ReplicaManager, answer its response as JSON (a fetch: as a batch
frame when the request accepts one). Produce and fetch bodies may be batch frames
(:mod:`.http`); the other routes take JSON only. Topics the principal
may not touch never reach the ReplicaManager; their partitions are answered
TOPIC_AUTHORIZATION_FAILED in place, so every answer keeps the request's order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, TypeVar

from fastapi import APIRouter, Request, Response
from pydantic import Field

from chunkraft.api.authentication import principal_of
from chunkraft.api.errors import error_response
from chunkraft.broker_agent.coordinator.marker_hooks import markers_written
from chunkraft.broker_agent.coordinator.transactions import transaction_coordinator_of
from chunkraft.broker_agent.server.access import (
    allowed_topics,
    broker_refusal,
    cluster_refusal,
    may_write_some_topic,
    transactional_id_allowed,
)
from chunkraft.broker_agent.server.http import (
    batches_answer,
    json_answer,
    parse_body,
    post_docs,
)
from chunkraft.broker_agent.server.ports import BrokerRuntimeLike
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.base import Message
from chunkraft.protocol.chunks import (
    CreateChunksPartitionResult,
    CreateChunksResponse,
    CreateChunksTopicResult,
)
from chunkraft.protocol.data_plane import (
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    FetchTopicResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
    ListOffsetsTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopic,
    OffsetForLeaderTopicResult,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicData,
    ProduceTopicResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from chunkraft.protocol.topics import Int32

__all__ = ["BROKER_PREFIX", "ChunkRollPartition", "ChunkRollRequest", "ChunkRollTopic",
           "router"]

BROKER_PREFIX = "/broker/v1"

router = APIRouter(prefix=BROKER_PREFIX, tags=["broker data plane"])

T = TypeVar("T")  # a topic entry of a request
R = TypeVar("R")  # a topic entry of a response


def _runtime(request: Request) -> BrokerRuntimeLike:
    runtime: BrokerRuntimeLike = request.app.state.runtime
    return runtime


def _refused_message(principal_name: str, operation: AclOperation, topic: str) -> str:
    return (f"Principal {principal_name} is not authorized to {operation.name} topic "
            f"{topic!r}.")


def _merge(topics: Sequence[T], allowed: set[str], name_of: Callable[[T], str],
           answered: Sequence[R], answered_name: Callable[[R], str],
           refused: Callable[[T], R]) -> list[R]:
    """Answers for ``topics`` in request order: the ReplicaManager's for allowed topics (it
    answered those in the order it got them), ``refused(topic)`` for the others."""
    queue = list(answered)
    merged: list[R] = []
    position = 0
    for topic in topics:
        name = name_of(topic)
        if name not in allowed:
            merged.append(refused(topic))
            continue
        if position < len(queue) and answered_name(queue[position]) == name:
            merged.append(queue[position])
            position += 1
            continue
        # Not in step (the ReplicaManager merged or reordered entries): find it by name.
        match = next((i for i in range(position, len(queue))
                      if answered_name(queue[i]) == name), None)
        if match is None:
            raise ApiException(Errors.UNKNOWN_SERVER_ERROR,
                               f"the replica manager gave no answer for topic {name!r}")
        merged.append(queue.pop(match))
    return merged


async def _answer_per_topic(
        topics: Sequence[T], allowed: set[str], name_of: Callable[[T], str],
        answer: Callable[[tuple[T, ...]], Awaitable[tuple[Sequence[R], int]]],
        answered_name: Callable[[R], str], refused: Callable[[T], R]) -> tuple[list[R], int]:
    """``(answers, throttle_time_ms)`` for ``topics`` in request order when some were refused:
    ``answer(kept)`` (the ReplicaManager, called only if a topic is allowed) for the allowed
    ones, ``refused(topic)`` for the others."""
    kept = tuple(topic for topic in topics if name_of(topic) in allowed)
    answered, throttle = await answer(kept) if kept else ((), 0)
    return _merge(topics, allowed, name_of, answered, answered_name, refused), throttle


# ------------------------------------------------------------------------------- Produce


async def produce(request: Request) -> Response:
    """Produce: WRITE per topic (and on the transactional id); the ReplicaManager appends."""
    parsed = await parse_body(request, ProduceRequest, frames=True)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    image = runtime.follower.image
    authorizer = runtime.authorizer
    if parsed.transactional_id is not None and not transactional_id_allowed(
            authorizer, image, principal, parsed.transactional_id):
        error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        message = (f"Principal {principal.name} is not authorized to WRITE transactional id "
                   f"{parsed.transactional_id!r}.")
        return json_answer(ProduceResponse(topics=tuple(
            ProduceTopicResponse(name=topic.name, partitions=tuple(
                ProducePartitionResponse(index=p.index, error_code=error.code,
                                         error_message=message) for p in topic.partitions))
            for topic in parsed.topics)))
    allowed = allowed_topics(authorizer, image, principal, AclOperation.WRITE,
                             (topic.name for topic in parsed.topics))
    if len(allowed) == len({topic.name for topic in parsed.topics}):
        return json_answer(await runtime.replica_manager.produce(parsed))

    async def answer(kept: tuple[ProduceTopicData, ...]
                     ) -> tuple[Sequence[ProduceTopicResponse], int]:
        response = await runtime.replica_manager.produce(parsed.model_copy(update={"topics": kept}))
        return response.topics, response.throttle_time_ms

    code = Errors.TOPIC_AUTHORIZATION_FAILED.code
    merged, throttle = await _answer_per_topic(
        parsed.topics, allowed, lambda t: t.name, answer, lambda r: r.name,
        lambda t: ProduceTopicResponse(name=t.name, partitions=tuple(
            ProducePartitionResponse(
                index=p.index, error_code=code,
                error_message=_refused_message(principal.name, AclOperation.WRITE, t.name))
            for p in t.partitions)))
    return json_answer(ProduceResponse(topics=tuple(merged), throttle_time_ms=throttle))


# --------------------------------------------------------------------------------- Fetch


async def fetch(request: Request) -> Response:
    """Fetch: READ per topic for consumers; a replica (``replica_id`` >= 0) must be that broker."""
    parsed = await parse_body(request, FetchRequest, frames=True)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    image = runtime.follower.image
    authorizer = runtime.authorizer
    if parsed.replica_id >= 0:
        refusal = broker_refusal(authorizer, image, principal, parsed.replica_id)
        if refusal is not None:
            return refusal
        return batches_answer(request, await runtime.replica_manager.fetch(parsed))
    allowed = allowed_topics(authorizer, image, principal, AclOperation.READ,
                             (topic.topic for topic in parsed.topics))
    if len(allowed) == len({topic.topic for topic in parsed.topics}):
        return batches_answer(request, await runtime.replica_manager.fetch(parsed))

    async def answer(kept: tuple[FetchTopic, ...]) -> tuple[Sequence[FetchTopicResponse], int]:
        response = await runtime.replica_manager.fetch(parsed.model_copy(update={"topics": kept}))
        return response.responses, response.throttle_time_ms

    code = Errors.TOPIC_AUTHORIZATION_FAILED.code
    merged, throttle = await _answer_per_topic(
        parsed.topics, allowed, lambda t: t.topic, answer, lambda r: r.topic,
        lambda t: FetchTopicResponse(topic=t.topic, partitions=tuple(
            FetchPartitionResponse(
                partition=p.partition, error_code=code,
                error_message=_refused_message(principal.name, AclOperation.READ, t.topic))
            for p in t.partitions)))
    # model_construct: the kept answers hold megabytes of records; nothing to re-validate.
    return batches_answer(request, FetchResponse.model_construct(
        throttle_time_ms=throttle, error_code=0, responses=tuple(merged)))


# --------------------------------------------------------------------------- ListOffsets


async def list_offsets(request: Request) -> Response:
    """ListOffsets: DESCRIBE per topic."""
    parsed = await parse_body(request, ListOffsetsRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    allowed = allowed_topics(runtime.authorizer, runtime.follower.image, principal,
                             AclOperation.DESCRIBE, (topic.name for topic in parsed.topics))
    if len(allowed) == len({topic.name for topic in parsed.topics}):
        return json_answer(runtime.replica_manager.list_offsets(parsed))

    async def answer(kept: tuple[ListOffsetsTopic, ...]
                     ) -> tuple[Sequence[ListOffsetsTopicResponse], int]:
        response = runtime.replica_manager.list_offsets(
            parsed.model_copy(update={"topics": kept}))
        return response.topics, response.throttle_time_ms

    code = Errors.TOPIC_AUTHORIZATION_FAILED.code
    merged, _ = await _answer_per_topic(
        parsed.topics, allowed, lambda t: t.name, answer, lambda r: r.name,
        lambda t: ListOffsetsTopicResponse(name=t.name, partitions=tuple(
            ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=code,
                error_message=_refused_message(principal.name, AclOperation.DESCRIBE, t.name))
            for p in t.partitions)))
    return json_answer(ListOffsetsResponse(topics=tuple(merged)))


# ----------------------------------------------------------------- OffsetsForLeaderEpoch


async def offsets_for_leader_epoch(request: Request) -> Response:
    """OffsetsForLeaderEpoch: DESCRIBE per topic; a replica must be that broker."""
    parsed = await parse_body(request, OffsetForLeaderEpochRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    image = runtime.follower.image
    if parsed.replica_id >= 0:
        refusal = broker_refusal(runtime.authorizer, image, principal, parsed.replica_id)
        if refusal is not None:
            return refusal
        return json_answer(runtime.replica_manager.offsets_for_leader_epoch(parsed))
    allowed = allowed_topics(runtime.authorizer, image, principal, AclOperation.DESCRIBE,
                             (topic.topic for topic in parsed.topics))
    if len(allowed) == len({topic.topic for topic in parsed.topics}):
        return json_answer(runtime.replica_manager.offsets_for_leader_epoch(parsed))

    async def answer(kept: tuple[OffsetForLeaderTopic, ...]
                     ) -> tuple[Sequence[OffsetForLeaderTopicResult], int]:
        response = runtime.replica_manager.offsets_for_leader_epoch(
            parsed.model_copy(update={"topics": kept}))
        return response.topics, response.throttle_time_ms

    code = Errors.TOPIC_AUTHORIZATION_FAILED.code
    merged, _ = await _answer_per_topic(
        parsed.topics, allowed, lambda t: t.topic, answer, lambda r: r.topic,
        lambda t: OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(
            OffsetForLeaderPartitionResult(
                partition=p.partition, error_code=code,
                error_message=_refused_message(principal.name, AclOperation.DESCRIBE, t.topic))
            for p in t.partitions)))
    return json_answer(OffsetForLeaderEpochResponse(topics=tuple(merged)))


# ------------------------------------------------------------------------ InitProducerId


async def init_producer_id(request: Request) -> Response:
    """InitProducerId: a fresh producer id with epoch 0 from the broker's block.

    Without a transactional id (an idempotent producer) that is Kafka's answer. With one the
    transaction coordinator answers (``coordinator.transactions``): the id's producer id with
    its epoch bumped (fencing an earlier producer), NOT_COORDINATOR when this broker does not
    coordinate the id. Kafka's checks: producer id and epoch are both -1 or both set
    (INVALID_REQUEST otherwise).
    """
    parsed = await parse_body(request, InitProducerIdRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    image = runtime.follower.image
    authorizer = runtime.authorizer
    if parsed.transactional_id is not None:
        if not transactional_id_allowed(authorizer, image, principal, parsed.transactional_id):
            return error_response(
                Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                f"Principal {principal.name} is not authorized to WRITE transactional id "
                f"{parsed.transactional_id!r}.", 403)
    elif not (authorizer is None
              or authorizer.authorize_cluster(image, principal, AclOperation.IDEMPOTENT_WRITE)
              or may_write_some_topic(authorizer, image, principal)):
        return error_response(
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            f"Principal {principal.name} may not produce idempotently: it needs IDEMPOTENT_WRITE "
            "on the cluster or WRITE on some topic.", 403)
    if (parsed.producer_id == -1) != (parsed.producer_epoch == -1):
        return json_answer(InitProducerIdResponse(
            error_code=Errors.INVALID_REQUEST.code,
            error_message="producer_id and producer_epoch must both be -1 or both be set"))
    try:
        if parsed.transactional_id is not None:
            coordinator = transaction_coordinator_of(runtime.replica_manager)
            if coordinator is None:
                raise ApiException(Errors.COORDINATOR_NOT_AVAILABLE,
                                   "this broker runs no transaction coordinator")
            producer_id, epoch = await coordinator.init_producer_id(
                parsed.transactional_id, parsed.transaction_timeout_ms, parsed.producer_id,
                parsed.producer_epoch)
            return json_answer(InitProducerIdResponse(producer_id=producer_id,
                                                      producer_epoch=epoch))
        producer_id = await runtime.producer_ids.next_id()
    except ApiException as error:
        return json_answer(InitProducerIdResponse(error_code=error.code,
                                                  error_message=error.message))
    return json_answer(InitProducerIdResponse(producer_id=producer_id, producer_epoch=0))


# ----------------------------------------------------------------------- WriteTxnMarkers


async def write_txn_markers(request: Request) -> Response:
    """WriteTxnMarkers: CLUSTER_ACTION on the cluster (only brokers write markers)."""
    parsed = await parse_body(request, WriteTxnMarkersRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    refusal = cluster_refusal(runtime.authorizer, runtime.follower.image, principal_of(request),
                              AclOperation.CLUSTER_ACTION)
    if refusal is not None:
        return refusal
    answer = await runtime.replica_manager.write_txn_markers(parsed)
    await markers_written(runtime.replica_manager, parsed, answer)  # the group coordinator
    return json_answer(answer)


# ------------------------------------------------------------------ CreateChunks (a roll)


class ChunkRollPartition(Message):
    """One partition whose active chunk this broker (its leader) should cut: the new active
    chunk's replicas and leader (-1: the first replica). Offsets are the leader's to read."""

    partition_index: Annotated[int, Field(ge=0, le=2**31 - 1)]
    broker_ids: tuple[Int32, ...]
    leader: Int32 = -1


class ChunkRollTopic(Message):
    name: str
    partitions: tuple[ChunkRollPartition, ...]


class ChunkRollRequest(Message):
    """The body ``chunkraft.api.leader_cuts`` sends to a partition's leader broker."""

    topics: tuple[ChunkRollTopic, ...]


async def create_chunks(request: Request) -> Response:
    """Cut the active chunk of each partition (DESIGN §3): ALTER per topic, then the
    ReplicaManager's ``roll_chunk`` for each partition, all at once; answers a
    CreateChunksResponse with one result per partition, in request order."""
    parsed = await parse_body(request, ChunkRollRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    allowed = allowed_topics(runtime.authorizer, runtime.follower.image, principal,
                             AclOperation.ALTER, (topic.name for topic in parsed.topics))
    rolls = [runtime.replica_manager.roll_chunk(topic.name, p.partition_index,
                                                tuple(p.broker_ids), p.leader)
             for topic in parsed.topics if topic.name in allowed for p in topic.partitions]
    outcomes = iter(await asyncio.gather(*rolls))
    refused = Errors.TOPIC_AUTHORIZATION_FAILED.code
    results = []
    for topic in parsed.topics:
        if topic.name in allowed:
            partitions = []
            for p in topic.partitions:
                code, message = next(outcomes)
                partitions.append(CreateChunksPartitionResult(
                    partition_index=p.partition_index, error_code=code, error_message=message))
        else:
            message = _refused_message(principal.name, AclOperation.ALTER, topic.name)
            partitions = [CreateChunksPartitionResult(partition_index=p.partition_index,
                                                      error_code=refused, error_message=message)
                          for p in topic.partitions]
        results.append(CreateChunksTopicResult(name=topic.name, partitions=tuple(partitions)))
    return json_answer(CreateChunksResponse(topics=tuple(results)))


def _add(path: str, handler: Callable[[Request], Awaitable[Response]], request_model: type[Message],
         response_model: type[Message], summary: str, *, frames: bool = False) -> None:
    router.add_api_route(path, handler, methods=["POST"], summary=summary,
                         **post_docs(request_model, response_model, frames=frames))


_add("/produce", produce, ProduceRequest, ProduceResponse, "Produce (WRITE per topic)",
     frames=True)
_add("/fetch", fetch, FetchRequest, FetchResponse,
     "Fetch (READ per topic; replicas: CLUSTER_ACTION, as themselves)", frames=True)
_add("/list-offsets", list_offsets, ListOffsetsRequest, ListOffsetsResponse,
     "ListOffsets (DESCRIBE per topic)")
_add("/offsets-for-leader-epoch", offsets_for_leader_epoch, OffsetForLeaderEpochRequest,
     OffsetForLeaderEpochResponse,
     "OffsetsForLeaderEpoch (DESCRIBE per topic; replicas: CLUSTER_ACTION, as themselves)")
_add("/init-producer-id", init_producer_id, InitProducerIdRequest, InitProducerIdResponse,
     "InitProducerId (IDEMPOTENT_WRITE on the cluster or WRITE on a topic)")
_add("/write-txn-markers", write_txn_markers, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
     "WriteTxnMarkers (CLUSTER_ACTION)")
_add("/create-chunks", create_chunks, ChunkRollRequest, CreateChunksResponse,
     "Cut the active chunk of partitions this broker leads (ALTER per topic)")
