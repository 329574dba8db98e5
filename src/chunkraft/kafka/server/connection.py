"""One Kafka client connection: frames in, handlers, frames out, in order, within limits.

A frame is a 4-byte big-endian size and that many bytes. The size is checked against
``max_frame_bytes`` before any byte of the frame is buffered, so an oversize frame costs its
4 bytes; a frame must arrive whole within ``frame_timeout`` once its size was read (slow
senders are cut), and a connection that sends nothing for ``idle_timeout`` is closed, as is a
connection to a SASL listener that has not authenticated within ``sasl_timeout``.

Requests are answered one at a time in the order they came (Kafka's per-connection ordering:
a client matches answers by correlation id, but expects them in order): the next frame is read
once the answer to the previous one is written, which also bounds the memory a pipelining
client can make this connection hold to one frame.

Before authentication only the APIs marked ``before_authentication`` are served (ApiVersions
and the SASL exchange); anything else closes the connection, as Kafka does. A malformed frame,
an unknown API key or an unsupported version (other than ApiVersions, which answers
UNSUPPORTED_VERSION) closes this connection only, with one log line; an exception in a handler
does the same. No handler ever runs on another thread: the event loop is the only one, and the
handlers that do real work await it elsewhere (the controller's worker, an HTTP call).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from dataclasses import dataclass
from typing import Any

from chunkraft.kafka.codec.messages import (
    API_VERSIONS_KEY,
    KafkaDecodeError,
    RequestHeader,
    api_specs,
    decode,
    decode_request_header,
    encode,
    encode_response_header,
)
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest, KafkaSession

__all__ = ["RAW_SASL", "ConnectionLimits", "KafkaConnection"]

_log = logging.getLogger(__name__)

RAW_SASL = "raw_sasl_mechanism"
"""Session extra set by SaslHandshake v0: the next frame is a bare SASL token."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The limits of every connection of a listener (seconds and bytes)."""

    max_frame_bytes: int = 8 * 1024 * 1024
    idle_timeout: float = 600.0
    sasl_timeout: float = 10.0
    frame_timeout: float = 30.0
    write_timeout: float = 30.0
    failed_authentication_delay: float = 0.1
    """How long a connection whose SASL exchange failed stays open after its answer before it
    closes (Kafka's ``connection.failed.authentication.delay.ms``, 100 ms): a client reads the
    SASL_AUTHENTICATION_FAILED answer before it sees the connection end (kafka-python 3.0
    otherwise sometimes reports only a disconnect), and a guessing client is slowed down."""

    @classmethod
    def of_settings(cls, config: Any) -> ConnectionLimits:
        """The limits a controller's or a broker's settings give (socket.request.max.bytes,
        connections.max.idle.ms, sasl.handshake.timeout.ms)."""
        return cls(max_frame_bytes=config.socket_request_max_bytes,
                   idle_timeout=config.connections_max_idle_ms / 1000,
                   sasl_timeout=config.sasl_handshake_timeout_ms / 1000)


