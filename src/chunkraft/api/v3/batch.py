"""The batch operations: KIP-195 createPartitions and KIP-1114 CreateChunks and
AlterChunkAssignments over many items, with one result per item.

Each answers 200 with ``data``: one result per item (per distinct topic for createPartitions),
carrying Kafka's error code and name; only what fails the whole request is an HTTP status (400
malformed or over ``request.max.batch.items``, 401, 413, 415, 431). Authorization is per item,
inside the operations (TOPIC_AUTHORIZATION_FAILED after the duplicate check, as Kafka's
controller does). A request over the assignment limits (:mod:`chunkraft.api.limits`) is answered
at once, per item, TOPIC_AUTHORIZATION_FAILED or POLICY_VIOLATION, without validating anything.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from chunkraft.api.authentication import principal_of
from chunkraft.api.authorized import (
    alter_chunk_assignments_as,
    create_chunks_as,
    create_partitions_as,
    denied_message,
)
from chunkraft.api.leader_cuts import CutRequest, ask_leaders
from chunkraft.api.rpc import WriteOutcome, execute_write
from chunkraft.api.v3.common import (
    ERROR_RESPONSES,
    body_schema,
    context_of,
    count_refusal,
    error_item,
    json_answer,
    may_change_topic,
    read_body_as,
)
from chunkraft.api.v3.encoding import list_json
from chunkraft.api.v3.models import (
    AlterChunkAssignmentsBody,
    ChunkAssignmentResultList,
    CreateChunkItem,
    CreateChunksBody,
    CreateChunksResultList,
    CreatePartitionsBody,
    CreatePartitionsResultList,
)
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.result import ControllerResult, Operation
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.chunks import (
    AlterChunkAssignment,
    AlterChunkAssignmentsRequest,
    AlterChunkAssignmentsResponse,
    CreateChunksPartition,
    CreateChunksRequest,
    CreateChunksResponse,
    CreateChunksTopic,
)
from chunkraft.protocol.topics import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
)

__all__ = ["router"]

router = APIRouter(tags=["v3 batch operations"])

_pending_writes: set[asyncio.Task[Any]] = set()
"""Writes whose caller stopped waiting (timeout_ms): kept referenced until they finish."""


def _answer(kind: str, request: Request, offset: int, data: list[dict[str, Any]]) -> Response:
    items = [json.dumps(item, separators=(",", ":")) for item in data]
    return json_answer(list_json(kind, str(request.url), None, offset, items), offset)


def _over_limits(request: Request, body: BaseModel, topics: list[str]
                 ) -> Response | list[tuple[int, str]] | None:
    """None when ``body`` is within the node's limits; else the whole request's refusal (too
    many items), or one (error code, message) per entry of ``topics``: TOPIC_AUTHORIZATION_FAILED
    where the principal may not ALTER the topic (so an unauthorized request learns nothing
    more), POLICY_VIOLATION for the others. Nothing of the request is validated, converted or
    sent to the leader: the answer costs the counting alone."""
    refused = count_refusal(request, body)
    if refused is None or isinstance(refused, Response):
        return refused
    _, message = refused
    context = context_of(request)
    principal = principal_of(request)
    allowed = may_change_topic(context, context.controller.image, principal, AclOperation.ALTER)
    verdicts: dict[str, tuple[int, str]] = {}
    for name in topics:
        if name not in verdicts:
            verdicts[name] = ((Errors.POLICY_VIOLATION.code, message) if allowed(name) else
                              (Errors.TOPIC_AUTHORIZATION_FAILED.code,
                               denied_message(principal, AclOperation.ALTER, name)))
    return [verdicts[name] for name in topics]


# ------------------------------------------------------------------ createPartitions (KIP-195)


@router.post("/clusters/{cluster_id}/topics:create-partitions",
             summary="KIP-195 createPartitions over many topics (absolute counts)",
             response_model=None, openapi_extra=body_schema(CreatePartitionsBody),
             responses={200: {"model": CreatePartitionsResultList,
                              "description": "One result per distinct topic name."},
                        **ERROR_RESPONSES})
async def create_partitions(request: Request, cluster_id: str) -> Response:
    read = await read_body_as(request, cluster_id, CreatePartitionsBody)
    if isinstance(read, Response):
        return read
    raw, body = read
    names = list(dict.fromkeys(t.topic_name for t in body.topics))
    refused = _over_limits(request, body, names)
    if isinstance(refused, Response):
        return refused
    if refused is not None:
        offset = context_of(request).controller.image.offset
        return _answer("CreatePartitionsResultList", request, offset, [
            {"topic_name": name, **error_item(*verdict)}
            for name, verdict in zip(names, refused, strict=True)])
    context = context_of(request)
    protocol = CreatePartitionsRequest(
        topics=tuple(CreatePartitionsTopic(
            name=t.topic_name, count=t.partitions_count,
            assignments=None if t.assignments is None else tuple(
                CreatePartitionsAssignment(broker_ids=tuple(a)) for a in t.assignments))
            for t in body.topics),
        validate_only=body.validate_only, timeout_ms=body.timeout_ms)
    if body.timeout_ms == 0:  # a deadline already past: nothing is attempted
        return _timed_out(request, names, body.timeout_ms)
    operation = create_partitions_as(principal_of(request), context.authorizer, protocol)
    task = asyncio.ensure_future(
        execute_write(request, raw, operation, CreatePartitionsResponse))
    try:
        outcome = await asyncio.wait_for(asyncio.shield(task), body.timeout_ms / 1000)
    except TimeoutError:
        _pending_writes.add(task)
        task.add_done_callback(_forget)
        return _timed_out(request, names, body.timeout_ms)
    if isinstance(outcome, Response):
        return outcome
    data = [{"topic_name": r.name, **error_item(r.error_code, r.error_message)}
            for r in outcome.response.results]
    return _answer("CreatePartitionsResultList", request, outcome.offset, data)


def _forget(task: asyncio.Task[Any]) -> None:
    _pending_writes.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: the caller has long had its REQUEST_TIMED_OUT


def _timed_out(request: Request, names: list[str], timeout_ms: int) -> Response:
    message = (f"The request did not complete within timeout_ms={timeout_ms}; the change may "
               "still take effect: describe the topic to see.")
    data = [{"topic_name": name, **error_item(Errors.REQUEST_TIMED_OUT.code, message)}
            for name in names]
    offset = context_of(request).controller.image.offset
    return _answer("CreatePartitionsResultList", request, offset, data)


# ------------------------------------------------------------------ CreateChunks (KIP-1114)


def _has_offsets(item: CreateChunkItem) -> bool:
    return None not in (item.prev_stop_offset, item.prev_end_offset, item.start_offset)


def _partial_offsets(item: CreateChunkItem) -> bool:
    """Some offsets given but not the three a cut needs (a start timestamp alone counts: it
    would be silently ignored by the admin form otherwise)."""
    given = (item.prev_stop_offset, item.prev_end_offset, item.start_offset,
             item.start_timestamp)
    return not _has_offsets(item) and any(v is not None for v in given)


def _cut_item(item: CreateChunkItem, **offsets: int) -> CreateChunksTopic:
    return CreateChunksTopic(name=item.topic, partitions=(CreateChunksPartition(
        partition_index=item.partition, broker_ids=tuple(item.replicas),
        leader=-1 if item.leader is None else item.leader, **offsets),))


def _cut_request(item: CreateChunkItem) -> CutRequest:
    leader = -1 if item.leader is None else item.leader
    return CutRequest(item.topic, item.partition, tuple(item.replicas), leader)


def _given_offsets(item: CreateChunkItem) -> dict[str, int]:
    assert item.prev_stop_offset is not None and item.prev_end_offset is not None
    assert item.start_offset is not None
    return {"prev_stop_offset": item.prev_stop_offset, "prev_end_offset": item.prev_end_offset,
            "start_offset": item.start_offset,
            "start_timestamp": -1 if item.start_timestamp is None else item.start_timestamp}


def _validation_offsets(image: MetadataImage, item: CreateChunkItem) -> dict[str, int]:
    """Offsets that pass CreateChunks' offset checks on ``image``, so that validating an
    admin-form item checks everything else (topic, partition, authorization, replicas)."""
    topic = image.topics.get_by_name(item.topic)
    partition = topic.partition(item.partition) if topic is not None else None
    start = max(partition.start_offset, 0) if partition is not None else 0
    timestamp = partition.start_timestamp if partition is not None else -1
    return {"prev_stop_offset": start, "prev_end_offset": start, "start_offset": start + 1,
            "start_timestamp": timestamp}


@router.post("/clusters/{cluster_id}/chunks:create",
             summary="KIP-1114 CreateChunks: cut the active chunk of many partitions",
             response_model=None, openapi_extra=body_schema(CreateChunksBody),
             responses={200: {"model": CreateChunksResultList,
                              "description": "One result per item, in request order."},
                        **ERROR_RESPONSES})
async def create_chunks(request: Request, cluster_id: str) -> Response:
    read = await read_body_as(request, cluster_id, CreateChunksBody)
    if isinstance(read, Response):
        return read
    raw, body = read
    refused = _over_limits(request, body, [item.topic for item in body.partitions])
    if isinstance(refused, Response):
        return refused
    if refused is not None:
        return _answer("CreateChunksResultList", request,
                       context_of(request).controller.image.offset, [
                           {"topic_name": item.topic, "partition_id": item.partition,
                            **error_item(*verdict)}
                           for item, verdict in zip(body.partitions, refused, strict=True)])
    context = context_of(request)
    items = body.partitions
    results: list[tuple[int, str | None] | None] = [None] * len(items)
    counts = Counter((item.topic, item.partition) for item in items)
    with_offsets: list[int] = []
    admin_form: list[int] = []
    for index, item in enumerate(items):
        if counts[(item.topic, item.partition)] > 1:
            results[index] = (Errors.INVALID_REQUEST.code,
                              f"Duplicate partition {item.topic}-{item.partition}.")
        elif _partial_offsets(item):
            results[index] = (Errors.INVALID_REQUEST.code,
                              "Give prev_stop_offset, prev_end_offset and start_offset "
                              "together (start_timestamp with them), or no offsets at all "
                              "(the leader broker reads them).")
        elif _has_offsets(item):
            with_offsets.append(index)
        else:
            admin_form.append(index)
    principal = principal_of(request)

    def operation(image: MetadataImage) -> ControllerResult[CreateChunksResponse]:
        given = create_chunks_as(principal, context.authorizer, CreateChunksRequest(
            topics=tuple(_cut_item(items[i], **_given_offsets(items[i])) for i in with_offsets),
            validate_only=body.validate_only))(image)
        checked = create_chunks_as(principal, context.authorizer, CreateChunksRequest(
            topics=tuple(_cut_item(items[i], **_validation_offsets(image, items[i]))
                         for i in admin_form),
            validate_only=True))(image)
        response = CreateChunksResponse(topics=given.response.topics + checked.response.topics)
        return ControllerResult(given.records, response, given.atomic)

    outcome: WriteOutcome[CreateChunksResponse] | Response = await execute_write(
        request, raw, operation, CreateChunksResponse)
    if isinstance(outcome, Response):
        return outcome
    for index, topic in zip(with_offsets + admin_form, outcome.response.topics, strict=True):
        partition = topic.partitions[0]
        results[index] = (partition.error_code, partition.error_message)
    cuts = [i for i in admin_form if results[i] == (0, None)]
    if cuts and not body.validate_only:
        image = context.controller.image
        asked = await ask_leaders(image, [_cut_request(items[i]) for i in cuts],
                                  authorization=request.headers.get("authorization"),
                                  verify=context.ssl_context or True)
        for index, answer in zip(cuts, asked, strict=True):
            results[index] = answer
    offset = max(outcome.offset, context.controller.image.offset)
    data = []
    for item, result in zip(items, results, strict=True):
        assert result is not None
        data.append({"topic_name": item.topic, "partition_id": item.partition,
                     **error_item(*result)})
    return _answer("CreateChunksResultList", request, offset, data)


# ------------------------------------------------------------------ AlterChunkAssignments


@router.post("/clusters/{cluster_id}/chunks:alter-assignments",
             summary="KIP-1114 AlterChunkAssignments: move inactive chunks to new replicas",
             response_model=None, openapi_extra=body_schema(AlterChunkAssignmentsBody),
             responses={200: {"model": ChunkAssignmentResultList,
                              "description": "One result per item, in request order."},
                        **ERROR_RESPONSES})
async def alter_chunk_assignments(request: Request, cluster_id: str) -> Response:
    read = await read_body_as(request, cluster_id, AlterChunkAssignmentsBody)
    if isinstance(read, Response):
        return read
    raw, body = read
    refused = _over_limits(request, body, [c.topic for c in body.chunks])
    if isinstance(refused, Response):
        return refused
    if refused is not None:
        return _answer("AlterChunkAssignmentsResultList", request,
                       context_of(request).controller.image.offset, [
                           {"topic_name": c.topic, "partition_id": c.partition,
                            "start_offset": c.start_offset, **error_item(*verdict)}
                           for c, verdict in zip(body.chunks, refused, strict=True)])
    context = context_of(request)
    protocol = AlterChunkAssignmentsRequest(
        chunks=tuple(AlterChunkAssignment(
            topic_name=c.topic, partition_id=c.partition, start_offset=c.start_offset,
            chunk_epoch=c.chunk_epoch, broker_ids=tuple(c.replicas)) for c in body.chunks),
        validate_only=body.validate_only)
    operation: Operation[AlterChunkAssignmentsResponse] = alter_chunk_assignments_as(
        principal_of(request), context.authorizer, protocol)
    outcome = await execute_write(request, raw, operation, AlterChunkAssignmentsResponse)
    if isinstance(outcome, Response):
        return outcome
    data = [{"topic_name": r.topic_name, "partition_id": r.partition_id,
             "start_offset": r.start_offset, **error_item(r.error_code, r.error_message)}
            for r in outcome.response.results]
    return _answer("AlterChunkAssignmentsResultList", request, outcome.offset, data)

