"""create_app: the controller's HTTP surface, built for one ControllerContext."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from chunkraft.api import controller_routes, quorum, quorum_voters, stream, v3
from chunkraft.api.authentication import install_authentication
from chunkraft.api.context import ControllerContext
from chunkraft.api.direct_routes import install_direct_routes
from chunkraft.api.errors import install_error_handlers
from chunkraft.api.limits import install_header_limits
from chunkraft.api.metrics import install_metrics
from chunkraft.api.readiness import READY_MAX_LAG_ENTRIES, Readiness, assess_readiness
from chunkraft.console import install_console
from chunkraft.controller.chunk_retention import run_chunk_retention
from chunkraft.controller.heap_freezer import run_heap_freezer
from chunkraft.controller.session_monitor import run_session_monitor

__all__ = ["READY_MAX_LAG_ENTRIES", "Health", "Readiness", "create_app"]


class Health(BaseModel):
    """``GET /healthz``: the process is up (no check of the quorum)."""

    status: str
    node_id: int


def create_app(context: ControllerContext, *, monitor_sessions: bool = True,
               freeze_heap: bool = False,
               chunk_retention_interval: float | None = 300.0,
               services: Sequence[Callable[[FastAPI], AbstractAsyncContextManager[None]]] = (),
               ) -> FastAPI:
    """The FastAPI application of one controller node; nothing is built at import time.

    ``services`` run for the app's lifetime, entered in order once the controller started and
    left in reverse when it stops (the Kafka listeners: they need the app's routes).

    ``chunk_retention_interval`` (seconds; None: never) is how often the leader deletes the
    inactive chunks past their topic's retention
    (:func:`~chunkraft.controller.chunk_retention.run_chunk_retention`).

    ``freeze_heap`` (for the controller process, not for tests sharing a process) runs
    :func:`~chunkraft.controller.heap_freezer.run_heap_freezer`.
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await context.controller.start()
        tasks = [asyncio.create_task(context.standing.run(
            lambda: assess_readiness(context.controller.raft.status()).ready,
            context.client, context.all_controller_urls))]
        if monitor_sessions:
            tasks.append(asyncio.create_task(
                run_session_monitor(context.controller, context.heartbeats,
                                    monotonic=context.monotonic)))
        if chunk_retention_interval is not None:
            tasks.append(asyncio.create_task(run_chunk_retention(
                context.controller, interval=chunk_retention_interval,
                sizes=context.chunk_sizes.sizes)))
        if freeze_heap:
            controller = context.controller
            tasks.append(asyncio.create_task(run_heap_freezer(lambda: controller.image.offset)))
        try:
            async with contextlib.AsyncExitStack() as stack:
                for service in services:
                    await stack.enter_async_context(service(app))
                yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await context.aclose()

    # No redirect for a trailing slash: a 307 would make clients send a write again.
    app = FastAPI(title="chunkraft controller", version="1", lifespan=lifespan,
                  redirect_slashes=False)
    app.state.context = context
    install_error_handlers(app)
    # Middleware runs outermost-last-added: metrics see every answer, 401s included; the RPC's
    # write routes are answered innermost, after authentication, without the router.
    install_direct_routes(app)
    install_authentication(app)
    install_console(app, context)  # the session cookie becomes credentials just outside it
    install_header_limits(app)  # outside authentication: headers are bounded before it reads them
    install_metrics(app)
    app.include_router(v3.router)
    app.include_router(controller_routes.router)
    app.include_router(stream.router)
    app.include_router(quorum.router)
    app.include_router(quorum_voters.router)

    @app.get("/healthz", tags=["health"], summary="The process is up",
             responses={200: {"model": Health}})
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok", "node_id": context.node_id})

    @app.get("/readyz", tags=["health"],
             summary="The Raft thread ticks, a leader is known, the quorum is present and this "
             "node has caught up",
             responses={200: {"model": Readiness, "description": "Ready"},
                        503: {"model": Readiness, "description": "Not ready (see the fields)"}})
    async def readyz(request: Request) -> JSONResponse:
        readiness = assess_readiness(context.controller.raft.status(),
                                     context.standing.refusal())
        return JSONResponse(readiness.model_dump(),
                            status_code=200 if readiness.ready else 503)

    return app
