"""Authentication of every request: bearer tokens, client certificates, forwarded principals.

A pure-ASGI middleware (no Starlette ``BaseHTTPMiddleware``: it is on every request's latency
budget) turns a request's credentials into a :class:`~chunkraft.security.principal.Principal`
in ``scope["state"]["principal"]`` (what :func:`principal_of` reads), or answers 401 with the
error body and ``WWW-Authenticate: Bearer``. In order:

1. ``X-Chunkraft-Principal`` (a write a follower forwarded to the leader; percent-encoded, with
   ``X-Chunkraft-Principal-Host``): trusted only with a valid
   ``X-Chunkraft-Principal-Signature``, an HMAC-SHA256 keyed with a secret derived from the
   Raft password over the principal, its host, the idempotency key and the path. A bad or
   missing signature is a 401, never a fallback to other credentials.
2. ``Authorization: Bearer <token>``: the principal of the token in the credentials file; an
   unknown token is a 401 (``invalid bearer token``).
3. A client certificate the TLS handshake verified (``ssl.client.auth`` requested or required):
   ``User:<CN of the subject>``.
4. Nothing: ``User:ANONYMOUS`` with ``auth.allow.anonymous=true``, else 401.

The host of the principal is the client's IP address (for ACLs that name hosts). The health
probes, the API documentation and the console's login page and static files are served without
credentials (``EXEMPT_PATHS``, ``EXEMPT_PREFIXES``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlsplit

from fastapi import FastAPI, Request

from chunkraft.error_codes import Errors
from chunkraft.security.credentials import CredentialStore
from chunkraft.security.principal import ANONYMOUS, ANONYMOUS_NAME, Principal

__all__ = [
    "EXEMPT_PATHS",
    "EXEMPT_PREFIXES",
    "ORIGIN_HEADER",
    "PRINCIPAL_HEADER",
    "PRINCIPAL_HOST_HEADER",
    "SIGNATURE_HEADER",
    "AuthenticationFailed",
    "AuthenticationMiddleware",
    "Authenticator",
    "certificate_principal",
    "forwarding_key",
    "install_authentication",
    "principal_of",
    "sign_principal",
]

EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/docs",
                          "/docs/oauth2-redirect", "/redoc", "/ui/login"})
"""Paths served to anyone: the health probes, the API's documentation and the console's login
page (which checks the token or certificate it is given itself)."""
EXEMPT_PREFIXES = ("/ui/static/",)
"""Path prefixes served to anyone: the console's static files (no data in them)."""

PRINCIPAL_HEADER = "X-Chunkraft-Principal"
PRINCIPAL_HOST_HEADER = "X-Chunkraft-Principal-Host"
SIGNATURE_HEADER = "X-Chunkraft-Principal-Signature"
ORIGIN_HEADER = "X-Chunkraft-Forwarded-Origin"
"""``scheme://host:port`` of the controller a forwarded request was sent to: the leader answers
with the links (``self``, ``next``, related) of that controller, as if it had answered there."""

_AUTHORIZATION = b"authorization"
_PRINCIPAL = PRINCIPAL_HEADER.lower().encode()
_PRINCIPAL_HOST = PRINCIPAL_HOST_HEADER.lower().encode()
_SIGNATURE = SIGNATURE_HEADER.lower().encode()
_IDEMPOTENCY_KEY = b"idempotency-key"
_ORIGIN = ORIGIN_HEADER.lower().encode()

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def principal_of(request: Request) -> Principal:
    """The authenticated principal of ``request`` (anonymous when nothing authenticated it:
    only in-process tests of other layers run without the middleware)."""
    principal = request.scope.get("state", {}).get("principal")
    return principal if isinstance(principal, Principal) else ANONYMOUS


def forwarding_key(raft_password: str) -> bytes:
    """The HMAC key of forwarded principals, derived from the Raft password (every controller
    has it, nobody else does); a separate key so one MAC never serves two purposes."""
    return hashlib.sha256(b"chunkraft forwarded principal\n" + raft_password.encode()).digest()


def sign_principal(key: bytes, principal: Principal, idempotency_key: str, path: str) -> str:
    """The hex HMAC-SHA256 of a forwarded principal, bound to its request's key and path."""
    message = "\n".join((principal.name, principal.host, idempotency_key.lower(), path))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


@lru_cache(maxsize=1024)
def certificate_principal(subject: str) -> str | None:
    """``User:<CN>`` of an RFC 4514 subject name (``CN=alice,O=ops``), None without a CN.

    Only the (first) common name counts, so a certificate's other attributes never change who
    it is; ``\\,`` and the other RFC 4514 escapes are undone.
    """
    for part in _split_rdns(subject):
        name, _, value = part.partition("=")
        if name.strip().upper() == "CN" and value:
            return "User:" + _unescape(value.strip())
    return None


def _split_rdns(subject: str) -> list[str]:
    parts, current, escaped = [], [], False
    for char in subject:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",+":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    out, index = [], 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value):
            out.append(value[index + 1])
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


