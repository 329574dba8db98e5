"""The Kafka listener of a broker: the ``--bootstrap-server`` target of stock clients.

A broker serves, on each Kafka listener of ``listeners``: ApiVersions and SASL; Metadata and
DescribeCluster (endpoint type 1) from its own metadata image, naming itself as the node that
takes admin requests; InitProducerId, FindCoordinator and the transaction APIs through the
broker's own routes; and the admin APIs,
forwarded to the controllers with the client's own
credentials (:class:`~chunkraft.kafka.channel_gateway.ChannelGateway`). The listener runs on
a thread and an event loop of its own, so that a busy main loop (deltas, log creation) never
queues a client's Metadata behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from chunkraft.broker_agent.controller_channel import ControllerChannel, ControllerRpcError
from chunkraft.broker_agent.coordinator.groups.coordinator import GroupCoordinator
from chunkraft.broker_agent.runtime import BrokerRuntime
from chunkraft.broker_agent.server.group_routes import app_group_coordinator
from chunkraft.controller.raft.log import QuorumStatus
from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.registry import admin_handlers
from chunkraft.kafka.channel_gateway import ChannelGateway
from chunkraft.kafka.chunk_cut import with_operator_cuts
from chunkraft.kafka.cluster_answers import describe_cluster_answer, metadata_answer_bytes
from chunkraft.kafka.data.fetch import FETCH_KEY, fetch_answer
from chunkraft.kafka.data.offsets import (
    LIST_OFFSETS_KEY,
    OFFSET_FOR_LEADER_EPOCH_KEY,
    list_offsets_answer,
    offset_for_leader_epoch_answer,
)
from chunkraft.kafka.data.produce import PRODUCE_KEY, produce_answer
from chunkraft.kafka.groups.admin_handlers import group_admin_handlers
from chunkraft.kafka.groups.find_coordinator import (
    FIND_COORDINATOR_KEY,
    find_coordinator_handler,
)
from chunkraft.kafka.groups.membership_handlers import membership_handlers
from chunkraft.kafka.groups.offset_handlers import offset_handlers
from chunkraft.kafka.metadata_bytes import TopicBytesCache
from chunkraft.kafka.producer_id_handler import INIT_PRODUCER_ID_KEY, init_producer_id_handler
from chunkraft.kafka.quorum_answer import describe_quorum_answer, status_from_json
from chunkraft.kafka.route_gateway import RouteGateway
from chunkraft.kafka.server.connection import ConnectionLimits
from chunkraft.kafka.server.listener import KafkaServer
from chunkraft.kafka.server.listener_thread import KafkaListenerThread, on_loop
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.kafka.server.sasl import KafkaAuthenticator
from chunkraft.kafka.txn import TRANSACTION_KEYS, transaction_api_handlers
from chunkraft.records.uuids import kafka_uuid_str

__all__ = ["GROUP_KEYS", "MAIN_LOOP_KEYS", "broker_handlers", "broker_kafka_server",
           "data_handlers", "group_handlers"]

GROUP_KEYS = frozenset({8, 9, 11, 12, 13, 14, 15, 16, 42})
"""OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, DescribeGroups,
ListGroups and DeleteGroups."""
MAIN_LOOP_KEYS = frozenset({PRODUCE_KEY, FETCH_KEY, LIST_OFFSETS_KEY,
                            OFFSET_FOR_LEADER_EPOCH_KEY, INIT_PRODUCER_ID_KEY,
                            FIND_COORDINATOR_KEY, *GROUP_KEYS}) | TRANSACTION_KEYS
"""The APIs whose handlers run on the broker's main loop (the ReplicaManager's, the group
coordinator's and the app's)."""


_NO_STATUS = QuorumStatus(node_id=-1, state="unknown", leader_id=None, epoch=-1,
                          has_quorum=False, commit_index=-1, last_applied_index=-1,
                          high_watermark=-1, voters=(), failure=None)
"""What a broker answers DescribeQuorum from when no controller told it the quorum's state."""


