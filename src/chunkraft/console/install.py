"""Wiring the console into a controller's app: its session store, middleware and routes."""

from __future__ import annotations

from fastapi import FastAPI

from chunkraft.api.context import ControllerContext
from chunkraft.console import api_routes, page_routes
from chunkraft.console.session_middleware import install_session_middleware
from chunkraft.console.sessions import SessionStore

__all__ = ["install_console"]


def install_console(app: FastAPI, context: ControllerContext) -> SessionStore:
    """Adds ``/ui`` to ``app``; call it right after ``install_authentication`` (the session
    middleware must run just outside authentication). Returns the app's session store."""
    store = SessionStore()
    app.state.console_sessions = store
    install_session_middleware(app, store, context.node_id, context.authenticator)
    app.include_router(page_routes.router)
    app.include_router(api_routes.router)
    return store
