"""run_broker: one broker agent as a process: the data plane on uvicorn's event loop, heartbeats
on a thread of their own.

Start-up: the log directory is recovered (``LogManager.load_all``: torn tails cut, indexes
rebuilt), then uvicorn serves the data plane (``create_broker_app``) and, in the app's lifespan,
the ReplicaManager starts, the metadata follower starts reading the controllers' stream (each
delta goes to the ReplicaManager) and the lifecycle registers and heartbeats, on a thread of
its own (``LifecycleThread``) so that data-plane work never delays a heartbeat.

SIGTERM / SIGINT: a controlled shutdown first, while the data plane still serves (followers may
need to catch up while leadership moves): heartbeats ask ``want_shut_down`` until the
controller says ``should_shut_down`` (or ``controlled.shutdown.timeout.ms`` passes); then uvicorn
stops, the tasks are cancelled, the logs are flushed and closed, and the process exits 0. A
second signal skips the wait.

The ReplicaManager, LogManager, peer client, ProducerIdManager and HTTP app are other modules';
they are looked up at start so that this module runs, with
stand-ins, while one of them is missing (the stand-ins serve ``/healthz`` and
``/broker/v1/status`` and keep no replicas).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import ssl
import sys
from collections.abc import AsyncIterator, Callable
from types import FrameType
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from chunkraft.api.authentication import Authenticator, principal_of
from chunkraft.api.tls import TlsSettings, server_ssl_context
from chunkraft.broker_agent.config import BrokerConfig
from chunkraft.broker_agent.controller_channel import ControllerChannel
from chunkraft.broker_agent.coordinator.groups import GroupCoordinator
from chunkraft.broker_agent.coordinator.transactions import TransactionCoordinator
from chunkraft.broker_agent.lifecycle import BrokerLifecycle
from chunkraft.broker_agent.lifecycle_thread import LifecycleThread
from chunkraft.broker_agent.metadata_follower import MetadataFollower
from chunkraft.broker_agent.runtime import BrokerRuntime
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.errors import ChunkraftError, ConfigError
from chunkraft.kafka.broker_service import broker_kafka_server
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.brokers import BrokerRegistrationListener
from chunkraft.protocol.data_plane import BrokerStatus
from chunkraft.records.uuids import kafka_uuid_str
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialsFileError, CredentialStore

__all__ = ["build_runtime", "create_app", "metadata_stats", "run_broker"]

logger = logging.getLogger(__name__)


def _optional(module: str, name: str) -> Any:
    """``module.name``, or None while that module (another part's) does not exist yet."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


class _NoReplicas:
    """Stands in for the ReplicaManager when there is none: hosts nothing."""

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        return None

    def status_counts(self) -> tuple[int, int, int]:
        return 0, 0, 0


def _outbound_ssl(config: BrokerConfig) -> ssl.SSLContext | bool:
    """How the broker verifies controllers and peers (and presents its certificate).

    One context for every client: httpx builds a context per client otherwise, and loading the
    CA bundle costs about 45 ms each, which counts against a restarted broker's start-up."""
    if config.ssl_ca_file is None:
        return httpx.create_ssl_context()  # httpx's default: certifi's CAs
    context = ssl.create_default_context(cafile=str(config.ssl_ca_file))
    if config.ssl_certfile is not None and config.ssl_keyfile is not None:
        context.load_cert_chain(str(config.ssl_certfile), str(config.ssl_keyfile))
    return context


def _kafka_tls(config: BrokerConfig) -> ssl.SSLContext | None:
    """The server TLS context of the Kafka SSL / SASL_SSL listeners (the ssl.* files)."""
    if config.ssl_certfile is None:
        return None
    return server_ssl_context(TlsSettings(config.ssl_certfile, config.ssl_keyfile,
                                          config.ssl_ca_file, config.ssl_client_auth))


def _authenticator(config: BrokerConfig) -> Authenticator:
    store = None
    if config.auth_credentials_file is not None:
        try:
            store = CredentialStore(config.auth_credentials_file)
        except CredentialsFileError as error:
            raise ConfigError(f"auth.credentials.file: {error}",
                              setting="auth.credentials.file") from None
    return Authenticator(credentials=store, certificates=config.ssl_client_auth != "none",
                         allow_anonymous=config.auth_allow_anonymous)


def _log_manager(config: BrokerConfig) -> Any:
    log_manager = _optional("chunkraft.broker_agent.storage", "LogManager")
    log_config = _optional("chunkraft.broker_agent.storage", "LogConfig")
    if log_manager is None or log_config is None:
        logger.warning("no log store in this build: the broker keeps no data")
        return None
    settings = {
        "segment_bytes": config.log_segment_bytes, "segment_ms": config.log_roll_ms,
        "retention_ms": config.log_retention_ms, "retention_bytes": config.log_retention_bytes,
        "flush_interval_messages": config.log_flush_interval_messages,
        "flush_interval_ms": config.log_flush_interval_ms,
        "index_interval_bytes": config.log_index_interval_bytes,
    }
    fields = getattr(log_config, "__dataclass_fields__", None)
    if fields is not None:
        settings = {k: v for k, v in settings.items() if k in fields}
    config.log_dir.mkdir(parents=True, exist_ok=True)
    return log_manager(config.log_dir, log_config(**settings))


def _replication_config(config: BrokerConfig) -> Any:
    replication = _optional("chunkraft.broker_agent.replication_config", "ReplicationConfig")
    if replication is None:
        return None
    settings = {
        "replica_lag_time_max_ms": config.replica_lag_time_max_ms,
        "replica_fetch_wait_max_ms": config.replica_fetch_wait_max_ms,
        "replica_fetch_max_bytes": config.replica_fetch_max_bytes,
        "chunk_copy_throttle_bytes_per_second": config.chunk_copy_throttle_bytes_per_second,
        "min_insync_replicas": config.min_insync_replicas,
        "retention_check_interval_ms": config.log_retention_check_interval_ms,
    }
    fields = getattr(replication, "__dataclass_fields__", {})
    return replication(**{k: v for k, v in settings.items() if k in fields})


def build_runtime(config: BrokerConfig) -> BrokerRuntime:
    """Every part of the broker, wired; nothing runs yet. ConfigError for unusable settings."""
    token = config.broker_token()
    verify = _outbound_ssl(config)
    channel = ControllerChannel(config.controller_quorum_bootstrap_servers, token=token,
                                timeout=min(10.0, config.request_timeout_ms / 1000),
                                retry_for=config.request_timeout_ms / 1000, verify=verify)
    follower = MetadataFollower(channel, cluster_id=config.cluster_id,
                                wait_ms=config.metadata_fetch_wait_max_ms)
    advertised = config.advertised

    def cluster_id_text() -> str | None:
        known = follower.cluster_id
        return kafka_uuid_str(known) if known is not None else None

    heartbeat_interval = config.broker_heartbeat_interval_ms / 1000
    # The heartbeats' own channel (own HTTP client, used only on the heartbeat thread), with a
    # short per-exchange timeout: a controller that hangs costs one retry on another, not a
    # session. Retries are safe: every call keeps its Idempotency-Key.
    heartbeat_channel = ControllerChannel(
        config.controller_quorum_bootstrap_servers, token=token,
        timeout=min(10.0, config.request_timeout_ms / 1000, max(3.0, 2 * heartbeat_interval)),
        retry_for=config.request_timeout_ms / 1000, verify=verify)
    channel.share_preference(heartbeat_channel)  # heartbeats go to the leader first too
    lifecycle = LifecycleThread(BrokerLifecycle(
        heartbeat_channel, node_id=config.node_id, host=advertised.host, port=advertised.port,
        scheme=advertised.scheme, rack=config.broker_rack, cluster_id=cluster_id_text,
        # Read on the heartbeat thread: one int attribute, atomic under the GIL.
        metadata_offset=lambda: follower.applied_offset,
        heartbeat_interval=heartbeat_interval,
        kafka_listeners=tuple(BrokerRegistrationListener(
            name=entry.name, host=entry.host, port=entry.port,
            security_protocol=entry.protocol_id) for entry in config.kafka_advertised_listeners)))

    def broker_epoch() -> int:
        return lifecycle.broker_epoch

    logs = _log_manager(config)
    peers: Any = None
    replica_manager: Any = _NoReplicas()
    manager_type = _optional("chunkraft.broker_agent.replica_manager", "ReplicaManager")
    peer_type = _optional("chunkraft.broker_agent.peer_client", "HttpPeerClient")
    if manager_type is not None and peer_type is not None and logs is not None:
        peers = peer_type(lambda: follower.image, token, verify=verify)
        replica_manager = manager_type(config.node_id, logs, _replication_config(config),
                                       channel, peers, broker_epoch,
                                       caught_up=lambda: follower.caught_up)
    else:
        logger.warning("no ReplicaManager in this build: the broker hosts no replicas")
    follower.add_listener(replica_manager)

    def replicas_broken(error: BaseException) -> None:
        # The ReplicaManager failed on a delta: its replicas may not match the image any more,
        # so leadership should move away (Kafka's broker would stop). Fenced until restarted.
        if not lifecycle.want_fence:
            logger.error("broker %d: asking the controller to fence this broker after: %r",
                         config.node_id, error)
        lifecycle.want_fence = True

    follower.on_listener_error = replicas_broken
    producer_type = _optional("chunkraft.broker_agent.producer_ids", "ProducerIdManager")
    producer_ids = (producer_type(channel, config.node_id, broker_epoch)
                    if producer_type is not None else None)
    TransactionCoordinator.for_broker(follower, replica_manager, producer_ids, channel, config,
                                      token=token, verify=verify)
    GroupCoordinator.for_broker(follower, replica_manager)
    return BrokerRuntime(
        config=config, controller=channel, follower=follower, lifecycle=lifecycle,
        replica_manager=replica_manager, producer_ids=producer_ids, logs=logs, peers=peers,
        authenticator=_authenticator(config),
        authorizer=Authorizer(config.super_users,
                              allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
                              broker_principal=config.auth_broker_principal))


def metadata_stats(runtime: BrokerRuntime, samples: int = 0) -> dict[str, Any]:
    """The metadata follower's progress and commit-to-applied latency (p50 / p99, ms), with the
    last ``samples`` batches as ``[base offset, append_time_ms, applied_ms]``."""
    follower = runtime.follower
    recent = list(follower.latency.batches)[-samples:] if samples > 0 else []
    return {"batches": [list(item) for item in recent],
            "node_id": runtime.node_id, "metadata_offset": follower.offset,
            "applied_offset": follower.applied_offset,
            "high_watermark": follower.high_watermark, "leader_id": follower.leader_id,
            "controller_url": follower.url, "snapshots_loaded": follower.snapshots_loaded,
            "batches_applied": follower.batches_applied, "failures": follower.failures,
            "latency": follower.latency.summary(),
            "heartbeats": runtime.lifecycle.heartbeats,
            "registrations": runtime.lifecycle.registrations,
            "broker_epoch": runtime.lifecycle.broker_epoch,
            "fenced": runtime.lifecycle.fenced}


def _status(runtime: BrokerRuntime, with_hash: bool) -> BrokerStatus:
    image = runtime.follower.image
    lifecycle = runtime.lifecycle
    leaders, followers, inactive = runtime.replica_manager.status_counts()
    cluster = runtime.cluster_id
    return BrokerStatus(
        node_id=runtime.node_id, cluster_id=cluster if isinstance(cluster, str)
        else kafka_uuid_str(cluster), broker_epoch=lifecycle.broker_epoch,
        fenced=lifecycle.fenced, shutting_down=lifecycle.shutting_down,
        metadata_offset=image.offset, image_hash=image.content_hash() if with_hash else None,
        leaders=leaders, followers=followers, inactive_chunks=inactive)


def _refusal(runtime: BrokerRuntime, request: Request) -> Response | None:
    authorizer = runtime.authorizer
    principal = principal_of(request)
    if authorizer is None or authorizer.authorize_cluster(
            runtime.follower.image, principal, AclOperation.DESCRIBE):
        return None
    return JSONResponse({"error_code": 31, "error_name": "CLUSTER_AUTHORIZATION_FAILED",
                         "message": f"{principal.name} may not DESCRIBE the cluster"}, 403)


def create_app(runtime: BrokerRuntime) -> FastAPI:
    """The broker's HTTP app: part D's ``create_broker_app`` (a stand-in serving ``/healthz``
    and ``/broker/v1/status`` while it is missing), plus ``GET /broker/v1/metadata-stats``."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await runtime.start()
        try:
            async with broker_kafka_server(runtime, _kafka_tls(runtime.config), app,
                                           _outbound_ssl(runtime.config)):
                yield
        finally:
            await runtime.stop()

    factory = _optional("chunkraft.broker_agent.server.app", "create_broker_app")
    if factory is not None:
        app: FastAPI = factory(runtime, lifespan=lifespan)
    else:
        app = FastAPI(title="chunkraft broker (stand-in)", lifespan=lifespan)
        if runtime.authenticator is not None:
            from chunkraft.api.authentication import AuthenticationMiddleware

            app.add_middleware(AuthenticationMiddleware, authenticator=runtime.authenticator)

        @app.get("/healthz")
        async def healthz() -> JSONResponse:
            return JSONResponse({"status": "ok", "node_id": runtime.node_id})

        @app.get("/broker/v1/status")
        async def status(request: Request, hash: bool = False) -> Response:
            refusal = _refusal(runtime, request)
            if refusal is not None:
                return refusal
            return Response(_status(runtime, hash).model_dump_json(),
                            media_type="application/json")

    @app.get("/broker/v1/metadata-stats", tags=["health"],
             summary="The metadata follower's progress and commit-to-applied latency "
             "(DESCRIBE on the cluster)")
    async def stats(request: Request, samples: int = 0) -> Response:
        refusal = _refusal(runtime, request)
        if refusal is not None:
            return refusal
        return JSONResponse(metadata_stats(runtime, max(0, min(samples, 10_000))))

    return app


class _BrokerServer(uvicorn.Server):
    """uvicorn's server, with SIGTERM / SIGINT turned into a controlled shutdown first.

    uvicorn would stop serving at once and re-raise the signal after (exit status -15); the
    broker instead keeps serving until the controller lets it go, then exits normally."""

    def __init__(self, config: uvicorn.Config, on_signal: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_signal = on_signal
        self._signalled = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._signalled or self._loop is None:
            self.should_exit = True  # a second signal: stop without waiting
            return
        self._signalled = True
        self._loop.call_soon_threadsafe(self._on_signal)


def run_broker(config: BrokerConfig) -> int:
    """Runs the broker until SIGTERM / SIGINT; returns the process exit status."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        runtime = build_runtime(config)
        if runtime.logs is not None:
            runtime.logs.load_all()  # recovery before anything serves
    except (ChunkraftError, OSError, ssl.SSLError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    app = create_app(runtime)
    listener = config.listeners
    tls: dict[str, Any] = {}
    # The files may serve only the Kafka TLS listeners: uvicorn serves TLS for https:// alone.
    if config.ssl_certfile is not None and listener.scheme == "https":
        tls = {"ssl_certfile": str(config.ssl_certfile), "ssl_keyfile": str(config.ssl_keyfile)}
        if config.ssl_ca_file is not None:
            tls["ssl_ca_certs"] = str(config.ssl_ca_file)
            tls["ssl_cert_reqs"] = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                                    "required": ssl.CERT_REQUIRED}[config.ssl_client_auth]
    server: _BrokerServer
    shutdown_tasks: list[asyncio.Task[None]] = []

    def on_signal() -> None:
        async def shut_down() -> None:
            try:
                await runtime.controlled_shutdown()
            finally:
                server.should_exit = True

        shutdown_tasks.append(asyncio.get_running_loop().create_task(shut_down()))

    server = _BrokerServer(uvicorn.Config(
        app, host=listener.host, port=listener.port, log_level="warning", access_log=False,
        proxy_headers=False, lifespan="on", timeout_graceful_shutdown=5, **tls), on_signal)
    logger.info("broker %d: data plane on %s, controllers %s", config.node_id, listener.url,
                ",".join(config.controller_quorum_bootstrap_servers))
    server.run()
    logger.info("broker %d stopped", config.node_id)
    return 0 if server.started else 1
