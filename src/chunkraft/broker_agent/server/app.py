"""create_broker_app: the broker agent's HTTP surface, built for one broker runtime.

Routes: the data plane (``/broker/v1/produce``, ``fetch``, ``list-offsets``,
``offsets-for-leader-epoch``, ``init-producer-id``, ``write-txn-markers``, ``create-chunks``;
see :mod:`.routes`), ``GET /broker/v1/status``, ``/healthz``, ``/readyz`` and ``/metrics``.
Authentication is the controller's middleware (:mod:`chunkraft.api.authentication`: bearer
tokens, client certificates, anonymous if allowed); authorization is :mod:`.access` over the
broker's own metadata image. Errors of a whole request have the controller's body
(``error_code``, ``error_name``, ``message``), an unhandled exception included
(:mod:`.last_resort`: UNKNOWN_SERVER_ERROR and one log line, never a traceback).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import BaseModel

from chunkraft.api.authentication import AuthenticationMiddleware, principal_of
from chunkraft.api.errors import ErrorBody, install_error_handlers
from chunkraft.api.metrics import METRICS_CONTENT_TYPE, RequestMetricsMiddleware, RequestStats
from chunkraft.broker_agent.server import (
    coordinator_routes,
    group_routes,
    local_replicas_route,
    metadata_route,
    routes,
)
from chunkraft.broker_agent.server.access import cluster_refusal
from chunkraft.broker_agent.server.http import json_answer
from chunkraft.broker_agent.server.last_resort import KafkaErrorMiddleware
from chunkraft.broker_agent.server.ports import BrokerRuntimeLike
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.data_plane import BrokerStatus
from chunkraft.records.uuids import kafka_uuid_text

__all__ = ["BrokerHealth", "BrokerReadiness", "broker_status", "create_broker_app"]

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


class BrokerHealth(BaseModel):
    """``GET /healthz``: the process is up."""

    status: str
    node_id: int


class BrokerReadiness(BaseModel):
    """``GET /readyz``: whether this broker should take traffic, and why not."""

    ready: bool
    registered: bool
    fenced: bool
    shutting_down: bool
    broker_epoch: int
    metadata_offset: int


def broker_status(runtime: BrokerRuntimeLike, *, with_hash: bool = False) -> BrokerStatus:
    """What ``GET /broker/v1/status`` answers: ids, registration, metadata offset, replica
    counts, and (``with_hash``) the content hash of the broker's image."""
    follower = runtime.follower
    image = follower.image
    lifecycle = runtime.lifecycle
    leaders, followers, inactive = runtime.replica_manager.status_counts()
    return BrokerStatus(
        node_id=runtime.node_id, cluster_id=kafka_uuid_text(runtime.cluster_id),
        broker_epoch=lifecycle.broker_epoch, fenced=lifecycle.fenced,
        shutting_down=lifecycle.shutting_down, metadata_offset=follower.offset,
        image_hash=image.content_hash() if with_hash else None,
        leaders=leaders, followers=followers, inactive_chunks=inactive)


class BrokerCollector(Collector):
    """The broker's state, read from its runtime when scraped."""

    def __init__(self, runtime: BrokerRuntimeLike) -> None:
        self.runtime = runtime

    def collect(self) -> Iterator[Metric]:
        runtime = self.runtime
        lifecycle = runtime.lifecycle
        leaders, followers, inactive = runtime.replica_manager.status_counts()
        yield _gauge("chunkraft_broker_metadata_offset", "The last metadata log offset in this "
                     "broker's image", runtime.follower.offset)
        yield _gauge("chunkraft_broker_epoch", "This broker's epoch (-1: not registered)",
                     lifecycle.broker_epoch)
        yield _gauge("chunkraft_broker_fenced", "1 while the controller fences this broker",
                     int(lifecycle.fenced))
        yield _gauge("chunkraft_broker_shutting_down", "1 during a controlled shutdown",
                     int(lifecycle.shutting_down))
        replicas = GaugeMetricFamily("chunkraft_broker_replicas", "Partitions whose active "
                                     "chunk this broker leads or follows, and inactive chunks "
                                     "it holds", labels=("role",))
        replicas.add_metric(("leader",), leaders)
        replicas.add_metric(("follower",), followers)
        replicas.add_metric(("inactive_chunk",), inactive)
        yield replicas
        info = GaugeMetricFamily("chunkraft_broker_info", "This broker's ids (always 1)",
                                 labels=("node_id", "cluster_id"))
        info.add_metric((str(runtime.node_id), kafka_uuid_text(runtime.cluster_id)), 1)
        yield info


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class _StatsCollector(Collector):
    def __init__(self, stats: RequestStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        return self.stats.families()


_FORBIDDEN: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "No or invalid credentials"},
    403: {"model": ErrorBody, "description": "The principal may not DESCRIBE the cluster"},
}


