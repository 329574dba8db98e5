"""A real KafkaServer on 127.0.0.1 with a fake handler table, and a raw Kafka client for it.

The server tests drive the listener as a client would: frames over a socket, encoded with
chunkraft's codec (``RequestHeader`` then the body), answers read back frame by frame. The
handlers behind ApiVersions and SASL are fakes: Metadata answers a fixed body, DescribeCluster
raises, CreateChunks (private) answers an empty body.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from chunkraft.controller.kafka_listeners import KafkaListener
from chunkraft.kafka.codec.messages import (
    api_specs,
    decoder,
    encode,
    encoder,
    request_header_version,
    response_header_version,
)
from chunkraft.kafka.server.connection import ConnectionLimits
from chunkraft.kafka.server.listener import KafkaServer
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest, KafkaSession
from chunkraft.kafka.server.sasl import KafkaAuthenticator
from chunkraft.security.credentials import CredentialStore, add_token

SASL_LISTENER = KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "127.0.0.1", 0)
PLAIN_LISTENER = KafkaListener("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 0)
LIMITS = ConnectionLimits(max_frame_bytes=4096, idle_timeout=0.5, sasl_timeout=0.5,
                          frame_timeout=0.5, write_timeout=0.5)
TOKEN = "crt_alice"
PLAIN = b"\x00alice\x00" + TOKEN.encode()
METADATA = {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "b1.test", "port": 9092,
                                                "rack": None}],
            "cluster_id": "c", "controller_id": 1, "topics": []}
WAIT = 5.0
"""The longest any read of a test waits (a hung server fails the test, not the run)."""


class Recorder:
    """The fake handlers, recording the session of every request they served."""

    def __init__(self) -> None:
        self.sessions: list[KafkaSession] = []
        self.bodies: list[dict[str, Any]] = []

    async def metadata(self, request: KafkaRequest) -> dict[str, Any]:
        self.sessions.append(request.session)
        self.bodies.append(request.body)
        return METADATA

    async def boom(self, request: KafkaRequest) -> dict[str, Any]:
        raise RuntimeError("a handler bug")

    async def chunks(self, request: KafkaRequest) -> dict[str, Any]:
        return {}

    def handlers(self) -> list[ApiHandler]:
        return [ApiHandler(3, 0, 12, self.metadata), ApiHandler(60, 0, 1, self.boom),
                ApiHandler(17000, 0, 0, self.chunks, private=True)]


def credentials(tmp_path: Path) -> CredentialStore:
    path = tmp_path / "credentials.json"
    add_token(path, "User:alice", token=TOKEN)
    return CredentialStore(path)


_WARM_APIS = {18: range(5), 3: range(13), 17: range(2), 36: range(3), 60: range(2),
              17000: range(1)}


def warm_codecs() -> None:
    """Builds the codecs the tests use before a server starts: the first build of one takes
    long enough to block the event loop past the tests' short deadlines."""
    for version in (1, 2):
        decoder("RequestHeader", version)
        encoder("RequestHeader", version)
    for version in (0, 1):
        decoder("ResponseHeader", version)
        encoder("ResponseHeader", version)
    for api_key, versions in _WARM_APIS.items():
        api = api_specs()[api_key]
        for version in versions:
            for spec in (api.request, api.response):
                decoder(spec.name, version)
                encoder(spec.name, version)


class Harness:
    """A started server and the clients a test connected to it (closed with it)."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.clients: list[Client] = []

    async def connect(self, listener: str | None = None) -> Client:
        port = self.server.bound[listener or self.server.listeners[0].name]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = Client(reader, writer)
        self.clients.append(client)
        return client

    async def close_clients(self) -> None:
        for client in self.clients:
            await client.close()


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, *, listeners: Iterable[KafkaListener] = (SASL_LISTENER,),
                  limits: ConnectionLimits = LIMITS, allow_anonymous: bool = False,
                  recorder: Recorder | None = None, max_connections_per_ip: int = 1000,
                  mechanisms: tuple[str, ...] = ("PLAIN", "OAUTHBEARER"),
                  ) -> AsyncIterator[Harness]:
    """A started server with the fake handlers; its clients' connections and the server
    closed on the way out."""
    warm_codecs()
    recorder = recorder or Recorder()
    server = KafkaServer(listeners, recorder.handlers(),
                         KafkaAuthenticator(credentials(tmp_path), mechanisms, allow_anonymous),
                         limits=limits, max_connections_per_ip=max_connections_per_ip)
    await server.start()
    harness = Harness(server)
    try:
        yield harness
    finally:
        await harness.close_clients()
        await server.close()


def anonymous(tmp_path: Path, **kwargs: Any) -> contextlib.AbstractAsyncContextManager[Harness]:
    """``serving`` on a PLAINTEXT listener where every connection is User:ANONYMOUS."""
    return serving(tmp_path, listeners=(PLAIN_LISTENER,), allow_anonymous=True, **kwargs)


def request_frame(api_key: int, version: int, body: dict[str, Any], correlation_id: int,
                  *, client_id: str | None = "test-client", trailing: bytes = b"") -> bytes:
    """A whole request frame, its 4-byte size included."""
    header = encode("RequestHeader", request_header_version(api_key, version), {
        "request_api_key": api_key, "request_api_version": version,
        "correlation_id": correlation_id, "client_id": client_id})
    api = api_specs()[api_key]
    payload = header + encode(api.request.name, version, body) + trailing
    return sized(payload)


def sized(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


class Client:
    """One raw connection to the server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.next_id = 1

    async def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, api_key: int, version: int, body: dict[str, Any], **kwargs: Any
                   ) -> int:
        correlation_id = self.next_id
        self.next_id += 1
        await self.send_bytes(request_frame(api_key, version, body, correlation_id, **kwargs))
        return correlation_id

    async def read_frame(self) -> bytes | None:
        """The next frame's bytes (without its size), None when the server closed."""
        try:
            size = await asyncio.wait_for(self.reader.readexactly(4), WAIT)
            return await asyncio.wait_for(self.reader.readexactly(
                int.from_bytes(size, "big")), WAIT)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def answer(self, api_key: int, version: int) -> tuple[int, dict[str, Any]]:
        """(correlation id, body) of the next answer, read at ``version``."""
        frame = await self.read_frame()
        assert frame is not None, "the server closed the connection instead of answering"
        header, end = decoder("ResponseHeader", response_header_version(api_key, version))(
            frame, 0, len(frame))
        body, body_end = decoder(api_specs()[api_key].response.name, version)(
            frame, end, len(frame))
        assert body_end == len(frame), "bytes left after the answer"
        return header["correlation_id"], body

    async def call(self, api_key: int, version: int, body: dict[str, Any], **kwargs: Any
                   ) -> dict[str, Any]:
        correlation_id = await self.send(api_key, version, body, **kwargs)
        answered, answer = await self.answer(api_key, version)
        assert answered == correlation_id
        return answer

    async def closed(self, within: float = WAIT) -> bool:
        """Whether the server closes the connection within ``within`` seconds (without
        sending anything more)."""
        try:
            data = await asyncio.wait_for(self.reader.read(1), within)
        except TimeoutError:
            return False
        except ConnectionError:
            return True
        return data == b""

    async def authenticate(self, message: bytes = PLAIN, mechanism: str = "PLAIN") -> None:
        """SaslHandshake v1 and SaslAuthenticate v2 that succeed."""
        handshake = await self.call(17, 1, {"mechanism": mechanism})
        assert handshake["error_code"] == 0
        answer = await self.call(36, 2, {"auth_bytes": message})
        assert answer["error_code"] == 0, answer

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()
