"""The console's session cookie on ``/ui`` and ``/v3``: who it is, and CSRF on every change.

A pure-ASGI middleware outside authentication (:mod:`chunkraft.api.authentication`). For a
request that carries no credentials of its own (no ``Authorization``, no forwarded principal) but
a live console session cookie:

- a token session: the request is given ``Authorization: Bearer <the session's token>``, so
  authentication, ACLs, forwarding to the leader and the broker asked for a cut all see exactly
  what they would see from the CLI; a token no longer in the credentials file ends the session;
- a certificate session: the connection's verified client certificate must still name the
  session's principal (authentication then takes it from the certificate, as always);
- a request that changes anything (any method but GET, HEAD, OPTIONS) must carry the session's
  CSRF token in ``X-CSRF-Token``, and an ``Origin``, if sent, must be this controller's own;
  otherwise it is refused 403 before any route runs. The cookie is SameSite=Strict, but sites
  are named without ports, so a page from another port of the same host is "same-site": the
  CSRF token is what refuses a forged request.

Only ``/ui`` and ``/v3`` honour the cookie (the RPC and the metadata stream are for processes,
which send tokens). A console page asked for without a session is redirected to the login
page (``/ui/api`` answers 401 instead). Explicit credentials always win over a cookie.
"""

from __future__ import annotations

import json
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI

from chunkraft.api.authentication import (
    PRINCIPAL_HEADER,
    Authenticator,
    Receive,
    Scope,
    Send,
    certificate_principal,
)
from chunkraft.console.sessions import CSRF_HEADER, Session, SessionStore, cookie_name
from chunkraft.error_codes import Errors

__all__ = [
    "LOGIN_PATH",
    "ConsoleSessionMiddleware",
    "install_session_middleware",
    "session_of",
]

LOGIN_PATH = "/ui/login"
"""Served without a session, as are the static files (``/ui/static/``)."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_AUTHORIZATION = b"authorization"
_PRINCIPAL = PRINCIPAL_HEADER.lower().encode()
_CSRF = CSRF_HEADER.lower().encode()


def session_of(scope: Scope) -> Session | None:
    """The console session the request of ``scope`` came with, if any."""
    session = scope.get("state", {}).get("console_session")
    return session if isinstance(session, Session) else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def own_origin(scope: Scope) -> str:
    """``scheme://host[:port]`` as this request addressed the controller."""
    host = _header(scope, b"host") or ""
    return f"{scope.get('scheme', 'http')}://{host}"


def is_console(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


def is_public(path: str) -> bool:
    return path == LOGIN_PATH or path.startswith("/ui/static/")


class ConsoleSessionMiddleware:
    """See the module doc. ``store`` holds the sessions, ``node_id`` names the cookie,
    ``authenticator`` re-checks a session's token on every request."""

    def __init__(self, app: Any, store: SessionStore, node_id: int,
                 authenticator: Authenticator | None) -> None:
        self.app = app
        self.store = store
        self.cookie = cookie_name(node_id)
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        console = is_console(path)
        if not (console or path.startswith("/v3/") or path == "/v3") or (
                console and is_public(path)):
            await self.app(scope, receive, send)
            return
        if _header(scope, _AUTHORIZATION) is not None or _header(scope, _PRINCIPAL) is not None:
            await self.app(scope, receive, send)
            return
        session = self._session(scope)
        if session is None:
            if console:
                await (_refuse(send, 401, Errors.SASL_AUTHENTICATION_FAILED,
                               "no console session: log in at /ui/login")
                       if path.startswith("/ui/api/") else _redirect_to_login(scope, send))
                return
            await self.app(scope, receive, send)
            return
        if scope["method"] not in SAFE_METHODS:
            origin = _header(scope, b"origin")
            if origin is not None and origin != own_origin(scope):
                await _refuse(send, 403, Errors.INVALID_REQUEST,
                              f"a console request from another origin ({origin[:100]}) is "
                              "refused")
                return
            if not session.csrf_matches(_header(scope, _CSRF)):
                await _refuse(send, 403, Errors.INVALID_REQUEST,
                              f"missing or wrong {CSRF_HEADER}: a change made with a console "
                              "session must come from the console's own pages")
                return
        scope.setdefault("state", {})["console_session"] = session
        if session.token is not None:
            scope["headers"] = [*scope["headers"],
                                (_AUTHORIZATION, f"Bearer {session.token}".encode("latin-1"))]
        await self.app(scope, receive, send)

    def _session(self, scope: Scope) -> Session | None:
        raw = _header(scope, b"cookie")
        if not raw:
            return None
        try:
            morsel = SimpleCookie(raw).get(self.cookie)
        except CookieError:
            return None
        session = self.store.get(morsel.value) if morsel is not None else None
        if session is None:
            return None
        if session.token is not None:
            credentials = self.authenticator.credentials if self.authenticator else None
            if credentials is None or credentials.principal_for(
                    session.token) != session.principal:
                self.store.end(session.session_id)  # the token was revoked or reassigned
                return None
        elif certificate_of(scope) != session.principal:
            return None
        return session


def certificate_of(scope: Scope) -> str | None:
    """The principal of the connection's verified client certificate, None without one."""
    tls = scope.get("extensions", {}).get("tls")
    if not tls or tls.get("client_cert_error"):
        return None
    subject = tls.get("client_cert_name")
    return certificate_principal(subject) if subject else None


async def _refuse(send: Send, status: int, error: Errors, message: str) -> None:
    body = json.dumps({"error_code": error.code, "error_name": error.name,
                       "message": message}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _redirect_to_login(scope: Scope, send: Send) -> None:
    query = scope.get("query_string", b"").decode("latin-1")
    target = scope["path"] + (f"?{query}" if query else "")
    location = f"{LOGIN_PATH}?next={quote(target, safe='')}"
    await send({"type": "http.response.start", "status": 303, "headers": [
        (b"location", location.encode("latin-1")), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def install_session_middleware(app: FastAPI, store: SessionStore, node_id: int,
                               authenticator: Authenticator | None) -> None:
    """Adds the middleware; call it after ``install_authentication`` so it runs outside it."""
    app.add_middleware(ConsoleSessionMiddleware, store=store, node_id=node_id,
                       authenticator=authenticator)
