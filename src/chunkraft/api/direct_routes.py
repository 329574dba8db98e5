"""DirectRoutes: the controller RPC's write routes called without FastAPI's router in between.

A single controller write on this 2-core machine spent about half of its HTTP time in the
framework between our middlewares and the route's handler: matching the path against every
route of the app (REST v3, the RPC, the stream), the per-route request wrappers and the exit
stack (``bench/profile_controller_write.py``, ``bench/RESULTS.md``). The RPC's write routes need
none of it: each is ``POST`` on a fixed path, and its handler takes the request alone, reads
its own body and returns a complete ``Response`` (``rpc.add_write_route``).

So this middleware, installed inside authentication, header limits and metrics (which all
still run), looks the exact path of a ``POST`` up in a dict of those routes and awaits the
route's own handler: the same code answers, only the lookup is shorter. Everything else (other
methods, other paths, a trailing slash) goes down to FastAPI as before, so the OpenAPI document,
405s and 404s do not change. ``scope["route"]`` is set as the router would, so metrics label
the request with the same route template. An exception the handler raises is answered by the
app's exception handler for it, as FastAPI's exception middleware would; one with no handler
propagates to the server-error middleware (a 500).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["DIRECT_ROUTE_MARK", "DirectRoutes", "direct_routes_of", "install_direct_routes"]

DIRECT_ROUTE_MARK = "_chunkraft_direct"
"""The attribute ``rpc.add_write_route`` sets on a handler that may be called directly: its
only parameter is the request and it returns a ``Response``."""

Endpoint = Callable[[Request], Awaitable[Response]]


def direct_routes_of(routes: Iterable[BaseRoute]) -> dict[str, APIRoute]:
    """Path -> route, for every ``POST``-only route whose handler carries the mark, including
    those of included routers (FastAPI keeps an included router whole, with its routes' full
    paths, rather than copying its routes into the app's list)."""
    found: dict[str, APIRoute] = {}
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            found.update(direct_routes_of(included.routes))
        elif (isinstance(route, APIRoute) and route.methods == {"POST"}
                and getattr(route.endpoint, DIRECT_ROUTE_MARK, False)):
            found[route.path] = route
    return found


class DirectRoutes:
    """Pure-ASGI middleware: a ``POST`` to the exact path of a marked route is answered by that
    route's handler, with the app's exception handlers; anything else goes to ``app``.

    Contract: for a marked route, the answer (status, headers, body) and the metrics label are
    those FastAPI's router would give; requests to any other method or path are untouched.
    """

    def __init__(self, app: ASGIApp, fastapi_app: FastAPI) -> None:
        self.app = app
        # The middleware stack is built at the first request, after every route was added.
        self._routes = direct_routes_of(fastapi_app.routes)
        self._handlers: dict[Any, Callable[..., Any]] = dict(fastapi_app.exception_handlers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        route = self._routes.get(scope["path"])
        if route is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        scope["path_params"] = {}
        request = Request(scope, receive, send)
        try:
            response = await route.endpoint(request)
        except Exception as error:
            handler = self._handler_for(error)
            if handler is None:
                raise
            answer = handler(request, error)
            response = await answer if inspect.isawaitable(answer) else answer
            error.__traceback__ = None  # as Starlette: a reused exception must not pile up
        await response(scope, receive, send)

    def _handler_for(self, error: Exception) -> Callable[..., Any] | None:
        for kind in type(error).__mro__:
            handler = self._handlers.get(kind)
            if handler is not None:
                return handler
        return None


def install_direct_routes(app: FastAPI) -> None:
    """Adds :class:`DirectRoutes`; call it before the other middlewares so it runs inside them
    (Starlette runs the last added outermost)."""
    app.add_middleware(DirectRoutes, fastapi_app=app)