def create_broker_app(runtime: BrokerRuntimeLike, *, lifespan: Lifespan | None = None
                      ) -> FastAPI:
    """The FastAPI application of one broker agent; nothing is built at import time.

    ``runtime`` is kept in ``app.state.runtime`` and read on every request (its image, its
    ReplicaManager); ``lifespan`` (optional) runs around the server's life, for the process to
    start and stop the broker's tasks on uvicorn's loop. ``app.state.metrics`` is the request
    statistics behind ``/metrics``.
    """
    app = FastAPI(title="chunkraft broker", version="1", lifespan=lifespan)
    app.state.runtime = runtime
    install_error_handlers(app)
    stats = RequestStats()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_StatsCollector(stats))
    registry.register(BrokerCollector(runtime))
    app.state.metrics = stats
    app.state.metrics_registry = registry
    # Middleware runs outermost-last-added: metrics see every answer, 401s included. The
    # Kafka error answer of an unhandled exception is innermost, so metrics count it too.
    app.add_middleware(KafkaErrorMiddleware)
    if runtime.authenticator is not None:
        app.add_middleware(AuthenticationMiddleware, authenticator=runtime.authenticator)
    app.add_middleware(RequestMetricsMiddleware, stats=stats)
    app.include_router(routes.router)
    app.include_router(local_replicas_route.router)
    app.include_router(metadata_route.router)
    app.include_router(coordinator_routes.router)
    app.include_router(group_routes.router)

    @app.get("/broker/v1/status", tags=["broker data plane"], response_model=None,
             summary="This broker's ids, registration, metadata offset and replica counts "
             "(DESCRIBE on the cluster)",
             responses={200: {"model": BrokerStatus}, **_FORBIDDEN})
    async def status(request: Request, hash: bool = False) -> Response:
        refusal = cluster_refusal(runtime.authorizer, runtime.follower.image,
                                  principal_of(request), AclOperation.DESCRIBE)
        if refusal is not None:
            return refusal
        return json_answer(broker_status(runtime, with_hash=hash))

    @app.get("/healthz", tags=["health"], summary="The process is up",
             responses={200: {"model": BrokerHealth}})
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok", "node_id": runtime.node_id})

    @app.get("/readyz", tags=["health"],
             summary="Registered, unfenced (so caught up with the metadata) and not shutting down",
             responses={200: {"model": BrokerReadiness, "description": "Ready"},
                        503: {"model": BrokerReadiness, "description": "Not ready (see the "
                              "fields)"}})
    async def readyz() -> JSONResponse:
        lifecycle = runtime.lifecycle
        registered = lifecycle.broker_epoch >= 0
        # The controller unfences a broker only once its metadata caught up, so unfenced
        # stands for "caught up" too.
        ready = registered and not lifecycle.fenced and not lifecycle.shutting_down
        return JSONResponse(
            BrokerReadiness(ready=ready, registered=registered, fenced=lifecycle.fenced,
                            shutting_down=lifecycle.shutting_down,
                            broker_epoch=lifecycle.broker_epoch,
                            metadata_offset=runtime.follower.offset).model_dump(),
            status_code=200 if ready else 503)

    @app.get("/metrics", tags=["health"], response_class=Response, responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}},
              "description": "Prometheus text exposition format 0.0.4"}, **_FORBIDDEN},
             summary="Prometheus metrics: requests, metadata offset, replicas (DESCRIBE on the "
             "cluster)")
    async def metrics(request: Request) -> Response:
        refusal = cluster_refusal(runtime.authorizer, runtime.follower.image,
                                  principal_of(request), AclOperation.DESCRIBE)
        if refusal is not None:
            return refusal
        return Response(generate_latest(registry), media_type=METRICS_CONTENT_TYPE)

    return app
