"""KafkaServer: every Kafka-protocol listener of one process, on its event loop.

One asyncio server per listener (``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``), all
sharing the handlers, the limits and one count of open connections per client address
(``max.connections.per.ip``): a connection over the count is closed at once, before any byte
of it is read, with a log line at most once a minute per address. TLS listeners use the
process's server context (client certificates as ``ssl.client.auth`` says).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import time
from collections import Counter
from collections.abc import Iterable

from chunkraft.controller.kafka_listeners import KafkaListener
from chunkraft.kafka.server.api_versions import api_versions_handler
from chunkraft.kafka.server.connection import ConnectionLimits, KafkaConnection
from chunkraft.kafka.server.requests import ApiHandler, KafkaSession
from chunkraft.kafka.server.sasl import KafkaAuthenticator
from chunkraft.kafka.server.sasl_handlers import raw_sasl_token, sasl_handlers

__all__ = ["KafkaServer"]

_log = logging.getLogger(__name__)
_REFUSAL_LOG_INTERVAL = 60.0


class KafkaServer:
    """Serves ``handlers`` on ``listeners`` once :meth:`start` is awaited, until :meth:`close`.

    ApiVersions and the SASL APIs are added to ``handlers`` here, so every listener answers
    them the same way. ``bound`` maps each listener's name to the port it actually bound
    (port 0 listeners pick a free one).
    """

    def __init__(self, listeners: Iterable[KafkaListener], handlers: Iterable[ApiHandler],
                 authenticator: KafkaAuthenticator, *,
                 limits: ConnectionLimits | None = None,
                 max_connections_per_ip: int = 1000,
                 tls: ssl.SSLContext | None = None) -> None:
        self.listeners = tuple(listeners)
        self.authenticator = authenticator
        self.limits = limits or ConnectionLimits()
        self.max_connections_per_ip = max_connections_per_ip
        self.tls = tls
        table = {handler.api_key: handler for handler in handlers}
        for handler in sasl_handlers(authenticator):
            table[handler.api_key] = handler
        table[18] = api_versions_handler(table)
        self.handlers = table
        self.open_connections: Counter[str] = Counter()
        self.refused_connections = 0
        self.bound: dict[str, int] = {}
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_refusal_log: dict[str, float] = {}
        for listener in self.listeners:
            if listener.uses_tls and tls is None:
                raise ValueError(f"listener {listener} needs TLS: set ssl.certfile and "
                                 "ssl.keyfile")

    async def start(self) -> None:
        for listener in self.listeners:
            server = await asyncio.start_server(
                functools.partial(self._accept, listener), host=listener.host, port=listener.port,
                ssl=self.tls if listener.uses_tls else None,
                ssl_handshake_timeout=self.limits.sasl_timeout if listener.uses_tls else None,
                limit=64 * 1024, reuse_address=True)
            self._servers.append(server)
            self.bound[listener.name] = server.sockets[0].getsockname()[1]
            _log.info("Kafka listener %s serving on %s:%d", listener.name, listener.host,
                      self.bound[listener.name])

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    async def _accept(self, listener: KafkaListener, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if peer else "*"
        if self.open_connections[host] >= self.max_connections_per_ip:
            self.refused_connections += 1
            now = time.monotonic()
            if now - self._last_refusal_log.get(host, -_REFUSAL_LOG_INTERVAL) >= \
                    _REFUSAL_LOG_INTERVAL:
                self._last_refusal_log[host] = now
                _log.warning("Kafka listener %s: %s has %d connections open, the limit "
                             "(max.connections.per.ip); closing new ones", listener.name, host,
                             self.max_connections_per_ip)
            writer.close()
            return
        session = KafkaSession(listener.name, listener.security_protocol, host)
        if not listener.uses_sasl:
            tls = writer.get_extra_info("ssl_object")
            session.principal = self.authenticator.without_sasl(tls, host)
            if session.principal is None:
                _log.info("Kafka listener %s: %s has no credentials (anonymous access is "
                          "off); closing", listener.name, host)
                writer.close()
                return
        self.open_connections[host] += 1
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await KafkaConnection(reader, writer, self.handlers, session, self.limits,
                                  raw_sasl=lambda s, m, t: raw_sasl_token(
                                      self.authenticator, s, m, t)).serve()
        except asyncio.CancelledError:
            # close() ends the connection: finish quietly, since asyncio's stream protocol
            # logs a cancelled connection task as an error.
            writer.transport.abort()
        finally:
            if task is not None:
                self._tasks.discard(task)
            self.open_connections[host] -= 1
            if self.open_connections[host] <= 0:
                del self.open_connections[host]
