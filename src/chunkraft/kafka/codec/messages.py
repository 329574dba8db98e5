"""Encoding and decoding Kafka messages by name and version, and the frames' headers.

The codecs are generated from the specs (``codegen.py``) on first use and kept: one encoder and
one decoder per (message, version). Thread-safe: building one twice under a race is harmless.

Headers (Kafka's protocol guide): a request header is version 2 when the request's version is
flexible, else 1 (``RequestHeader``: api key, api version, correlation id, client id; version 2
adds tagged fields). A response header is version 1 when the response's version is flexible,
else 0 (correlation id; version 1 adds tagged fields), except that ApiVersions answers always
use version 0, so that a client which asked with a version the server does not know can still
read the answer's error code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chunkraft.kafka.codec.codegen import (
    Decoder,
    Encoder,
    KafkaDecodeError,
    build_decoder,
    build_encoder,
)
from chunkraft.kafka.schema.specs import MessageSpec, message_specs

__all__ = [
    "API_VERSIONS_KEY",
    "ApiSpec",
    "KafkaDecodeError",
    "RequestHeader",
    "api_specs",
    "decode",
    "decode_request_header",
    "encode",
    "encode_response_header",
    "request_header_version",
    "response_header_version",
]

API_VERSIONS_KEY = 18

_ENCODERS: dict[tuple[str, int], Encoder] = {}
_DECODERS: dict[tuple[str, int], Decoder] = {}


def _spec(name: str) -> MessageSpec:
    specs = message_specs()
    if name not in specs:
        raise KeyError(f"no Kafka message named {name}")
    return specs[name]


def _check_version(spec: MessageSpec, version: int) -> None:
    if version not in spec.valid:
        raise ValueError(f"{spec.name} has no version {version} (valid: "
                         f"{spec.valid.low}-{spec.valid.high})")


def encoder(name: str, version: int) -> Encoder:
    found = _ENCODERS.get((name, version))
    if found is None:
        spec = _spec(name)
        _check_version(spec, version)
        found = _ENCODERS[(name, version)] = build_encoder(spec, version)
    return found


def decoder(name: str, version: int) -> Decoder:
    found = _DECODERS.get((name, version))
    if found is None:
        spec = _spec(name)
        _check_version(spec, version)
        found = _DECODERS[(name, version)] = build_decoder(spec, version)
    return found


def encode(name: str, version: int, message: dict[str, Any]) -> bytes:
    """``message`` as the body of ``name`` at ``version`` (missing keys take defaults)."""
    return encoder(name, version)(message)


def decode(name: str, version: int, data: Any, position: int = 0, *,
           whole: bool = True) -> dict[str, Any]:
    """The body of ``name`` at ``version`` from ``data[position:]``; KafkaDecodeError when it
    is malformed or, with ``whole``, when bytes are left after it."""
    message, end = decoder(name, version)(data, position, len(data))
    if whole and end != len(data):
        raise KafkaDecodeError(f"{len(data) - end} bytes left after a {name} v{version}", end)
    return message


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API key: its request and response definitions."""

    api_key: int
    name: str
    request: MessageSpec
    response: MessageSpec

    def request_flexible(self, version: int) -> bool:
        return version in self.request.flexible

    def response_flexible(self, version: int) -> bool:
        return version in self.response.flexible


_APIS: dict[int, ApiSpec] = {}


def api_specs() -> dict[int, ApiSpec]:
    """Every API key with both a request and a response definition."""
    if not _APIS:
        specs = message_specs()
        for spec in specs.values():
            if spec.type != "request" or spec.api_key is None:
                continue
            base = spec.name.removesuffix("Request")
            response = specs.get(f"{base}Response")
            if response is not None:
                _APIS[spec.api_key] = ApiSpec(spec.api_key, base, spec, response)
    return _APIS


def request_header_version(api_key: int, api_version: int) -> int:
    """The header version a request of ``api_key`` at ``api_version`` carries (1 for an API
    key this codec does not know: enough to read its correlation id and answer)."""
    api = api_specs().get(api_key)
    if api is None:
        return 1
    return 2 if api.request_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    api = api_specs().get(api_key)
    return 1 if api is not None and api.response_flexible(api_version) else 0


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A request's header; ``size`` is where its body starts in the frame."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int


def decode_request_header(frame: Any) -> RequestHeader:
    """The header at the start of a request frame (the bytes after the 4-byte size).

    The api key, version and correlation id come first in every header version, so they are
    read before the version of the rest is known."""
    if len(frame) < 8:
        raise KafkaDecodeError("a request shorter than its header", 0)
    api_key = int.from_bytes(frame[0:2], "big", signed=True)
    api_version = int.from_bytes(frame[2:4], "big", signed=True)
    version = request_header_version(api_key, api_version)
    header, end = decoder("RequestHeader", version)(frame, 0, len(frame))
    return RequestHeader(api_key, api_version, header["correlation_id"], header["client_id"],
                         end)


def encode_response_header(api_key: int, api_version: int, correlation_id: int) -> bytes:
    """The header of the answer to a request of ``api_key`` at ``api_version``."""
    version = response_header_version(api_key, api_version)
    return encode("ResponseHeader", version, {"correlation_id": correlation_id})
