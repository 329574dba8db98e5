"""Authentication of every request: bearer tokens, client certificates, forwarded principals.

STUB (being built): ``principal_of`` answers the principal the authentication middleware put
on the request, or the anonymous principal. ``install_authentication`` will add the middleware.
"""

from __future__ import annotations

from fastapi import FastAPI, Request

from chunkraft.security.principal import ANONYMOUS, Principal

__all__ = ["install_authentication", "principal_of"]


def principal_of(request: Request) -> Principal:
    """The authenticated principal of ``request``."""
    principal = getattr(request.state, "principal", None)
    return principal if isinstance(principal, Principal) else ANONYMOUS


def install_authentication(app: FastAPI) -> None:
    """Adds the authentication middleware (every path but the health probes and the docs)."""
