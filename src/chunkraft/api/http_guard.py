"""Connection limits for uvicorn's HTTP/1.1 server that a slow or greedy client cannot outlast.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but a connection
that sends a request's head one byte at a time (slow-loris), or its body never, stays open as
long as the client wants: each holds a file descriptor, and a few thousand exhaust the
process's, after which the controller cannot accept a client nor open a file. The guarded
protocol adds:

- a head deadline: a request's line and headers must be complete within ``head_timeout_s``
  of the connection opening (or of the request's first byte on a kept-alive connection);
- a body deadline: the body must be complete within ``body_timeout_s`` of the head;
- a bound on the open connections per client address; one more is closed at once.

A connection over a deadline is closed without an answer (the client is not reading one). The
per-address bound counts what this server holds, so it is per process.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["ConnectionLimits", "guarded_protocol"]


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Per-connection deadlines (seconds) and the open connections one address may hold."""

    head_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections_per_address: int = 1_000


def guarded_protocol(limits: ConnectionLimits,
                     base: type[HttpToolsProtocol] = HttpToolsProtocol) -> type[asyncio.Protocol]:
    """A subclass of ``base`` (uvicorn's httptools protocol, or one that extends it, such as
    the TLS one of :mod:`chunkraft.api.tls`) enforcing ``limits``, for
    ``uvicorn.Config(http=...)``.

    Each call makes a class of its own with its own per-address count (one per server)."""
    open_by_address: Counter[str] = Counter()

    class GuardedHttpToolsProtocol(base):  # type: ignore[valid-type,misc]
        """uvicorn's httptools protocol with the deadlines and bound of ``limits``."""

        _deadline: asyncio.TimerHandle | None = None
        _address: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            address = self.client[0] if self.client else None
            if address is not None:
                if open_by_address[address] >= limits.max_connections_per_address:
                    transport.close()
                    return
                open_by_address[address] += 1
                self._address = address
            self._arm(limits.head_timeout_s)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._address is not None:
                open_by_address[self._address] -= 1
                if open_by_address[self._address] <= 0:
                    del open_by_address[self._address]
                self._address = None
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._deadline is None:  # a kept-alive connection's next request
                self._arm(limits.head_timeout_s)

        def on_headers_complete(self) -> None:
            self._arm(limits.body_timeout_s)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport is not None and not self.transport.is_closing():
                self.transport.close()

    return GuardedHttpToolsProtocol


def uvicorn_options(limits: ConnectionLimits, options: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """``options`` for ``uvicorn.Config`` (the TLS ones, say) with the guard installed on
    top of the protocol they name, if any."""
    merged = dict(options or {})
    merged["http"] = guarded_protocol(limits, merged.get("http", HttpToolsProtocol))
    return merged
