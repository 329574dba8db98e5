"""The controller's RPC routes: one per operation, each a line in the tables below.

Write routes run on the leader (followers forward them); read routes answer from the local
committed image. Bodies are the protocol messages of ``chunkraft.protocol``.
"""

from __future__ import annotations

from fastapi import APIRouter

from chunkraft.api.context import ControllerContext
from chunkraft.api.rpc import add_read_route, add_write_route
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations import acls, brokers, producer_ids, topics
from chunkraft.controller.operations.alter_partition import alter_partition
from chunkraft.controller.result import ControllerResult, Operation
from chunkraft.protocol.acls import (
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
from chunkraft.protocol.producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)
from chunkraft.protocol.topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)

__all__ = ["router"]

router = APIRouter(prefix="/controller/v1", tags=["controller RPC"])


# ---------------------------------------------------------------- brokers


def _register(context: ControllerContext, request: BrokerRegistrationRequest
              ) -> Operation[BrokerRegistrationResponse]:
    def operation(image: MetadataImage) -> ControllerResult[BrokerRegistrationResponse]:
        result = brokers.register_broker(
            image, request, cluster_id=context.cluster_id_text, sessions=context.heartbeats,
            now=context.monotonic())
        if result.response.error_code == 0:
            context.heartbeats.record_contact(request.broker_id, result.response.broker_epoch,
                                              context.monotonic())
        return result

    return operation


def _heartbeat(context: ControllerContext, request: BrokerHeartbeatRequest
               ) -> Operation[BrokerHeartbeatResponse]:
    def operation(image: MetadataImage) -> ControllerResult[BrokerHeartbeatResponse]:
        result = brokers.broker_heartbeat(image, request)
        if result.response.error_code == 0:
            context.heartbeats.record_contact(request.broker_id, request.broker_epoch,
                                              context.monotonic())
        return result

    return operation


def _unregister(context: ControllerContext, request: UnregisterBrokerRequest
                ) -> Operation[UnregisterBrokerResponse]:
    def operation(image: MetadataImage) -> ControllerResult[UnregisterBrokerResponse]:
        result = brokers.unregister_broker(image, request)
        if result.response.error_code == 0:
            context.heartbeats.forget(request.broker_id)
        return result

    return operation


add_write_route(router, "/broker-registration", BrokerRegistrationRequest,
                BrokerRegistrationResponse, _register, summary="BrokerRegistration")
add_write_route(router, "/broker-heartbeat", BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                _heartbeat, summary="BrokerHeartbeat (also controlled shutdown)")
add_write_route(router, "/unregister-broker", UnregisterBrokerRequest, UnregisterBrokerResponse,
                _unregister, summary="UnregisterBroker")
add_write_route(router, "/alter-partition", AlterPartitionRequest, AlterPartitionResponse,
                lambda context, request: lambda image: alter_partition(image, request),
                summary="AlterPartition (ISR changes from the leader)")
add_write_route(router, "/allocate-producer-ids", AllocateProducerIdsRequest,
                AllocateProducerIdsResponse,
                lambda context, request: lambda image: producer_ids.allocate_producer_ids(
                    image, request), summary="AllocateProducerIds (blocks of 1000)")

# ---------------------------------------------------------------- topics

add_write_route(router, "/create-topics", CreateTopicsRequest, CreateTopicsResponse,
                lambda context, request: lambda image: topics.create_topics(image, request),
                summary="CreateTopics")
add_write_route(router, "/delete-topics", DeleteTopicsRequest, DeleteTopicsResponse,
                lambda context, request: lambda image: topics.delete_topics(image, request),
                summary="DeleteTopics")


def _metadata(context: ControllerContext, image: MetadataImage, request: MetadataRequest
              ) -> MetadataResponse:
    leader = context.controller.leader_id()
    return topics.describe(image, request, cluster_id=context.cluster_id_text,
                           controller_id=-1 if leader is None else leader).response


add_read_route(router, "/metadata", MetadataRequest, MetadataResponse, _metadata,
               summary="Metadata v13: brokers, topics, partitions and their chunks")

# ---------------------------------------------------------------- ACLs

add_write_route(router, "/create-acls", CreateAclsRequest, CreateAclsResponse,
                lambda context, request: lambda image: acls.create_acls(image, request),
                summary="CreateAcls")
add_write_route(router, "/delete-acls", DeleteAclsRequest, DeleteAclsResponse,
                lambda context, request: lambda image: acls.delete_acls(image, request),
                summary="DeleteAcls")
add_read_route(router, "/describe-acls", DescribeAclsRequest, DescribeAclsResponse,
               lambda context, image, request: acls.describe_acls(image, request).response,
               summary="DescribeAcls")
