"""A Kafka capture server for the tests: records the request frames that stock clients send and
answers just enough for them to go on (ApiVersions, the SASL exchange, Metadata).

It listens on 127.0.0.1 on a port of its own, reads length-prefixed frames (a 4-byte big-endian
size, then the frame), keeps each frame's bytes, and answers with chunkraft's codec:

- ApiVersions at the version asked for when it is one we know (0-4), else at version 0 with
  UNSUPPORTED_VERSION and our key list, as a Kafka broker does (the response header is v0
  always, so that a client can read the error whatever it asked for);
- SaslHandshake: PLAIN, no error; SaslAuthenticate: no error, whatever the credentials (after a
  SaslHandshake v0 the next frame is a raw SASL token, answered with an empty one);
- Metadata: a cluster of one broker, this server, with no topics (a topic asked for by name
  gets UNKNOWN_TOPIC_OR_PARTITION).

Any other request closes its connection (its frame is recorded first). Bounded: connections,
frames per connection, a frame's size and the wait for each frame are limited, and ``stop``
ends every connection. Thread-safe: the server runs its own event loop on a thread of its own;
``frames()`` returns a copy taken under a lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from chunkraft.kafka.codec.messages import (
    API_VERSIONS_KEY,
    KafkaDecodeError,
    api_specs,
    decode,
    decode_request_header,
    encode,
    encode_response_header,
)

__all__ = ["ADVERTISED_VERSIONS", "CapturedFrame", "KafkaCaptureServer", "capture_server"]

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
METADATA_KEY = 3
UNSUPPORTED_VERSION = 35
UNKNOWN_TOPIC_OR_PARTITION = 3
NODE_ID = 1
CLUSTER_ID = "chunkraft-capture"

# The API keys the server lists in its ApiVersions answers: the admin set, with
# ranges consistent with each other (kafka-python infers a broker version from them; these
# read as Kafka 3.3+). Only ApiVersions, SaslHandshake, SaslAuthenticate and Metadata are
# answered: a client that sends anything else has its connection closed.
ADVERTISED_VERSIONS: dict[int, tuple[int, int]] = {
    18: (0, 4),   # ApiVersions
    3: (0, 12),   # Metadata
    17: (0, 1),   # SaslHandshake
    36: (0, 2),   # SaslAuthenticate
    19: (2, 7),   # CreateTopics
    20: (1, 6),   # DeleteTopics
    37: (0, 3),   # CreatePartitions
    32: (1, 4),   # DescribeConfigs
    33: (0, 2),   # AlterConfigs
    44: (0, 1),   # IncrementalAlterConfigs
    29: (1, 3),   # DescribeAcls
    30: (1, 3),   # CreateAcls
    31: (1, 3),   # DeleteAcls
    60: (0, 1),   # DescribeCluster
    22: (0, 4),   # InitProducerId
}

MAX_CONNECTIONS = 32
MAX_FRAMES_PER_CONNECTION = 200
MAX_FRAME_BYTES = 1 << 20
FRAME_WAIT_SECONDS = 15.0


@dataclass(frozen=True, slots=True)
class CapturedFrame:
    """One request frame as the client sent it (without its 4-byte size). ``api_key`` and
    ``api_version`` are -1 for a raw SASL token (after a SaslHandshake v0)."""

    connection: int
    api_key: int
    api_version: int
    data: bytes

    @property
    def api_name(self) -> str:
        api = api_specs().get(self.api_key)
        return api.name if api is not None else f"ApiKey{self.api_key}"


def _api_versions_body(error_code: int) -> dict[str, Any]:
    return {"error_code": error_code, "throttle_time_ms": 0,
            "api_keys": [{"api_key": key, "min_version": low, "max_version": high}
                         for key, (low, high) in sorted(ADVERTISED_VERSIONS.items())]}


class KafkaCaptureServer:
    """Records request frames and answers ApiVersions, SASL and Metadata; see the module doc.

    Use as a context manager or with ``start`` / ``stop``. ``port`` is known after ``start``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self._lock = threading.Lock()
        self._frames: list[CapturedFrame] = []
        self._connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._started = threading.Event()
        self._failure: BaseException | None = None

    # -- the caller's side -----------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> KafkaCaptureServer:
        self._thread = threading.Thread(target=self._run, name="kafka-capture", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError("the Kafka capture server did not start in time")
        if self._failure is not None:
            raise RuntimeError("the Kafka capture server failed to start") from self._failure
        return self

    def stop(self, timeout: float = 10.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop may be closed already
            asyncio.run_coroutine_threadsafe(self._close(), loop).result(timeout)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._loop = self._thread = None

    def __enter__(self) -> KafkaCaptureServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def frames(self) -> list[CapturedFrame]:
        with self._lock:
            return list(self._frames)

    # -- the loop's side -------------------------------------------------------------------

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._serve, self.host, 0))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as failure:  # reported to start(), which raises
            self._failure = failure
            self._started.set()
            loop.close()
            return
        self._started.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5.0)
        if self._server is not None:
            await asyncio.wait_for(self._server.wait_closed(), 5.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        with self._lock:
            self._connections += 1
            connection = self._connections
        self._tasks.add(task)
        try:
            if connection <= MAX_CONNECTIONS:
                await self._converse(connection, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError,
                KafkaDecodeError, ValueError):
            pass  # the client went away, stalled or sent what we cannot read: its loss
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _converse(self, connection: int, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
        raw_sasl_next = False
        for _ in range(MAX_FRAMES_PER_CONNECTION):
            size_bytes = await asyncio.wait_for(reader.readexactly(4), FRAME_WAIT_SECONDS)
            (size,) = struct.unpack(">i", size_bytes)
            if not 0 < size <= MAX_FRAME_BYTES:
                return
            frame = await asyncio.wait_for(reader.readexactly(size), FRAME_WAIT_SECONDS)
            if raw_sasl_next:
                raw_sasl_next = False
                self._record(CapturedFrame(connection, -1, -1, frame))
                writer.write(struct.pack(">i", 0))
                await writer.drain()
                continue
            header = decode_request_header(frame)
            self._record(CapturedFrame(connection, header.api_key, header.api_version, frame))
            answer = self._answer(header.api_key, header.api_version, frame[header.size:])
            if answer is None:
                return
            name, version, body = answer
            payload = (encode_response_header(header.api_key, version, header.correlation_id)
                       + encode(name, version, body))
            writer.write(struct.pack(">i", len(payload)) + payload)
            await writer.drain()
            raw_sasl_next = header.api_key == SASL_HANDSHAKE_KEY and header.api_version == 0

    def _record(self, frame: CapturedFrame) -> None:
        with self._lock:
            self._frames.append(frame)

    def _answer(self, api_key: int, version: int, body: bytes
                ) -> tuple[str, int, dict[str, Any]] | None:
        """The response's message name, version and fields, or None to close."""
        if api_key == API_VERSIONS_KEY:
            low, high = ADVERTISED_VERSIONS[API_VERSIONS_KEY]
            if low <= version <= high:
                return "ApiVersionsResponse", version, _api_versions_body(0)
            return "ApiVersionsResponse", 0, _api_versions_body(UNSUPPORTED_VERSION)
        low, high = ADVERTISED_VERSIONS.get(api_key, (0, -1))
        if not low <= version <= high:
            return None
        if api_key == SASL_HANDSHAKE_KEY:
            return "SaslHandshakeResponse", version, {"error_code": 0, "mechanisms": ["PLAIN"]}
        if api_key == SASL_AUTHENTICATE_KEY:
            return "SaslAuthenticateResponse", version, {
                "error_code": 0, "error_message": None, "auth_bytes": b"",
                "session_lifetime_ms": 0}
        if api_key == METADATA_KEY:
            return "MetadataResponse", version, self._metadata(version, body)
        return None

    def _metadata(self, version: int, body: bytes) -> dict[str, Any]:
        # whole=False: librdkafka 2.16 sends 3 bytes after the body of its all-topics
        # Metadata v12 request (see tests/golden/kafka/README.md); Kafka brokers read on.
        request = decode("MetadataRequest", version, body, whole=False)
        named = [topic["name"] for topic in request["topics"] or [] if topic.get("name")]
        return {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": NODE_ID, "host": self.host, "port": self.port,
                         "rack": None}],
            "cluster_id": CLUSTER_ID,
            "controller_id": NODE_ID,
            "topics": [{"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": name,
                        "is_internal": False, "partitions": []} for name in named],
        }


@contextlib.contextmanager
def capture_server() -> Iterator[KafkaCaptureServer]:
    """A started capture server, stopped on the way out."""
    server = KafkaCaptureServer().start()
    try:
        yield server
    finally:
        server.stop()