def broker_handlers(runtime: BrokerRuntime, app: FastAPI,
                    verify: ssl.SSLContext | bool = True,
                    channel: ControllerChannel | None = None) -> list[ApiHandler]:
    """Every API a broker's Kafka listener serves but ApiVersions and SASL; ``app`` is the
    broker's HTTP app, whose data-plane routes the data-plane APIs run; ``verify`` checks the
    brokers it asks to cut a chunk (httpx's ``verify``); ``channel`` reaches the controllers
    (default: the broker's own)."""
    controllers = channel or runtime.controller
    routes = RouteGateway(app)  # the broker app's routes, found once for every API
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
            status = await controllers.call(
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
            init_producer_id_handler(routes), *data_handlers(runtime),
            *group_handlers(runtime, app, routes),
            *with_operator_cuts(admin_handlers(ChannelGateway(controllers)),
                                lambda: runtime.follower.image, verify),
            # AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit (chunkraft.kafka.txn)
            *transaction_api_handlers(routes)]


def group_handlers(runtime: BrokerRuntime, app: FastAPI, routes: RouteGateway
                   ) -> list[ApiHandler]:
    """FindCoordinator and the classic consumer-group APIs (:mod:`chunkraft.kafka.groups`),
    on the broker app's ``routes`` and group coordinator; they run on the broker's main
    loop."""

    def coordinator() -> GroupCoordinator:
        return app_group_coordinator(app)

    return [find_coordinator_handler(routes, lambda: runtime.follower.image),
            *membership_handlers(runtime, coordinator), *offset_handlers(routes),
            *group_admin_handlers(runtime, coordinator)]


def data_handlers(runtime: BrokerRuntime) -> list[ApiHandler]:
    """Produce 3-11, Fetch 4-12, ListOffsets 1-7 and OffsetForLeaderEpoch 2-4 over the broker's
    ReplicaManager (:mod:`chunkraft.kafka.data`); they must run on the broker's main loop.
    Produce stops at 11: v12 is KIP-890's second part, which the transaction coordinator does
    not speak."""

    async def produce(request: KafkaRequest) -> dict[str, Any] | None:
        return await produce_answer(runtime, request)

    async def fetch(request: KafkaRequest) -> dict[str, Any]:
        return await fetch_answer(runtime, request)

    async def list_offsets(request: KafkaRequest) -> dict[str, Any]:
        return await list_offsets_answer(runtime, request)

    async def offset_for_leader_epoch(request: KafkaRequest) -> dict[str, Any]:
        return await offset_for_leader_epoch_answer(runtime, request)

    return [ApiHandler(PRODUCE_KEY, 3, 11, produce), ApiHandler(FETCH_KEY, 4, 12, fetch),
            ApiHandler(LIST_OFFSETS_KEY, 1, 7, list_offsets),
            ApiHandler(OFFSET_FOR_LEADER_EPOCH_KEY, 2, 4, offset_for_leader_epoch)]


@contextlib.asynccontextmanager
async def broker_kafka_server(runtime: BrokerRuntime, tls: ssl.SSLContext | None,
                              app: FastAPI, verify: ssl.SSLContext | bool = True
                              ) -> AsyncIterator[KafkaServer | None]:
    """Runs the broker's Kafka listeners for the duration, on a thread and an event loop of
    their own (:mod:`chunkraft.kafka.server.listener_thread`): yields None without any.

    What the listener's loop cannot do itself runs on the broker's main loop: the broker app's
    InitProducerId route and the data plane (:data:`MAIN_LOOP_KEYS`). Admin forwarding and
    DescribeQuorum use a controller channel of the listener's own (its HTTP client belongs to
    that loop), which goes to the leader first as the broker's does."""
    config = runtime.config
    if not config.kafka_listeners:
        yield None
        return
    main = asyncio.get_running_loop()
    authenticator = runtime.authenticator
    credentials = authenticator.credentials if authenticator else None

    def build() -> KafkaServer:
        channel = ControllerChannel(runtime.controller.urls, timeout=10.0,
                                    retry_for=config.request_timeout_ms / 1000,
                                    verify=verify)
        runtime.controller.share_preference(channel)
        channel.prefer(runtime.controller.preferred_url)  # the leader, as far as it knows
        handlers = [on_loop(h, main) if h.api_key in MAIN_LOOP_KEYS else h
                    for h in broker_handlers(runtime, app, verify, channel)]
        return KafkaServer(
            config.kafka_listeners, handlers,
            KafkaAuthenticator(credentials, config.sasl_enabled_mechanisms,
                               config.auth_allow_anonymous),
            limits=ConnectionLimits.of_settings(config),
            max_connections_per_ip=config.max_connections_per_ip, tls=tls)

    thread = KafkaListenerThread(build, name=f"kafka-listener-{runtime.node_id}")
    server = await thread.start()
    try:
        yield server
    finally:
        await thread.stop()
