"""The broker's AdminGateway: admin requests forwarded to the controllers over their RPC.

A Kafka broker forwards admin requests to the active controller; a chunkraft broker sends the
translated body to the controller RPC route over HTTP (its :class:`ControllerChannel`, which
finds the leader and retries other controllers with one idempotency key) with the client's own
credentials: the bearer token its SASL exchange proved. The controllers then authorize the
request as that principal, exactly as for a REST call. A client that authenticated without a
token (a certificate, or anonymously) has nothing the controllers would accept from a broker:
its admin requests are refused with CLUSTER_AUTHORIZATION_FAILED and a message that says to use
SASL or a controller's Kafka listener.
"""

from __future__ import annotations

from typing import Any

from chunkraft.broker_agent.controller_channel import ControllerChannel, ControllerRpcError
from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.route_gateway import READ_WAIT_MS, error_of
from chunkraft.kafka.server.requests import KafkaSession

__all__ = ["ChannelGateway"]


class ChannelGateway:
    """Forwards admin route calls to the controllers as the session's principal.

    Contract: the 200 answer of the route on the controllers, or GatewayError with the
    route's error (or NETWORK_EXCEPTION / REQUEST_TIMED_OUT when no controller answered in
    the channel's retry time)."""

    def __init__(self, channel: ControllerChannel) -> None:
        self.channel = channel

    async def _call(self, path: str, body: dict[str, Any], session: KafkaSession,
                    params: dict[str, Any] | None) -> dict[str, Any]:
        if session.token is None:
            raise GatewayError(403, Errors.CLUSTER_AUTHORIZATION_FAILED,
                               f"{session.principal} authenticated without a bearer token, so "
                               "this broker cannot forward its admin request to the "
                               "controllers: authenticate with SASL (PLAIN or OAUTHBEARER), or "
                               "send it to a controller's Kafka listener")
        try:
            return await self.channel.call(
                path, body, params=params,
                headers={"authorization": f"Bearer {session.token}"})
        except ControllerRpcError as error:
            raise error_of(error.status, error.body) from None

    async def write(self, path: str, body: dict[str, Any],
                    session: KafkaSession) -> dict[str, Any]:
        return await self._call(path, body, session, None)

    async def read(self, path: str, body: dict[str, Any],
                   session: KafkaSession) -> dict[str, Any]:
        # Read your writes: the controller answers once it has applied the newest write this
        # channel saw (any client's of this broker), wherever the read lands.
        return await self._call(path, body, session, {
            "min_offset": self.channel.last_offset, "wait_ms": READ_WAIT_MS})
