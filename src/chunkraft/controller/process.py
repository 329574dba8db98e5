"""run_controller: one controller node as a process (Raft voter + HTTP surface).

Start-up order: the data dir must be formatted for this cluster and node; the Raft journal and
dump are checked whole (a corrupt one stops the start with a report); pysyncobj starts; then
uvicorn serves the HTTP API on the configured listener. SIGTERM and SIGINT stop uvicorn
gracefully (in-flight requests finish; long polls answer at once), then the Raft node closes its
journal and port, and the process exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn

from chunkraft.api import http_guard
from chunkraft.api.app import create_app
from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.api.context import ControllerContext
from chunkraft.api.limits import limits_of
from chunkraft.api.tls import TlsSettings, client_ssl_context
from chunkraft.controller.config import ControllerConfig, check_authentication
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.process_log import RaftProcessLog
from chunkraft.controller.raft.transport_guard import TransportLimits
from chunkraft.controller.storage import check_storage
from chunkraft.errors import ChunkraftError, ConfigError
from chunkraft.kafka.controller_service import controller_kafka_service
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialsFileError, CredentialStore

__all__ = ["authenticator_of", "raft_settings", "run_controller", "tls_settings"]

logger = logging.getLogger(__name__)


def raft_settings(config: ControllerConfig) -> RaftSettings:
    """The Raft node's settings from the controller's configuration."""
    return RaftSettings(
        node_id=config.node_id,
        voters={voter.node_id: voter.address for voter in config.controller_quorum_voters},
        data_dir=config.data_dir,
        password=config.raft_password,
        cluster_id=config.cluster_id,
        election_timeout_min=config.raft_election_timeout_min_ms / 1000,
        election_timeout_max=config.raft_election_timeout_max_ms / 1000,
        append_entries_period=config.raft_append_entries_period_ms / 1000,
        connection_retry=config.raft_connection_retry_ms / 1000,
        leader_fallback_timeout=config.raft_leader_fallback_timeout_ms / 1000,
        log_compaction_min_entries=config.raft_log_compaction_min_entries,
        log_compaction_min_time=config.raft_log_compaction_min_time_ms / 1000,
        log_compaction_max_bytes=config.raft_log_compaction_max_bytes,
        max_retained_bytes=config.metadata_max_retained_bytes,
        snapshot_export_dir=config.metadata_snapshot_export_dir,
        snapshot_export_retain=config.metadata_snapshot_export_retain,
        transport=TransportLimits(
            max_message_bytes=config.raft_max_message_bytes,
            max_connections_per_address=config.raft_max_connections_per_address,
            handshake_timeout=config.raft_handshake_timeout_ms / 1000,
            message_timeout=config.raft_message_timeout_ms / 1000,
        ),
    )


def raft_log(config: ControllerConfig) -> RaftNode | RaftProcessLog:
    """The Raft node in a process of its own (``raft.process=separate``), or in this one."""
    settings = raft_settings(config)
    if config.raft_process == "embedded":
        return RaftNode(settings)
    return RaftProcessLog(settings)


def tls_settings(config: ControllerConfig) -> TlsSettings | None:
    """The listener's TLS files, or None for plain http."""
    if config.ssl_certfile is None:
        return None
    return TlsSettings(config.ssl_certfile, config.ssl_keyfile, config.ssl_ca_file,
                       config.ssl_client_auth)


def authenticator_of(config: ControllerConfig) -> Authenticator:
    """The node's Authenticator; ConfigError if the credentials file cannot be read."""
    store = None
    if config.auth_credentials_file is not None:
        try:
            store = CredentialStore(config.auth_credentials_file)
        except CredentialsFileError as error:
            raise ConfigError(f"auth.credentials.file: {error}",
                              setting="auth.credentials.file") from None
        if not config.auth_credentials_file.exists():
            logger.warning("auth.credentials.file %s does not exist (yet): no bearer token is "
                           "accepted until it does", config.auth_credentials_file)
    return Authenticator(credentials=store, certificates=config.ssl_client_auth != "none",
                         allow_anonymous=config.auth_allow_anonymous,
                         forwarding_key=forwarding_key(config.raft_password))


