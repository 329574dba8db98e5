"""The Kafka listener of a controller: KIP-919's ``--bootstrap-controller`` target.

A controller serves, on each Kafka listener of ``listeners``: ApiVersions and SASL; Metadata and
DescribeCluster from its own committed image (DescribeCluster answers the controllers, endpoint
type 2, with the active controller as ``controller_id``); DescribeQuorum
(:mod:`~chunkraft.kafka.quorum_answer`); and the admin APIs, each running the
controller RPC route its REST twin runs, in-process (:class:`~chunkraft.kafka.route_gateway.
RouteGateway`), so a follower forwards writes to the leader exactly as for REST.

The listener runs on the controller's event loop, beside uvicorn: it never touches the Raft
thread but through the same operations the HTTP routes use.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI

from chunkraft.api.context import ControllerContext
from chunkraft.api.tls import TlsSettings, server_ssl_context
from chunkraft.controller.config import ControllerConfig
from chunkraft.kafka.admin.registry import admin_handlers
from chunkraft.kafka.chunk_cut import with_operator_cuts
from chunkraft.kafka.cluster_answers import describe_cluster_answer, metadata_answer_bytes
from chunkraft.kafka.metadata_bytes import TopicBytesCache
from chunkraft.kafka.quorum_answer import describe_quorum_answer
from chunkraft.kafka.route_gateway import RouteGateway
from chunkraft.kafka.server.connection import ConnectionLimits
from chunkraft.kafka.server.listener import KafkaServer
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.kafka.server.sasl import KafkaAuthenticator
from chunkraft.protocol.acls import AclOperation

__all__ = ["controller_kafka_service"]

Service = Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]


def _controllers(config: ControllerConfig, listener: str) -> list[dict[str, Any]]:
    """The controllers DescribeCluster names: controller.kafka.endpoints, else this node's
    advertised listener of that name."""
    if config.controller_kafka_endpoints:
        return [{"broker_id": node, "host": host, "port": port, "rack": None}
                for node, host, port in config.controller_kafka_endpoints]
    return [{"broker_id": config.node_id, "host": entry.host, "port": entry.port, "rack": None}
            for entry in config.kafka_advertised_listeners if entry.name == listener]


def controller_handlers(config: ControllerConfig, context: ControllerContext,
                        app: FastAPI) -> list[ApiHandler]:
    """Every API a controller's Kafka listener serves but ApiVersions and SASL."""
    cluster_id = context.cluster_id_text

    topics = TopicBytesCache()

    async def metadata(request: KafkaRequest) -> bytes:
        return metadata_answer_bytes(context.controller.image, request.body, request.version,
                                     request.session, context.authorizer, topics,
                                     cluster_id=cluster_id, self_id=None)

    async def describe_cluster(request: KafkaRequest) -> dict[str, Any]:
        return describe_cluster_answer(
            context.controller.image, request.body, request.version, request.session,
            cluster_id=cluster_id, self_id=context.controller.leader_id(),
            controllers=_controllers(config, request.session.listener))

    async def describe_quorum(request: KafkaRequest) -> dict[str, Any]:
        image = context.controller.image
        allowed = context.authorizer is None or context.authorizer.authorize_cluster(
            image, request.principal, AclOperation.DESCRIBE)
        endpoints = [(entry["broker_id"], request.session.listener, entry["host"],
                      entry["port"]) for entry in _controllers(config, request.session.listener)]
        return describe_quorum_answer(context.controller.raft.status(), request.body,
                                      allowed=allowed, endpoints=endpoints)

    admin = with_operator_cuts(admin_handlers(RouteGateway(app)),
                               lambda: context.controller.image, context.ssl_context or True)
    return [ApiHandler(3, 0, 12, metadata), ApiHandler(60, 0, 1, describe_cluster),
            ApiHandler(55, 0, 2, describe_quorum), *admin]


def controller_kafka_service(config: ControllerConfig, context: ControllerContext,
                             tls: TlsSettings | None) -> Service | None:
    """The lifespan service running the controller's Kafka listeners (None without any)."""
    if not config.kafka_listeners:
        return None
    credentials = context.authenticator.credentials if context.authenticator else None

    @contextlib.asynccontextmanager
    async def service(app: FastAPI) -> AsyncIterator[None]:
        server = KafkaServer(
            config.kafka_listeners, controller_handlers(config, context, app),
            KafkaAuthenticator(credentials, config.sasl_enabled_mechanisms,
                               config.auth_allow_anonymous),
            limits=ConnectionLimits.of_settings(config),
            max_connections_per_ip=config.max_connections_per_ip,
            tls=server_ssl_context(tls) if tls is not None else None)
        await server.start()
        try:
            yield
        finally:
            await server.close()

    return service
