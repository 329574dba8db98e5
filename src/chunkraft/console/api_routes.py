"""``/ui/api``: the JSON the console's pages read, and their event stream.

Reads only: every change the pages make goes to the REST v3 API (docs/api.md). Each answer is
built from this node's committed image (after ``min_offset`` when asked, as v3 reads are) and
filtered by the principal's ACLs (:class:`~.access.ConsoleAccess`); a topic the principal may
not DESCRIBE is a 403 whether it exists or not, as in v3.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import httpx
from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse

from chunkraft.api.authentication import principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import error_response
from chunkraft.api.readiness import assess_readiness
from chunkraft.api.rpc import committed_image
from chunkraft.broker_endpoints import broker_url
from chunkraft.console.access import ConsoleAccess
from chunkraft.console.events import BatchSummaries, event_stream
from chunkraft.console.timeline import partition_timeline
from chunkraft.console.views import (
    MAX_PAGE_SIZE,
    brokers_view,
    decode_page_token,
    topic_view,
    topics_page,
)
from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.records import ChunkRecord, PartitionRecord, RegisterBrokerRecord

__all__ = ["router"]

router = APIRouter(prefix="/ui/api", include_in_schema=False)

PEER_TIMEOUT = httpx.Timeout(2.0, connect=1.0)
"""Asking the leader for its followers' lag, or a broker for its disk use: the page shows what
it has without them rather than wait."""


def _context(request: Request) -> ControllerContext:
    context: ControllerContext = request.app.state.context
    return context


def _access(request: Request, image: MetadataImage) -> ConsoleAccess:
    return ConsoleAccess(image, principal_of(request), _context(request).authorizer)


def _json(body: Any, offset: int, status: int = 200) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status_code=status,
                    media_type="application/json",
                    headers={"X-Metadata-Offset": str(offset), "Cache-Control": "no-store"})


async def _image(request: Request, min_offset: int) -> MetadataImage | Response:
    return await committed_image(request, min_offset, 5000)


def _forbidden_topic(name: str) -> Response:
    return error_response(Errors.TOPIC_AUTHORIZATION_FAILED,
                          f"not authorized to describe topic {name!r}", 403)


async def _visible_topic(request: Request, topic_name: str, min_offset: int
                         ) -> tuple[MetadataImage, ConsoleAccess, TopicImage | None] | Response:
    """The committed image at ``min_offset``, the principal's access and topic ``topic_name``
    (None if it does not exist); a 403 answer if the principal may not describe it."""
    image = await _image(request, min_offset)
    if isinstance(image, Response):
        return image
    access = _access(request, image)
    if not access.topic(topic_name):
        return _forbidden_topic(topic_name)
    return image, access, image.topics.get_by_name(topic_name)


@router.get("/cluster")
async def cluster(request: Request) -> Response:
    context = _context(request)
    controller = context.controller
    image = controller.image
    access = _access(request, image)
    body: dict[str, Any] = {
        "cluster_id": context.cluster_id_text, "node_id": context.node_id,
        "metadata_offset": image.offset, "metadata_epoch": image.epoch,
        "leader_id": controller.leader_id(), "quorum": None, "quorum_refused": None}
    if not access.cluster(AclOperation.DESCRIBE):
        body["quorum_refused"] = (f"{access.principal.name} may not DESCRIBE the cluster, which "
                                  "the quorum's state needs")
        return _json(body, image.offset)
    status = controller.raft.status()
    readiness = assess_readiness(status, context.standing.refusal())
    quorum = {**dataclasses.asdict(status), "ready": readiness.ready,
              "not_ready_reason": readiness.reason, "seen_from": context.node_id}
    leader = status.leader_id
    if leader is not None and leader != context.node_id:
        quorum["leader_view"] = await _leader_quorum(context, request, leader)
    body["quorum"] = quorum
    body["counts"] = {"brokers": len(image.brokers), "topics": len(image.topics),
                      "controllers": len(image.controllers)}
    return _json(body, image.offset)


async def _leader_quorum(context: ControllerContext, request: Request,
                         leader: int) -> dict[str, Any] | None:
    """The leader's own quorum status (only the leader knows its followers' lag), asked with
    the request's credentials; None if it does not answer in time."""
    url = context.controller_url(leader)
    authorization = request.headers.get("authorization")
    if url is None:
        return None
    try:
        answer = await context.client().get(
            f"{url}/controller/v1/quorum", timeout=PEER_TIMEOUT,
            headers={"authorization": authorization} if authorization else {})
    except httpx.HTTPError:
        return None
    if answer.status_code != 200:
        return None
    value: dict[str, Any] = answer.json()
    return value


@router.get("/brokers")
async def brokers(request: Request, min_offset: int = Query(-1, ge=-1)) -> Response:
    image = await _image(request, min_offset)
    if isinstance(image, Response):
        return image
    return _json({"brokers": brokers_view(_access(request, image))}, image.offset)