def _client_context(tls: TlsSettings) -> ssl.SSLContext:
    try:
        return client_ssl_context(tls)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"ssl.certfile / ssl.keyfile / ssl.ca.file: cannot load "
                          f"{tls.certfile}, {tls.keyfile}, {tls.ca_file}: {error}",
                          setting="ssl.certfile") from None


class _ControllerServer(uvicorn.Server):
    """uvicorn's server, returning after a graceful stop on SIGTERM / SIGINT.

    uvicorn (0.29 and later) re-raises the signal once it stopped serving, so the process died
    by it (status -15) inside ``server.run()``: the Raft node was never closed (its tick
    thread stopped, the journal closed, the port released) and "controller N stopped" never
    logged. Here the signal only asks uvicorn to stop, as uvicorn's own handler does, without
    keeping it to raise again; :func:`run_controller` then closes the node and exits 0.

    The first signal also calls ``on_stop`` on the loop (the controller lets its long polls
    go): the graceful stop waits for the requests in flight, and a broker's metadata long poll
    would hold it 5 s, all that time a leader whose listener takes no requests."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_stop = on_stop
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: stop without waiting for requests
            return
        if not self.should_exit and self._loop is not None:
            self._loop.call_soon_threadsafe(self._on_stop)
        self.should_exit = True


def run_controller(config: ControllerConfig) -> int:
    """Runs the node until SIGTERM / SIGINT; returns the process exit status."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pysyncobj").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per forwarded request
    try:
        check_authentication(config)
        authenticator = authenticator_of(config)
        tls = tls_settings(config)
        # The files may serve only the Kafka TLS listeners: the HTTP side uses them (uvicorn's
        # TLS, calls to the other controllers over https) only with an https:// listener.
        http_tls = tls if config.listeners.scheme == "https" else None
        ssl_context = _client_context(http_tls) if http_tls is not None else None
        check_storage(config.data_dir, config.cluster_id, config.node_id)
        node = raft_log(config)
    except ChunkraftError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        controller = QuorumController(node, request_timeout=config.request_timeout_ms / 1000)
        context = ControllerContext(
            controller=controller,
            cluster_id=config.cluster_id,
            node_id=config.node_id,
            controller_urls={entry.node_id: entry.url for entry in config.controller_http_urls},
            heartbeats=BrokerHeartbeatTracker(config.broker_session_timeout_ms / 1000),
            super_users=config.super_users,
            authorizer=Authorizer(
                config.super_users,
                allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
                broker_principal=config.auth_broker_principal),
            authenticator=authenticator,
            forwarding_key=authenticator.forwarding_key,
            ssl_context=ssl_context,
            forward_timeout=config.request_timeout_ms / 1000,
            limits=limits_of(config),
            export_dir=config.metadata_snapshot_export_dir,
        )
        kafka = controller_kafka_service(config, context, tls)
        app = create_app(context, freeze_heap=True, chunk_retention_interval=(
            config.log_retention_check_interval_ms / 1000),
            services=(kafka,) if kafka is not None else ())
        listener = config.listeners
        server = _ControllerServer(uvicorn.Config(
            app, host=listener.host, port=listener.port, log_level="warning",
            access_log=False, proxy_headers=False, lifespan="on",
            timeout_graceful_shutdown=10,
            # Slow-loris connections are cut (docs/api.md, "Limits"), with TLS or without.
            **http_guard.uvicorn_options(http_guard.ConnectionLimits(
                head_timeout_s=config.http_head_timeout_ms / 1000,
                body_timeout_s=config.http_body_timeout_ms / 1000,
                max_connections_per_address=config.http_max_connections_per_address),
                http_tls.uvicorn_options() if http_tls else None)),
            on_stop=controller.release_waiters)
        logger.info("controller %d: Raft on %s, HTTP on %s, Kafka on %s, cluster %s",
                    config.node_id, config.raft_address, listener.url,
                    ",".join(map(str, config.kafka_listeners)) or "(none)", config.cluster_id)
        server.run()  # uvloop and httptools when installed (they are dependencies)
    finally:
        node.close()
        logger.info("controller %d stopped", config.node_id)
    return 0 if node.state_machine.failure is None else 3
