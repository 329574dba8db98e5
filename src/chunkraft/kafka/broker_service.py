"""The Kafka listener of a broker: the ``--bootstrap-server`` target of stock clients.

A broker serves, on each Kafka listener of ``listeners``: ApiVersions and SASL; Metadata and
DescribeCluster (endpoint type 1) from its own metadata image, naming itself as the node that
takes admin requests; InitProducerId through the broker's own route; and the admin APIs,
forwarded to the controllers with the client's own
credentials (:class:`~chunkraft.kafka.channel_gateway.ChannelGateway`). The listener runs on
the broker's event loop beside uvicorn.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from chunkraft.broker_agent.controller_channel import ControllerRpcError
from chunkraft.broker_agent.runtime import BrokerRuntime
from chunkraft.controller.raft.log import QuorumStatus
from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.registry import admin_handlers
from chunkraft.kafka.channel_gateway import ChannelGateway
from chunkraft.kafka.chunk_cut import with_operator_cuts
from chunkraft.kafka.cluster_answers import describe_cluster_answer, metadata_answer_bytes
from chunkraft.kafka.controller_service import connection_limits
from chunkraft.kafka.metadata_bytes import TopicBytesCache
from chunkraft.kafka.producer_id_handler import init_producer_id_handler
from chunkraft.kafka.quorum_answer import describe_quorum_answer, status_from_json
from chunkraft.kafka.route_gateway import RouteGateway
from chunkraft.kafka.server.listener import KafkaServer
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.kafka.server.sasl import KafkaAuthenticator
from chunkraft.records.uuids import kafka_uuid_str

__all__ = ["broker_handlers", "broker_kafka_server"]


_NO_STATUS = QuorumStatus(node_id=-1, state="unknown", leader_id=None, epoch=-1,
                          has_quorum=False, commit_index=-1, last_applied_index=-1,
                          high_watermark=-1, voters=(), failure=None)
"""What a broker answers DescribeQuorum from when no controller told it the quorum's state."""


def broker_handlers(runtime: BrokerRuntime, app: FastAPI,
                    verify: ssl.SSLContext | bool = True) -> list[ApiHandler]:
    """Every API a broker's Kafka listener serves but ApiVersions and SASL; ``app`` is the
    broker's HTTP app, whose data-plane routes the data-plane APIs run; ``verify`` checks the
    brokers it asks to cut a chunk (httpx's ``verify``)."""
    node_id = runtime.node_id

    def cluster_id() -> str:
        known = runtime.cluster_id
        return known if isinstance(known, str) else kafka_uuid_str(known)

    topics = TopicBytesCache()

    async def metadata(request: KafkaRequest) -> bytes:
        return metadata_answer_bytes(runtime.follower.image, request.body, request.version,
                                     request.session, runtime.authorizer, topics,
                                     cluster_id=cluster_id(), self_id=node_id)

    async def describe_cluster(request: KafkaRequest) -> dict[str, Any]:
        return describe_cluster_answer(runtime.follower.image, request.body, request.version,
                                       request.session, cluster_id=cluster_id(),
                                       self_id=node_id, controllers=None)

    async def describe_quorum(request: KafkaRequest) -> dict[str, Any]:
        token = request.session.token
        try:
            status = await runtime.controller.call(
                "/controller/v1/quorum", method="GET", retry_for=10.0,
                headers={"authorization": f"Bearer {token}"} if token else None)
        except ControllerRpcError as error:
            # Refused (no DESCRIBE on the cluster), or no controller answered: then the client
            # is told NOT_LEADER_OR_FOLLOWER and retries, as across a leader change.
            allowed = error.error is not Errors.CLUSTER_AUTHORIZATION_FAILED
            return describe_quorum_answer(_NO_STATUS, request.body, allowed=allowed,
                                          endpoints=[])
        return describe_quorum_answer(status_from_json(status), request.body, allowed=True,
                                      endpoints=[])

    return [ApiHandler(3, 0, 12, metadata), ApiHandler(60, 0, 1, describe_cluster),
            ApiHandler(55, 0, 2, describe_quorum),
            init_producer_id_handler(RouteGateway(app)),
            *with_operator_cuts(admin_handlers(ChannelGateway(runtime.controller)),
                                lambda: runtime.follower.image, verify)]


@contextlib.asynccontextmanager
async def broker_kafka_server(runtime: BrokerRuntime, tls: ssl.SSLContext | None,
                              app: FastAPI, verify: ssl.SSLContext | bool = True
                              ) -> AsyncIterator[KafkaServer | None]:
    """Runs the broker's Kafka listeners for the duration (yields None without any)."""
    config = runtime.config
    if not config.kafka_listeners:
        yield None
        return
    authenticator = runtime.authenticator
    server = KafkaServer(
        config.kafka_listeners, broker_handlers(runtime, app, verify),
        KafkaAuthenticator(authenticator.credentials if authenticator else None,
                           config.sasl_enabled_mechanisms, config.auth_allow_anonymous),
        limits=connection_limits(config), max_connections_per_ip=config.max_connections_per_ip,
        tls=tls)
    await server.start()
    try:
        yield server
    finally:
        await server.close()
