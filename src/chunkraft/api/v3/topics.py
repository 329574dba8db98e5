"""``/v3/clusters/{cluster_id}/topics[/{topic_name}]``: list, describe, create, expand, delete.

Reads need DESCRIBE on the topic: lists leave out the topics a principal may not describe, and a
named topic it may not describe is a 403 whether or not it exists. Writes run the controller's
operations as the principal (:mod:`chunkraft.api.authorized`), on the leader (a follower
forwards the request and passes the leader's answer on); the one topic's error code becomes
the HTTP status (409 exists, 404 unknown, 403 not authorized, 400 invalid).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response

from chunkraft.api.authentication import principal_of
from chunkraft.api.authorized import (
    create_partitions_as,
    create_topics_as,
    delete_topics_as,
    denied_message,
)
from chunkraft.api.errors import error_response
from chunkraft.api.forwarding import OFFSET_HEADER
from chunkraft.api.parameters import MinOffset, PageSize, PageToken, TopicNamePath, WaitMs
from chunkraft.api.rpc import committed_image, execute_write
from chunkraft.api.v3.common import (
    ERROR_RESPONSES,
    Links,
    NoBody,
    at_offset,
    body_schema,
    check_cluster,
    check_topic_name,
    context_of,
    count_refusal,
    item_error_response,
    json_answer,
    may_change_topic,
    may_describe_topic,
    read_body_as,
    read_image,
    topic_forbidden,
)
from chunkraft.api.v3.encoding import list_json, topic_dict
from chunkraft.api.v3.models import CreateTopicBody, KafkaTopic, KafkaTopicList, UpdateTopicBody
from chunkraft.api.v3.pagination import DEFAULT_PAGE_SIZE, paginate
from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

__all__ = ["router", "topic_image_after"]

router = APIRouter(tags=["v3 topics"])

WRITE_VISIBLE_WAIT = 5.0
"""How long a write's answer waits for this node to apply the offset it committed at."""


async def topic_image_after(request: Request, offset: int) -> MetadataImage:
    """This node's committed image once it holds ``offset`` (a write it just committed)."""
    controller = context_of(request).controller
    await controller.wait_for_offset(offset, WRITE_VISIBLE_WAIT)
    return controller.image


# ------------------------------------------------------------------ reads


@router.get("/clusters/{cluster_id}/topics", summary="Topics the principal may describe, by name",
            response_model=None, responses={200: {"model": KafkaTopicList}, **ERROR_RESPONSES})