@router.get("/brokers/{broker_id}/disk")
async def broker_disk(request: Request, broker_id: int) -> Response:
    """The bytes of every log the broker holds (its ``/broker/v1/local-replicas``), asked
    with the request's credentials; ``bytes`` null with the reason when it cannot say."""
    context = _context(request)
    image = context.controller.image
    registration = image.brokers.get(broker_id)
    if registration is None:
        return error_response(Errors.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not "
                              "registered", 404)
    url = broker_url(registration)
    authorization = request.headers.get("authorization")
    body: dict[str, Any] = {"broker_id": broker_id, "bytes": None, "logs": None, "error": None}
    if url is None:
        body["error"] = "the broker registered no listener"
        return _json(body, image.offset)
    try:
        async with httpx.AsyncClient(timeout=PEER_TIMEOUT,
                                     verify=context.ssl_context or True) as client:
            answer = await client.get(
                f"{url}/broker/v1/local-replicas",
                headers={"authorization": authorization} if authorization else {})
        if answer.status_code != 200:
            body["error"] = f"the broker answered HTTP {answer.status_code}"
        else:
            rows = answer.json().get("partitions", [])
            body["bytes"] = sum(int(r.get("size_bytes", 0)) for r in rows)
            body["logs"] = len(rows)
    except (httpx.HTTPError, ValueError, AttributeError, TypeError) as error:
        body["error"] = f"the broker did not answer ({type(error).__name__})"
    return _json(body, image.offset)


@router.get("/topics")
async def topics(request: Request, q: str = Query("", max_length=249),
                 after: str | None = Query(None, max_length=400),
                 page_size: int = Query(50, ge=1, le=MAX_PAGE_SIZE),
                 min_offset: int = Query(-1, ge=-1)) -> Response:
    image = await _image(request, min_offset)
    if isinstance(image, Response):
        return image
    after_name = decode_page_token(after) if after else None
    if after and after_name is None:
        return error_response(Errors.INVALID_REQUEST, "a page token this console did not "
                              "issue", 400)
    return _json(topics_page(_access(request, image), q, after_name, page_size), image.offset)


@router.get("/topics/{topic_name}")
async def topic(request: Request, topic_name: str,
                min_offset: int = Query(-1, ge=-1)) -> Response:
    seen = await _visible_topic(request, topic_name, min_offset)
    if isinstance(seen, Response):
        return seen
    image, access, found = seen
    if found is None:
        return error_response(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                              f"Topic '{topic_name}' does not exist.", 404)
    return _json(topic_view(access, found), image.offset)


@router.get("/topics/{topic_name}/partitions/{partition_id}/timeline")
async def timeline(request: Request, topic_name: str, partition_id: int,
                   min_offset: int = Query(-1, ge=-1)) -> Response:
    seen = await _visible_topic(request, topic_name, min_offset)
    if isinstance(seen, Response):
        return seen
    image, access, found = seen
    partition = found.partition(partition_id) if found is not None else None
    if found is None or partition is None:
        return error_response(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                              f"Partition {topic_name}-{partition_id} does not exist.", 404)
    shared = _timeline_json(topic_name, partition, found.chunks_of(partition_id),
                            image.brokers.registrations)
    mine = json.dumps({"offset": image.offset,
                       "may_alter": access.topic(topic_name, AclOperation.ALTER)},
                      separators=(",", ":"))
    return Response(shared[:-1] + b"," + mine[1:].encode(), media_type="application/json",
                    headers={"X-Metadata-Offset": str(image.offset),
                             "Cache-Control": "no-store"})


_TIMELINES_CACHED = 32
_timelines: OrderedDict[tuple[int, int, int], tuple[tuple[object, ...], bytes]] = OrderedDict()


def _timeline_json(topic_name: str, partition: PartitionRecord,
                   chunks: tuple[ChunkRecord, ...],
                   brokers: Mapping[int, RegisterBrokerRecord]) -> bytes:
    """The partition's timeline and facts as JSON, kept per (partition record, chunk tuple,
    broker map): all immutable, so the same three objects always give the same answer, and a
    page that follows the log reads again only what changed. The objects are held with their
    entry, so their ids are not reused while it lives."""
    key = (id(partition), id(chunks), id(brokers))
    cached = _timelines.get(key)
    if cached is not None and cached[0][0] is partition and cached[0][1] is chunks \
            and cached[0][2] is brokers:
        _timelines.move_to_end(key)
        return cached[1]
    body = partition_timeline(topic_name, partition, chunks, brokers).to_json()
    body["replicas"] = list(partition.replicas)
    body["isr"] = list(partition.isr)
    body["leader_epoch"] = partition.leader_epoch
    body["partition_epoch"] = partition.partition_epoch
    body["prior_partition_epochs"] = [[p.partition_id, p.leader_epoch]
                                      for p in partition.prior_partition_epochs]
    encoded = json.dumps(body, separators=(",", ":")).encode()
    _timelines[key] = ((partition, chunks, brokers), encoded)
    while len(_timelines) > _TIMELINES_CACHED:
        _timelines.popitem(last=False)
    return encoded


@router.get("/events")
async def events(request: Request, after: int = Query(-1, ge=-1),
                 last_event_id: str | None = Header(None)) -> Response:
    context = _context(request)
    principal = principal_of(request)
    if last_event_id is not None and last_event_id.isdigit():
        after = int(last_event_id)

    def access_now() -> ConsoleAccess:
        return ConsoleAccess(context.controller.image, principal, context.authorizer)

    summaries = getattr(request.app.state, "console_batch_summaries", None)
    if summaries is None:  # one per node: its streams decode each batch once between them
        summaries = request.app.state.console_batch_summaries = BatchSummaries()
    return StreamingResponse(event_stream(context, access_now, after, summaries=summaries),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
