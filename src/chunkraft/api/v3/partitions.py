"""Partitions, their replicas and their chunks (KIP-1114), under a topic.

``.../topics/{t}/partitions[/{p}]`` (``include_chunks=true`` adds each partition's inactive
chunks), ``.../partitions/{p}/replicas[/{broker_id}]`` and ``.../partitions/{p}/chunks[/{start}]``
(the inactive chunks by start offset, then the active chunk). Every route needs DESCRIBE on the
topic (else 403, whether or not it exists). Answers are written by
:class:`~chunkraft.api.v3.encoding.TopicEncoder`, so a 10,000-partition topic with its chunks
is one fast page.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from chunkraft.api.errors import error_response
from chunkraft.api.parameters import (
    BrokerIdPath,
    LargePageSize,
    MinOffset,
    OffsetPath,
    PageToken,
    PartitionIdPath,
    TopicNamePath,
    WaitMs,
)
from chunkraft.api.v3.common import (
    ERROR_RESPONSES,
    Links,
    QueryBool,
    at_offset,
    json_answer,
)
from chunkraft.api.v3.encoding import TopicEncoder, list_json, list_json_pieces
from chunkraft.api.v3.models import (
    KafkaChunk,
    KafkaChunkList,
    KafkaPartition,
    KafkaPartitionList,
    KafkaReplica,
    KafkaReplicaList,
)
from chunkraft.api.v3.pagination import DEFAULT_PAGE_SIZE, MAX_LARGE_PAGE_SIZE, paginate
from chunkraft.api.v3.topics import readable_topic
from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.error_codes import Errors
from chunkraft.records import PartitionRecord

__all__ = ["router"]

router = APIRouter(tags=["v3 partitions and chunks"])

_TOPIC = "/clusters/{cluster_id}/topics/{topic_name}"


async def _partition(request: Request, cluster_id: str, topic_name: str, partition_id: int,
                     min_offset: int, wait_ms: int
                     ) -> tuple[MetadataImage, TopicImage, PartitionRecord] | Response:
    """What :func:`readable_topic` finds, and the partition; or the error answer (404 last)."""
    found = await readable_topic(request, cluster_id, topic_name, min_offset, wait_ms)
    if isinstance(found, Response):
        return found
    image, topic = found
    partition = topic.partition(partition_id)
    if partition is None:
        return at_offset(error_response(
            Errors.UNKNOWN_TOPIC_OR_PARTITION,
            f"Partition {topic.name}-{partition_id} does not exist.", 404), image.offset)
    return image, topic, partition


@router.get(_TOPIC + "/partitions", summary="The topic's partitions, by id",
            response_model=None,
            responses={200: {"model": KafkaPartitionList}, **ERROR_RESPONSES})
async def list_partitions(request: Request, cluster_id: str, topic_name: TopicNamePath,
                          include_chunks: QueryBool = False, min_offset: MinOffset = -1,
                          wait_ms: WaitMs = 5000, page_size: LargePageSize = DEFAULT_PAGE_SIZE,
                          page_token: PageToken = None) -> Response:
    found = await readable_topic(request, cluster_id, topic_name, min_offset, wait_ms)
    if isinstance(found, Response):
        return found
    image, topic = found
    partitions = topic.partitions
    page = paginate(request, sorted(partitions), int, page_size, page_token,
                    max_size=MAX_LARGE_PAGE_SIZE)
    if isinstance(page, Response):
        return page
    links = Links(request, cluster_id)
    pieces = TopicEncoder(links, topic).partition_pieces
    body = list_json_pieces("KafkaPartitionList", links.partitions(topic_name), page.next,
                            image.offset, (pieces(partitions[p], include_chunks)
                                           for p in page.items))
    return json_answer(body, image.offset)


@router.get(_TOPIC + "/partitions/{partition_id}", summary="One partition",
            response_model=None, responses={200: {"model": KafkaPartition}, **ERROR_RESPONSES})
async def get_partition(request: Request, cluster_id: str, topic_name: TopicNamePath,
                        partition_id: PartitionIdPath,
                        include_chunks: QueryBool = False, min_offset: MinOffset = -1,
                        wait_ms: WaitMs = 5000) -> Response:
    found = await _partition(request, cluster_id, topic_name, partition_id, min_offset,
                             wait_ms)
    if isinstance(found, Response):
        return found
    image, topic, partition = found
    encoder = TopicEncoder(Links(request, cluster_id), topic)
    return json_answer(encoder.partition(partition, include_chunks, image.offset), image.offset)


@router.get(_TOPIC + "/partitions/{partition_id}/replicas",
            summary="The replicas of the partition's active chunk, in assignment order",
            response_model=None,
            responses={200: {"model": KafkaReplicaList}, **ERROR_RESPONSES})
async def list_replicas(request: Request, cluster_id: str, topic_name: TopicNamePath,
                        partition_id: PartitionIdPath,
                        min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    found = await _partition(request, cluster_id, topic_name, partition_id, min_offset,
                             wait_ms)
    if isinstance(found, Response):
        return found
    image, topic, partition = found
    links = Links(request, cluster_id)
    encoder = TopicEncoder(links, topic)
    items = [encoder.replica(partition, broker_id) for broker_id in partition.replicas]
    url = f"{links.partition(topic_name, partition_id)}/replicas"
    return json_answer(list_json("KafkaReplicaList", url, None, image.offset, items),
                       image.offset)


@router.get(_TOPIC + "/partitions/{partition_id}/replicas/{broker_id}",
            summary="One replica of the partition's active chunk", response_model=None,
            responses={200: {"model": KafkaReplica}, **ERROR_RESPONSES})
async def get_replica(request: Request, cluster_id: str, topic_name: TopicNamePath,
                      partition_id: PartitionIdPath, broker_id: BrokerIdPath,
                      min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    found = await _partition(request, cluster_id, topic_name, partition_id, min_offset,
                             wait_ms)
    if isinstance(found, Response):
        return found
    image, topic, partition = found
    if broker_id not in partition.replicas:
        return at_offset(error_response(
            Errors.REPLICA_NOT_AVAILABLE,
            f"Broker {broker_id} is not a replica of {topic_name}-{partition_id}.", 404),
            image.offset)
    encoder = TopicEncoder(Links(request, cluster_id), topic)
    return json_answer(encoder.replica(partition, broker_id, image.offset), image.offset)


@router.get(_TOPIC + "/partitions/{partition_id}/chunks",
            summary="The partition's chunks: inactive ones by start offset, then the active one",
            response_model=None, responses={200: {"model": KafkaChunkList}, **ERROR_RESPONSES})
async def list_chunks(request: Request, cluster_id: str, topic_name: TopicNamePath,
                      partition_id: PartitionIdPath,
                      min_offset: MinOffset = -1, wait_ms: WaitMs = 5000,
                      page_size: LargePageSize = DEFAULT_PAGE_SIZE, page_token: PageToken = None
                      ) -> Response:
    found = await _partition(request, cluster_id, topic_name, partition_id, min_offset,
                             wait_ms)
    if isinstance(found, Response):
        return found
    image, topic, partition = found
    inactive = {c.start_offset: c for c in topic.chunks_of(partition_id)}
    active_start = max(partition.start_offset, 0)
    starts = [*inactive, active_start]  # the active chunk starts after every inactive one
    page = paginate(request, starts, int, page_size, page_token, max_size=MAX_LARGE_PAGE_SIZE)
    if isinstance(page, Response):
        return page
    links = Links(request, cluster_id)
    encoder = TopicEncoder(links, topic)
    items = [encoder.inactive_chunk(inactive[s]) if s in inactive
             else encoder.active_chunk(partition) for s in page.items]
    url = f"{links.partition(topic_name, partition_id)}/chunks"
    return json_answer(list_json("KafkaChunkList", url, page.next, image.offset, items),
                       image.offset)


@router.get(_TOPIC + "/partitions/{partition_id}/chunks/{start_offset}",
            summary="The chunk that starts at this offset", response_model=None,
            responses={200: {"model": KafkaChunk}, **ERROR_RESPONSES})
async def get_chunk(request: Request, cluster_id: str, topic_name: TopicNamePath,
                    partition_id: PartitionIdPath, start_offset: OffsetPath,
                    min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    found = await _partition(request, cluster_id, topic_name, partition_id, min_offset,
                             wait_ms)
    if isinstance(found, Response):
        return found
    image, topic, partition = found
    encoder = TopicEncoder(Links(request, cluster_id), topic)
    if start_offset == max(partition.start_offset, 0):
        return json_answer(encoder.active_chunk(partition, image.offset), image.offset)
    chunk = topic.chunk(partition_id, start_offset)
    if chunk is None:
        return at_offset(error_response(
            Errors.UNKNOWN_CHUNK,
            f"Partition {topic_name}-{partition_id} has no chunk that starts at offset "
            f"{start_offset}.", 404), image.offset)
    return json_answer(encoder.inactive_chunk(chunk, image.offset), image.offset)