async def list_topics(request: Request, cluster_id: str, min_offset: MinOffset = -1,
                      wait_ms: WaitMs = 5000, page_size: PageSize = DEFAULT_PAGE_SIZE,
                      page_token: PageToken = None) -> Response:
    image = await read_image(request, cluster_id, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    context = context_of(request)
    principal = principal_of(request)
    links = Links(request, cluster_id)
    by_name = image.topics.by_name
    page = paginate(request, sorted(by_name), str, page_size, page_token,
                    admit=lambda name: may_describe_topic(context, image, principal, name))
    if isinstance(page, Response):
        return page
    items = [json.dumps(topic_dict(links, by_name[name]), separators=(",", ":"))
             for name in page.items]
    return json_answer(list_json("KafkaTopicList", links.topics(), page.next, image.offset,
                                 items), image.offset)


@router.get("/clusters/{cluster_id}/topics/{topic_name}", summary="One topic",
            response_model=None, responses={200: {"model": KafkaTopic}, **ERROR_RESPONSES})
async def get_topic(request: Request, cluster_id: str, topic_name: TopicNamePath,
                    min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    found = await readable_topic(request, cluster_id, topic_name, min_offset, wait_ms)
    if isinstance(found, Response):
        return found
    image, topic = found
    return json_answer(topic_dict(Links(request, cluster_id), topic, image.offset),
                       image.offset)


async def readable_topic(request: Request, cluster_id: str, topic_name: str, min_offset: int,
                         wait_ms: int) -> tuple[MetadataImage, TopicImage] | Response:
    """The image and the topic a read route answers from, or the error answer (in this order:
    cluster, name, 503 not caught up, 403, 404)."""
    refused = check_cluster(context_of(request), cluster_id) or check_topic_name(topic_name)
    if refused is not None:
        return refused
    image = await committed_image(request, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    refused = topic_forbidden(request, image, topic_name)
    if refused is not None:
        return refused
    topic = image.topics.get_by_name(topic_name)
    if topic is None:
        return unknown_topic(topic_name, image.offset)
    return image, topic


def unknown_topic(name: str, offset: int) -> Response:
    return at_offset(error_response(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"Topic '{name}' does not exist.", 404), offset)


# ------------------------------------------------------------------ writes


def _would_be(links: Links, name: str, topic_id: str | None, partitions: int,
              replication_factor: int, chunks: int, offset: int) -> dict[str, Any]:
    """A topic as a validate_only request would leave it (or just created it)."""
    return {
        "kind": "KafkaTopic",
        "metadata": {"self": links.topic(name), "resource_name": f"{links.crn}/topic={name}",
                     "metadata_offset": offset},
        "topic_name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "replication_factor": replication_factor,
        "partitions_count": partitions,
        "chunks_count": chunks,
        "partitions": {"related": links.partitions(name)},
    }


@router.post("/clusters/{cluster_id}/topics", summary="Create a topic", status_code=201,
             response_model=None, openapi_extra=body_schema(CreateTopicBody),
             responses={201: {"model": KafkaTopic, "description": "Created."},
                        200: {"model": KafkaTopic,
                              "description": "validate_only: the topic as it would be."},
                        **ERROR_RESPONSES})
async def create_topic(request: Request, cluster_id: str) -> Response:
    read = await read_body_as(request, cluster_id, CreateTopicBody)
    if isinstance(read, Response):
        return read
    raw, body = read
    refused = count_refusal(request, body)
    if isinstance(refused, Response):
        return refused
    if refused is not None:  # answered here, before any of the assignments is looked at
        context = context_of(request)
        image = context.controller.image
        principal = principal_of(request)
        if not may_change_topic(context, image, principal, AclOperation.CREATE)(body.topic_name):
            return at_offset(error_response(
                Errors.TOPIC_AUTHORIZATION_FAILED,
                denied_message(principal, AclOperation.CREATE, body.topic_name), 403),
                image.offset)
        return at_offset(error_response(refused[0], refused[1], 400), image.offset)
    assignments = tuple(
        CreatableReplicaAssignment(partition_index=a.partition_id, broker_ids=tuple(a.broker_ids))
        for a in body.replicas_assignments or ())
    protocol = CreateTopicsRequest(
        topics=(CreatableTopic(
            name=body.topic_name,
            num_partitions=-1 if body.partitions_count is None else body.partitions_count,
            replication_factor=-1 if body.replication_factor is None else body.replication_factor,
            assignments=assignments,
            configs=tuple(CreatableTopicConfig(name=c.name, value=c.value)
                          for c in body.configs or ())),),
        validate_only=body.validate_only)
    context = context_of(request)
    operation = create_topics_as(principal_of(request), context.authorizer, protocol)
    outcome = await execute_write(request, raw, operation, CreateTopicsResponse)
    if isinstance(outcome, Response):
        return outcome
    result = outcome.response.topics[0]
    if result.error_code:
        return item_error_response(result.error_code, result.error_message, outcome.offset)
    links = Links(request, cluster_id)
    if not body.validate_only:
        image = await topic_image_after(request, outcome.offset)
        topic = image.topics.get_by_name(body.topic_name)
        if topic is not None:
            return json_answer(topic_dict(links, topic, outcome.offset), outcome.offset, 201)
    answer = _would_be(links, result.name, result.topic_id, result.num_partitions,
                       result.replication_factor, result.num_partitions, outcome.offset)
    return json_answer(answer, outcome.offset, 200 if body.validate_only else 201)


@router.patch("/clusters/{cluster_id}/topics/{topic_name}",
              summary="Raise the partition count (KIP-195 createPartitions of one topic)",
              response_model=None, openapi_extra=body_schema(UpdateTopicBody),
              responses={200: {"model": KafkaTopic}, **ERROR_RESPONSES})
async def update_topic(request: Request, cluster_id: str, topic_name: TopicNamePath) -> Response:
    refused = check_cluster(context_of(request), cluster_id) or check_topic_name(topic_name)
    if refused is not None:
        return refused
    read = await read_body_as(request, cluster_id, UpdateTopicBody)
    if isinstance(read, Response):
        return read
    raw, body = read
    protocol = CreatePartitionsRequest(
        topics=(CreatePartitionsTopic(name=topic_name, count=body.partitions_count),),
        validate_only=body.validate_only)
    context = context_of(request)
    operation = create_partitions_as(principal_of(request), context.authorizer, protocol)
    outcome = await execute_write(request, raw, operation, CreatePartitionsResponse)
    if isinstance(outcome, Response):
        return outcome
    result = outcome.response.results[0]
    if result.error_code:
        return item_error_response(result.error_code, result.error_message, outcome.offset)
    image = await topic_image_after(request, outcome.offset)
    topic = image.topics.get_by_name(topic_name)
    if topic is None:  # deleted since: the expansion's answer still stands
        return unknown_topic(topic_name, image.offset)
    answer = topic_dict(Links(request, cluster_id), topic, outcome.offset)
    if body.validate_only:
        added = body.partitions_count - answer["partitions_count"]
        answer["partitions_count"] += added
        answer["chunks_count"] += added
    return json_answer(answer, outcome.offset)


@router.delete("/clusters/{cluster_id}/topics/{topic_name}", summary="Delete a topic",
               status_code=204, response_model=None,
               responses={204: {"description": "Deleted."}, **ERROR_RESPONSES})
async def delete_topic(request: Request, cluster_id: str, topic_name: TopicNamePath) -> Response:
    read = await read_body_as(request, cluster_id, NoBody)
    if isinstance(read, Response):
        return read
    refused = check_topic_name(topic_name)
    if refused is not None:
        return refused
    raw, _ = read
    context = context_of(request)
    operation = delete_topics_as(principal_of(request), context.authorizer,
                                 DeleteTopicsRequest(topic_names=(topic_name,)))
    outcome = await execute_write(request, raw, operation, DeleteTopicsResponse)
    if isinstance(outcome, Response):
        return outcome
    result = outcome.response.responses[0]
    if result.error_code:
        return item_error_response(result.error_code, result.error_message, outcome.offset)
    return Response(status_code=204, headers={OFFSET_HEADER: str(outcome.offset)})