class _Close(Exception):
    """Ends the connection; the message is the log line's reason (None: a quiet close)."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(reason)
        self.reason = reason


class KafkaConnection:
    """Serves one accepted connection until it closes (see the module docstring).

    ``handlers`` maps API keys to their handlers; ``session`` starts unauthenticated on a SASL
    listener (``principal`` None) or already authenticated otherwise.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 handlers: dict[int, ApiHandler], session: KafkaSession,
                 limits: ConnectionLimits, raw_sasl: Any = None) -> None:
        self.reader = reader
        self.writer = writer
        self.handlers = handlers
        self.session = session
        self.limits = limits
        self.raw_sasl = raw_sasl
        """Answers a bare SASL token after SaslHandshake v0: ``async (session, token) ->
        bytes | None`` (None: authentication failed, close)."""
        self.started = time.monotonic()
        self.requests = 0

    async def serve(self) -> None:
        peer = self.session.peer_host
        try:
            for _ in range(2**62):  # one request per turn; ends when the connection does
                await self._one()
        except _Close as closed:
            if closed.reason:
                _log.info("Kafka connection from %s on %s closed: %s", peer,
                          self.session.listener, closed.reason)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, OSError):
            pass  # the client went away
        except Exception:
            _log.exception("Kafka connection from %s on %s failed; closing it", peer,
                           self.session.listener)
        finally:
            self.writer.close()
            with contextlib.suppress(TimeoutError, ConnectionError, ssl.SSLError, OSError):
                await asyncio.wait_for(self.writer.wait_closed(), 1.0)

    def _read_deadline(self) -> float:
        if self.session.principal is None:
            left = self.started + self.limits.sasl_timeout - time.monotonic()
            if left <= 0:
                raise _Close(f"not authenticated within {self.limits.sasl_timeout:g} s")
            return min(left, self.limits.idle_timeout)
        return self.limits.idle_timeout

    async def _read_frame(self) -> bytes:
        timeout = self._read_deadline()
        try:
            size_bytes = await asyncio.wait_for(self.reader.readexactly(4), timeout)
        except TimeoutError:
            if self.session.principal is None:
                raise _Close(f"not authenticated within {self.limits.sasl_timeout:g} s"
                             ) from None
            raise _Close(None) from None  # idle: Kafka's connections.max.idle.ms
        except asyncio.IncompleteReadError as error:
            if error.partial:
                raise _Close("the connection ended inside a frame's size") from None
            raise _Close(None) from None
        size = int.from_bytes(size_bytes, "big", signed=True)
        if size < 0 or size > self.limits.max_frame_bytes:
            raise _Close(f"a frame of {size} bytes is over socket.request.max.bytes "
                         f"({self.limits.max_frame_bytes})")
        # The deadline first: it may close the connection, and a read made before it would
        # be left unawaited.
        timeout = min(self.limits.frame_timeout, self._read_deadline())
        try:
            return await asyncio.wait_for(self.reader.readexactly(size), timeout)
        except TimeoutError:
            raise _Close(f"a frame of {size} bytes did not arrive within "
                         f"{self.limits.frame_timeout:g} s") from None

    async def _write(self, *parts: bytes) -> None:
        size = sum(len(part) for part in parts)
        self.writer.write(size.to_bytes(4, "big") + b"".join(parts))
        try:
            await asyncio.wait_for(self.writer.drain(), self.limits.write_timeout)
        except TimeoutError:
            raise _Close(f"the client read no answer for {self.limits.write_timeout:g} s"
                         ) from None

    async def _one(self) -> None:
        frame = await self._read_frame()
        self.requests += 1
        mechanism = self.session.extras.pop(RAW_SASL, None)
        if mechanism is not None:
            answer = await self.raw_sasl(self.session, mechanism, frame)
            if answer is None:
                raise _Close("SASL authentication failed")
            await self._write(answer)
            return
        try:
            header = decode_request_header(frame)
        except KafkaDecodeError as error:
            raise _Close(f"a malformed request header: {error}") from None
        handler = self.handlers.get(header.api_key)
        if handler is None:
            raise _Close(f"API key {header.api_key} is not served here")
        if self.session.principal is None and not handler.before_authentication:
            raise _Close(f"API key {header.api_key} before authentication (only ApiVersions "
                         "and SASL are served until then)")
        if not handler.min_version <= header.api_version <= handler.max_version:
            if header.api_key != API_VERSIONS_KEY:
                raise _Close(f"{_name(header.api_key)} v{header.api_version} is not supported "
                             f"(v{handler.min_version}-v{handler.max_version})")
            body: dict[str, Any] = {}  # unreadable at a version we do not know: v0 answers
        else:
            try:
                # Not whole: librdkafka 2.16 sends bytes after some bodies (three after its
                # Metadata v12 of every topic), and Kafka brokers read past them.
                body = decode(_request_name(header.api_key), header.api_version, frame,
                              header.size, whole=False)
            except KafkaDecodeError as error:
                raise _Close(f"a malformed {_name(header.api_key)} v{header.api_version}: "
                             f"{error}") from None
        response = await handler.handle(KafkaRequest(header, body, self.session))
        if response is None:
            return  # acks=0: the client reads no answer
        await self._answer(header, response)
        if self.session.extras.pop("close_after_answer", False):
            await asyncio.sleep(self.limits.failed_authentication_delay)
            raise _Close("SASL authentication failed")

    async def _answer(self, header: RequestHeader, response: dict[str, Any] | bytes) -> None:
        version = header.api_version
        if isinstance(response, bytes):  # already encoded at the request's version
            await self._write(encode_response_header(header.api_key, version,
                                                     header.correlation_id), response)
            return
        if header.api_key == API_VERSIONS_KEY and response.get("error_code") == 35:
            version = 0  # UNSUPPORTED_VERSION: the client reads it at v0 whatever it asked
        body = encode(_response_name(header.api_key), version, response)
        await self._write(encode_response_header(header.api_key, version,
                                                 header.correlation_id), body)


def _name(api_key: int) -> str:
    api = api_specs().get(api_key)
    return api.name if api is not None else f"API key {api_key}"


def _request_name(api_key: int) -> str:
    return api_specs()[api_key].request.name


def _response_name(api_key: int) -> str:
    return api_specs()[api_key].response.name