class AuthenticationFailed(Exception):
    """A request's credentials are missing or wrong; the message is the 401's."""

    def __init__(self, message: str, error: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error = error
        """RFC 6750's ``error`` attribute of WWW-Authenticate (``invalid_token``), if any."""


class Authenticator:
    """Who a request is, from its headers and its TLS client certificate; see the module doc.

    ``credentials`` is the bearer-token store (None: tokens are refused), ``certificates``
    whether verified client certificates authenticate, ``allow_anonymous`` whether a request
    without credentials is ``User:ANONYMOUS``, ``forwarding_key`` the key of forwarded
    principals (:func:`forwarding_key`). Immutable after construction; safe to share.
    """

    def __init__(self, *, credentials: CredentialStore | None = None, certificates: bool = False,
                 allow_anonymous: bool = False, forwarding_key: bytes = b"") -> None:
        self.credentials = credentials
        self.certificates = certificates
        self.allow_anonymous = allow_anonymous
        self.forwarding_key = forwarding_key
        ways = []
        if credentials is not None:
            ways.append("send Authorization: Bearer <token>")
        if certificates:
            ways.append("present a client certificate")
        self._missing = ("authentication required: " + " or ".join(ways) if ways
                         else "authentication required")

    def authenticate(self, scope: Scope) -> Principal:
        """The principal of the request of ``scope``; AuthenticationFailed with the reason."""
        client = scope.get("client")
        host = client[0] if client else "*"
        authorization = forwarded = forwarded_host = signature = key = None
        for name, value in scope["headers"]:
            if name == _AUTHORIZATION:
                authorization = value
            elif name == _PRINCIPAL:
                forwarded = value
            elif name == _SIGNATURE:
                signature = value
            elif name == _PRINCIPAL_HOST:
                forwarded_host = value
            elif name == _IDEMPOTENCY_KEY:
                key = value
        if forwarded is not None:
            return self._forwarded(scope, forwarded, forwarded_host, signature, key)
        if authorization is not None:
            return Principal(self._bearer(authorization), host)
        if self.certificates:
            name = _certificate_name(scope)
            if name is not None:
                return Principal(name, host)
        if self.allow_anonymous:
            return Principal(ANONYMOUS_NAME, host)
        raise AuthenticationFailed(self._missing)

    def _bearer(self, authorization: bytes) -> str:
        scheme, _, token = authorization.decode("latin-1").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationFailed("the Authorization header must be 'Bearer <token>'",
                                       "invalid_request")
        if self.credentials is None:
            raise AuthenticationFailed("bearer tokens are not accepted by this controller (no "
                                       "auth.credentials.file)", "invalid_token")
        principal = self.credentials.principal_for(token.strip())
        if principal is None:
            raise AuthenticationFailed("invalid bearer token", "invalid_token")
        return principal

    def _forwarded(self, scope: Scope, principal: bytes, host: bytes | None,
                   signature: bytes | None, key: bytes | None) -> Principal:
        if not self.forwarding_key or signature is None or key is None:
            raise AuthenticationFailed(f"{PRINCIPAL_HEADER} is only accepted from another "
                                       "controller, signed")
        claimed = Principal(unquote(principal.decode("latin-1")),
                            unquote((host or b"*").decode("latin-1")))
        expected = sign_principal(self.forwarding_key, claimed, key.decode("latin-1"),
                                  scope["path"])
        if not hmac.compare_digest(expected.encode(), signature.strip().lower()):
            raise AuthenticationFailed(f"invalid {SIGNATURE_HEADER}")
        return claimed


def _certificate_name(scope: Scope) -> str | None:
    tls = scope.get("extensions", {}).get("tls")
    if not tls or tls.get("client_cert_error"):
        return None
    subject = tls.get("client_cert_name")
    return certificate_principal(subject) if subject else None


class AuthenticationMiddleware:
    """Pure-ASGI middleware: ``scope["state"]["principal"]`` or a 401; see the module doc."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        path = scope["path"]
        if path in EXEMPT_PATHS or path.startswith(EXEMPT_PREFIXES):
            state["principal"] = ANONYMOUS
            await self.app(scope, receive, send)
            return
        try:
            state["principal"] = self.authenticator.authenticate(scope)
        except AuthenticationFailed as failure:
            await _unauthorized(send, failure)
            return
        adopt_forwarded_origin(scope)
        await self.app(scope, receive, send)


def adopt_forwarded_origin(scope: Scope) -> None:
    """For a request another controller forwarded (signed: it authenticated), the scheme and
    host the client used there, so every URL the answer names is that controller's."""
    headers = scope["headers"]
    if not any(name == _PRINCIPAL for name, _ in headers):
        return  # not forwarded: the signature of a forwarded principal was checked above
    origin = next((value for name, value in headers if name == _ORIGIN), None)
    if origin is None:
        return
    parts = urlsplit(origin.decode("latin-1"))
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
        return
    scope["scheme"] = parts.scheme
    scope["headers"] = [(name, value) for name, value in headers if name != b"host"]
    scope["headers"].append((b"host", parts.netloc.encode("latin-1")))


async def _unauthorized(send: Send, failure: AuthenticationFailed) -> None:
    error = Errors.SASL_AUTHENTICATION_FAILED
    body = json.dumps({"error_code": error.code, "error_name": error.name,
                       "message": failure.message}).encode()
    challenge = 'Bearer realm="chunkraft"'
    if failure.error:
        challenge += f', error="{failure.error}"'
    await send({"type": "http.response.start", "status": 401, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge.encode()),
    ]})
    await send({"type": "http.response.body", "body": body})


def install_authentication(app: FastAPI) -> None:
    """Adds the authentication middleware with ``app.state.context.authenticator``; without
    one (in-process tests of other layers) every request stays anonymous and nothing is
    refused."""
    context = getattr(app.state, "context", None)
    authenticator = getattr(context, "authenticator", None)
    if authenticator is not None:
        app.add_middleware(AuthenticationMiddleware, authenticator=authenticator)
