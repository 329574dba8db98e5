"""Operations run as a principal: per-topic authorization inside the operation, Kafka's way.

STUB (the lead is implementing it): each wrapper runs the operation unchanged. Signatures are
final: the check runs inside the returned operation, on the image the operation validates
against, so the leader decides with the ACLs it is about to commit on top of.
"""

from __future__ import annotations

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations import topics
from chunkraft.controller.operations.chunks import alter_chunk_assignments, create_chunks
from chunkraft.controller.operations.create_partitions import create_partitions
from chunkraft.controller.result import Operation
from chunkraft.protocol.chunks import (
    AlterChunkAssignmentsRequest,
    AlterChunkAssignmentsResponse,
    CreateChunksRequest,
    CreateChunksResponse,
)
from chunkraft.protocol.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal

__all__ = [
    "alter_chunk_assignments_as",
    "create_chunks_as",
    "create_partitions_as",
    "create_topics_as",
    "delete_topics_as",
    "describe_as",
]


def create_topics_as(principal: Principal, authorizer: Authorizer | None,
                     request: CreateTopicsRequest) -> Operation[CreateTopicsResponse]:
    return lambda image: topics.create_topics(image, request)


def delete_topics_as(principal: Principal, authorizer: Authorizer | None,
                     request: DeleteTopicsRequest) -> Operation[DeleteTopicsResponse]:
    return lambda image: topics.delete_topics(image, request)


def create_partitions_as(principal: Principal, authorizer: Authorizer | None,
                         request: CreatePartitionsRequest) -> Operation[CreatePartitionsResponse]:
    return lambda image: create_partitions(image, request)


def create_chunks_as(principal: Principal, authorizer: Authorizer | None,
                     request: CreateChunksRequest) -> Operation[CreateChunksResponse]:
    return lambda image: create_chunks(image, request)


def alter_chunk_assignments_as(
        principal: Principal, authorizer: Authorizer | None,
        request: AlterChunkAssignmentsRequest) -> Operation[AlterChunkAssignmentsResponse]:
    return lambda image: alter_chunk_assignments(image, request)


def describe_as(image: MetadataImage, principal: Principal, authorizer: Authorizer | None,
                request: MetadataRequest, *, cluster_id: str, controller_id: int
                ) -> MetadataResponse:
    return topics.describe(image, request, cluster_id=cluster_id,
                           controller_id=controller_id).response
