"""A raw Kafka client for the e2e tests: what no stock client asks (DescribeCluster v1 with
endpoint type 2, admin requests straight to a controller's listener), encoded by chunkraft's
own codec over a socket, after SaslHandshake v1 / SaslAuthenticate v2 with PLAIN."""

from __future__ import annotations

import socket
import struct
from typing import Any

from chunkraft.kafka.codec.messages import (
    api_specs,
    decode,
    encode,
    request_header_version,
    response_header_version,
)

__all__ = ["RawKafka"]

TIMEOUT_S = 10.0


class RawKafka:
    """One connection to a Kafka listener, authenticated with SASL/PLAIN, that sends requests
    encoded by chunkraft's codec (frames: a 4-byte size, the request header, the body) and
    decodes the answers. Every read and write is bounded by ``timeout``."""

    def __init__(self, host: str, port: int, username: str, password: str, *,
                 timeout: float = TIMEOUT_S) -> None:
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._sock.settimeout(timeout)
        self._correlation = 0
        try:
            handshake = self.call("SaslHandshake", 1, {"mechanism": "PLAIN"})
            assert handshake["error_code"] == 0, handshake
            answer = self.call("SaslAuthenticate", 2, {
                "auth_bytes": b"\0" + username.encode() + b"\0" + password.encode()})
            if answer["error_code"]:
                raise ConnectionRefusedError(f"SASL refused: {answer}")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RawKafka:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def call(self, api: str, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Sends request ``api`` (e.g. ``"DescribeCluster"``) at ``version``; its answer."""
        (api_key,) = [key for key, spec in api_specs().items() if spec.name == api]
        self._correlation += 1
        header = encode("RequestHeader", request_header_version(api_key, version), {
            "request_api_key": api_key, "request_api_version": version,
            "correlation_id": self._correlation, "client_id": "chunkraft-e2e"})
        payload = header + encode(f"{api}Request", version, body)
        self._sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", self._read(4))
        frame = self._read(size)
        header_version = response_header_version(api_key, version)
        (correlation,) = struct.unpack(">i", frame[:4])
        assert correlation == self._correlation, (correlation, self._correlation)
        start = 4 if header_version == 0 else 5  # v1: an empty tagged-field section
        assert header_version == 0 or frame[4] == 0, frame[:8]
        return decode(f"{api}Response", version, frame, start)

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:  # each recv returns at least a byte or raises (timeout)
            chunk = self._sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return bytes(data)
