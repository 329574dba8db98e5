"""The controller's AdminGateway: the controller RPC's own route handlers, called in-process.

A Kafka admin request on a controller runs the very handler its REST twin runs (parsing with
the request model, the limits, authorization, forwarding to the leader when this node
follows, the write on the leader), called with a request whose principal is the Kafka
session's, so no HTTP and no second authentication stand in between. The route's answer comes
back as the JSON it would have sent: a 200 is the gateway's result, anything else is raised as
:class:`~chunkraft.kafka.admin.gateway.GatewayError` with the error body's Kafka error.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from chunkraft.api.errors import http_status_of, validation_message
from chunkraft.error_codes import ApiException, Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.server.requests import KafkaSession

__all__ = ["READ_WAIT_MS", "RouteGateway", "error_of"]

OFFSET_HEADER = "x-metadata-offset"
READ_WAIT_MS = 5000
"""How long a read waits for this node to apply the gateway's last write."""

_BY_NAME = {error.name: error for error in Errors}
_BY_CODE = {error.code: error for error in Errors}


def error_of(status: int, payload: Any) -> GatewayError:
    """The GatewayError of a non-200 answer's error body (``error_name`` or ``error_code``)."""
    error = Errors.UNKNOWN_SERVER_ERROR
    message = None
    if isinstance(payload, dict):
        error = (_BY_NAME.get(str(payload.get("error_name"))) or
                 _BY_CODE.get(payload.get("error_code")) or error)  # type: ignore[arg-type]
        message = payload.get("message") or payload.get("error_message")
    return GatewayError(status, error, message)


class RouteGateway:
    """Calls the POST routes of ``app`` (the controller's FastAPI app) as a session's principal.

    Contract: ``write``/``read`` return exactly the JSON body the route answers over HTTP with
    200, and raise GatewayError for any other status; nothing else is different from a REST
    call, so both surfaces give one principal the same answers.
    """

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.last_offset = -1
        """The metadata offset of the newest answer (``X-Metadata-Offset``)."""
        self._routes: dict[str, Callable[..., Awaitable[Response]]] = {}
        for path, route in _post_routes(app.routes):
            self._routes[path] = route.endpoint

    async def _call(self, path: str, body: dict[str, Any], session: KafkaSession,
                    **params: Any) -> dict[str, Any]:
        endpoint = self._routes.get(path)
        if endpoint is None:
            raise GatewayError(500, Errors.UNKNOWN_SERVER_ERROR, f"no route {path}")
        raw = json.dumps(body).encode()
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(),
                 "query_string": b"", "root_path": "", "scheme": "http",
                 "http_version": "1.1", "app": self.app,
                 "headers": [(b"content-type", b"application/json"),
                             (b"content-length", str(len(raw)).encode())],
                 "client": (session.peer_host, 0), "server": ("kafka", 0),
                 "state": {"principal": session.principal}, "path_params": {}}
        try:
            response = await endpoint(Request(scope, receive), **params)
        except ApiException as error:
            # Over HTTP the app's exception handler answers these; called in-process, this
            # does (an operation the leader refuses while validating it raises one).
            raise GatewayError(http_status_of(error.error), error.error, error.message
                               ) from None
        except (RequestValidationError, ValidationError) as error:
            raise GatewayError(400, Errors.INVALID_REQUEST, validation_message(error)) from None
        offset = response.headers.get(OFFSET_HEADER)
        if offset is not None and response.status_code == 200:
            self.last_offset = max(self.last_offset, int(offset))
        payload = json.loads(bytes(response.body) or b"null")
        if response.status_code != 200:
            raise error_of(response.status_code, payload)
        if not isinstance(payload, dict):
            raise GatewayError(500, Errors.UNKNOWN_SERVER_ERROR, "a route answered no object")
        return payload

    async def write(self, path: str, body: dict[str, Any],
                    session: KafkaSession) -> dict[str, Any]:
        return await self._call(path, body, session)

    async def read(self, path: str, body: dict[str, Any],
                   session: KafkaSession) -> dict[str, Any]:
        # Read your writes: a follower answers once it has applied the last write this
        # gateway committed (its own or forwarded to the leader), as REST clients ask with
        # min_offset.
        return await self._call(path, body, session, min_offset=self.last_offset,
                                wait_ms=READ_WAIT_MS)


def _post_routes(routes: Any, prefix: str = "") -> list[tuple[str, APIRoute]]:
    """(full path, route) of every POST route, included routers' too: FastAPI keeps an
    included router whole, and the prefix it was included with apart from its routes."""
    found: list[tuple[str, APIRoute]] = []
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            context = getattr(route, "include_context", None)
            inner = prefix + (getattr(context, "prefix", "") or "")
            found.extend(_post_routes(included.routes, inner))
        elif isinstance(route, APIRoute) and route.methods == {"POST"}:
            found.append((prefix + route.path, route))
    return found
