"""The controller's RPC routes: one per operation, each a line in the tables below.

Write routes run on the leader (followers forward them); read routes answer from the local
committed image. Bodies are the protocol messages of ``chunkraft.protocol``.

Authorization: a broker's calls (registration, heartbeat, AlterPartition, producer ids, chunk
replica state, chunk sizes, CreateChunks with a broker id) need the caller to be that broker;
UnregisterBroker and ACL changes need ALTER on the cluster, DescribeAcls DESCRIBE
(:mod:`chunkraft.api.access`, 403 otherwise); topic operations are authorized per topic
(:mod:`chunkraft.api.authorized`); configurations per resource (ALTER_CONFIGS /
DESCRIBE_CONFIGS, :mod:`chunkraft.api.config_access`).
"""

from __future__ import annotations

from fastapi import APIRouter

from chunkraft.api.access import as_broker, cluster_refusal, on_cluster
from chunkraft.api.authorized import (
    alter_chunk_assignments_as,
    create_chunks_as,
    create_partitions_as,
    create_topics_as,
    delete_topics_as,
)
from chunkraft.api.config_access import config_refusal
from chunkraft.api.context import ControllerContext
from chunkraft.api.metadata_answers import metadata_answer
from chunkraft.api.rpc import EncodedAnswer, add_read_route, add_write_route
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations import acls, brokers, configs, producer_ids
from chunkraft.controller.operations.alter_partition import alter_partition
from chunkraft.controller.operations.chunk_sizes import report_chunk_sizes
from chunkraft.controller.operations.chunks import chunk_replica_state
from chunkraft.controller.result import ControllerResult, Operation
from chunkraft.protocol.acls import (
    AclOperation,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from chunkraft.protocol.brokers import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from chunkraft.protocol.chunk_sizes import ChunkSizesRequest, ChunkSizesResponse
from chunkraft.protocol.chunks import (
    AlterChunkAssignmentsRequest,
    AlterChunkAssignmentsResponse,
    ChunkReplicaStateRequest,
    ChunkReplicaStateResponse,
    CreateChunksRequest,
    CreateChunksResponse,
)
from chunkraft.protocol.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from chunkraft.protocol.producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
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
from chunkraft.security.principal import Principal

__all__ = ["router"]

router = APIRouter(prefix="/controller/v1", tags=["controller RPC"])


# ---------------------------------------------------------------- brokers


def _register(context: ControllerContext, principal: Principal,
              request: BrokerRegistrationRequest
              ) -> Operation[BrokerRegistrationResponse]:
    def operation(image: MetadataImage) -> ControllerResult[BrokerRegistrationResponse]:
        result = brokers.register_broker(
            image, request, cluster_id=context.cluster_id_text, sessions=context.heartbeats,
            now=context.monotonic())
        if result.response.error_code == 0:
            context.heartbeats.record_contact(request.broker_id, result.response.broker_epoch,
                                              context.monotonic())
        return result

    return as_broker(context, principal, request.broker_id, operation)


def _heartbeat(context: ControllerContext, principal: Principal,
               request: BrokerHeartbeatRequest
               ) -> Operation[BrokerHeartbeatResponse]:
    def operation(image: MetadataImage) -> ControllerResult[BrokerHeartbeatResponse]:
        result = brokers.broker_heartbeat(image, request)
        if result.response.error_code == 0:
            context.heartbeats.record_contact(request.broker_id, request.broker_epoch,
                                              context.monotonic())
        return result

    return as_broker(context, principal, request.broker_id, operation)


def _unregister(context: ControllerContext, principal: Principal,
                request: UnregisterBrokerRequest
                ) -> Operation[UnregisterBrokerResponse]:
    def operation(image: MetadataImage) -> ControllerResult[UnregisterBrokerResponse]:
        result = brokers.unregister_broker(image, request)
        if result.response.error_code == 0:
            context.heartbeats.forget(request.broker_id)
        return result

    return on_cluster(context, principal, AclOperation.ALTER, operation)


add_write_route(router, "/broker-registration", BrokerRegistrationRequest,
                BrokerRegistrationResponse, _register, summary="BrokerRegistration")
add_write_route(router, "/broker-heartbeat", BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                _heartbeat, summary="BrokerHeartbeat (also controlled shutdown)")
add_write_route(router, "/unregister-broker", UnregisterBrokerRequest, UnregisterBrokerResponse,
                _unregister, summary="UnregisterBroker")
add_write_route(router, "/alter-partition", AlterPartitionRequest, AlterPartitionResponse,
                lambda context, principal, request: as_broker(
                    context, principal, request.broker_id,
                    lambda image: alter_partition(image, request)),
                summary="AlterPartition (ISR changes from the leader)")
add_write_route(router, "/allocate-producer-ids", AllocateProducerIdsRequest,
                AllocateProducerIdsResponse,
                lambda context, principal, request: as_broker(
                    context, principal, request.broker_id,
                    lambda image: producer_ids.allocate_producer_ids(image, request)),
                summary="AllocateProducerIds (blocks of 1000)")

# ---------------------------------------------------------------- topics

add_write_route(router, "/create-topics", CreateTopicsRequest, CreateTopicsResponse,
                lambda context, principal, request: create_topics_as(
                    principal, context.authorizer, request),
                summary="CreateTopics")
add_write_route(router, "/delete-topics", DeleteTopicsRequest, DeleteTopicsResponse,
                lambda context, principal, request: delete_topics_as(
                    principal, context.authorizer, request),
                summary="DeleteTopics")

add_write_route(router, "/create-partitions", CreatePartitionsRequest, CreatePartitionsResponse,
                lambda context, principal, request: create_partitions_as(
                    principal, context.authorizer, request),
                summary="CreatePartitions (KIP-195, with KIP-253 epochs)")

# ---------------------------------------------------------------- chunks (KIP-1114)


def _create_chunks(context: ControllerContext, principal: Principal,
                   request: CreateChunksRequest) -> Operation[CreateChunksResponse]:
    """From a broker (``broker_id`` >= 0) only as that broker; from an admin, per topic."""
    operation = create_chunks_as(principal, context.authorizer, request)
    if request.broker_id >= 0:
        return as_broker(context, principal, request.broker_id, operation)
    return operation


add_write_route(router, "/create-chunks", CreateChunksRequest, CreateChunksResponse,
                lambda context, principal, request: _create_chunks(context, principal, request),
                summary="CreateChunks: cut the active chunk at the offsets its leader read")
add_write_route(router, "/alter-chunk-assignments", AlterChunkAssignmentsRequest,
                AlterChunkAssignmentsResponse,
                lambda context, principal, request: alter_chunk_assignments_as(
                    principal, context.authorizer, request),
                summary="AlterChunkAssignments: move the replicas of inactive chunks")
add_write_route(router, "/chunk-replica-state", ChunkReplicaStateRequest,
                ChunkReplicaStateResponse,
                lambda context, principal, request: as_broker(
                    context, principal, request.broker_id,
                    lambda image: chunk_replica_state(image, request)),
                summary="A broker reports a chunk copy complete, or drops its replica")
add_write_route(router, "/chunk-sizes", ChunkSizesRequest, ChunkSizesResponse,
                lambda context, principal, request: as_broker(
                    context, principal, request.broker_id,
                    lambda image: report_chunk_sizes(image, request, context.chunk_sizes)),
                summary="A broker reports the bytes it holds of each chunk (retention.bytes); "
                        "kept by the leader in memory, no records")


def _metadata(context: ControllerContext, principal: Principal, image: MetadataImage,
              request: MetadataRequest) -> EncodedAnswer:
    """``describe_as``'s answer, written without models (:mod:`chunkraft.api.metadata_json`:
    the same bytes) and kept per image, so polling clients cost one build between changes."""
    leader = context.controller.leader_id()
    return EncodedAnswer(metadata_answer(
        image, principal, context.authorizer, request, cluster_id=context.cluster_id_text,
        controller_id=-1 if leader is None else leader))


add_read_route(router, "/metadata", MetadataRequest, MetadataResponse, _metadata,
               summary="Metadata v13: brokers, topics, partitions and their chunks")

# ---------------------------------------------------------------- ACLs

add_write_route(router, "/create-acls", CreateAclsRequest, CreateAclsResponse,
                lambda context, principal, request: on_cluster(
                    context, principal, AclOperation.ALTER,
                    lambda image: acls.create_acls(image, request)),
                summary="CreateAcls (ALTER on the cluster)")
add_write_route(router, "/delete-acls", DeleteAclsRequest, DeleteAclsResponse,
                lambda context, principal, request: on_cluster(
                    context, principal, AclOperation.ALTER,
                    lambda image: acls.delete_acls(image, request)),
                summary="DeleteAcls (ALTER on the cluster)")
add_read_route(router, "/describe-acls", DescribeAclsRequest, DescribeAclsResponse,
               lambda context, principal, image, request: (
                   cluster_refusal(context, principal, AclOperation.DESCRIBE, image)
                   or acls.describe_acls(image, request).response),
               summary="DescribeAcls (DESCRIBE on the cluster)")

# ---------------------------------------------------------------- configurations


def _incremental_alter_configs(context: ControllerContext, principal: Principal,
                               request: IncrementalAlterConfigsRequest
                               ) -> Operation[IncrementalAlterConfigsResponse]:
    return lambda image: configs.incremental_alter_configs(
        image, request, refusal=config_refusal(context.authorizer, principal, image,
                                               AclOperation.ALTER_CONFIGS))


def _alter_configs(context: ControllerContext, principal: Principal,
                   request: AlterConfigsRequest) -> Operation[AlterConfigsResponse]:
    return lambda image: configs.alter_configs(
        image, request, refusal=config_refusal(context.authorizer, principal, image,
                                               AclOperation.ALTER_CONFIGS))


def _describe_configs(context: ControllerContext, principal: Principal, image: MetadataImage,
                      request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    return configs.describe_configs(
        image, request, refusal=config_refusal(context.authorizer, principal, image,
                                               AclOperation.DESCRIBE_CONFIGS)).response


add_write_route(router, "/incremental-alter-configs", IncrementalAlterConfigsRequest,
                IncrementalAlterConfigsResponse, _incremental_alter_configs,
                summary="IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT; ALTER_CONFIGS)")
add_write_route(router, "/alter-configs", AlterConfigsRequest, AlterConfigsResponse,
                _alter_configs,
                summary="AlterConfigs (legacy: the keys given become the only ones set)")
add_read_route(router, "/describe-configs", DescribeConfigsRequest, DescribeConfigsResponse,
               _describe_configs,
               summary="DescribeConfigs: values, sources and synonyms (DESCRIBE_CONFIGS)")
