"""A small synchronous Kafka client over one socket, for tests that speak the protocol raw.

It frames requests with chunkraft's codec (size, header, body), reads each answer and decodes
it at the version asked. Every read and write is bounded by the socket's timeout.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from chunkraft.kafka.codec.messages import (
    api_specs,
    decode,
    decoder,
    encode,
    request_header_version,
    response_header_version,
)

__all__ = ["KafkaWire"]


class KafkaWire:
    """One connection to ``host:port``; ``call`` sends a request and returns its answer."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        host, _, port = address.rpartition(":")
        self.socket = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.socket.close()

    def __enter__(self) -> KafkaWire:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send_frame(self, payload: bytes) -> None:
        self.socket.sendall(struct.pack(">i", len(payload)) + payload)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = self.socket.recv(count - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {count} bytes")
            data += chunk
        return bytes(data)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        api = api_specs()[api_key]
        self.correlation_id += 1
        header = encode("RequestHeader", request_header_version(api_key, version), {
            "request_api_key": api_key, "request_api_version": version,
            "correlation_id": self.correlation_id, "client_id": "chunkraft-tests"})
        self.send_frame(header + encode(api.request.name, version, body))
        frame = self.read_frame()
        response_header, end = decoder(
            "ResponseHeader", response_header_version(api_key, version))(frame, 0, len(frame))
        assert response_header["correlation_id"] == self.correlation_id
        return decode(api.response.name, version, frame, end)

    def sasl_plain(self, username: str, password: str, *, private_apis: bool = False
                   ) -> dict[str, Any]:
        """ApiVersions v3 (asking for the private keys if ``private_apis``), then SASL/PLAIN;
        returns the SaslAuthenticate answer."""
        self.api_versions = self.call(18, 3, {
            "client_software_name": "chunkraft-tests", "client_software_version": "1",
            "include_private_apis": private_apis})
        handshake = self.call(17, 1, {"mechanism": "PLAIN"})
        assert handshake["error_code"] == 0, handshake
        return self.call(36, 2, {"auth_bytes": f"\0{username}\0{password}".encode()})
