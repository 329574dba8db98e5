"""KafkaErrorMiddleware: the broker's answer to an exception no route handled.

The data-plane paths answer failures per partition (``broker_agent.failures``); this is the net
under everything else (a bug in a route, a coordinator, a response that fails to serialize).
Starlette's own last resort answers a plain-text 500 and uvicorn logs a traceback; here the
answer is the controller's error body (``error_code``, ``error_name``, ``message``) with
UNKNOWN_SERVER_ERROR (KAFKA_STORAGE_ERROR for an I/O error) and the log gets one line. A
failure after the answer started cannot be answered again: that connection is closed, as
before, and still logged in one line.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chunkraft.api.errors import error_response
from chunkraft.broker_agent.failures import failed

__all__ = ["KafkaErrorMiddleware"]

logger = logging.getLogger(__name__)


class KafkaErrorMiddleware:
    """ASGI middleware: an unhandled exception becomes a Kafka error body and one log line.

    Stateless and safe for concurrent requests."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as error:
            what = f"{scope.get('method', '?')} {scope.get('path', '?')}"
            kafka_error, message = failed(what, error)
            if started:
                return  # the status line is out: nothing more can be said to this client
            response = error_response(kafka_error, message, 500)
            await response(scope, receive, send)
