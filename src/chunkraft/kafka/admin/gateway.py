"""AdminGateway: how a Kafka admin handler reaches the controller RPC's operations.

A Kafka admin request is translated into the body of the controller RPC route that runs the
same operation for REST (``/controller/v1/create-topics`` and so on, bodies of
:mod:`chunkraft.protocol`), so both surfaces give the same answer to the same principal. The
gateway sends that body as the session's principal and returns the route's 200 answer as a
JSON dict; a whole-request refusal (401, 403, 400 over the limits, 503 no leader...) raises
:class:`GatewayError` with the Kafka error of the route's error body.

Two implementations: on a controller the route runs in-process (its handler is called with the
principal already authenticated, so followers forward to the leader as for REST); on a broker
the body goes over HTTP to the controllers with the client's own credentials, as a Kafka broker
forwards admin requests to the active controller.
"""

from __future__ import annotations

from typing import Any, Protocol

from chunkraft.error_codes import Errors
from chunkraft.kafka.server.requests import KafkaSession

__all__ = ["AdminGateway", "GatewayError"]


class GatewayError(Exception):
    """A whole-request refusal from the route: its HTTP status and Kafka error."""

    def __init__(self, status: int, error: Errors, message: str | None) -> None:
        super().__init__(f"{status} {error.name}: {message}")
        self.status = status
        self.error = error
        self.message = message


class AdminGateway(Protocol):
    """Runs controller RPC routes as a Kafka session's principal."""

    async def write(self, path: str, body: dict[str, Any],
                    session: KafkaSession) -> dict[str, Any]:
        """The 200 answer of write route ``path`` (``/controller/v1/create-topics``), run on
        the leader; raises GatewayError for a whole-request refusal."""
        ...

    async def read(self, path: str, body: dict[str, Any],
                   session: KafkaSession) -> dict[str, Any]:
        """The 200 answer of read route ``path`` (``/controller/v1/describe-configs``) from a
        controller's committed image; raises GatewayError for a whole-request refusal."""
        ...
