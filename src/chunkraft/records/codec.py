"""The binary codec of metadata records: Kafka's frame around a flexible-version body.

Frame: unsigned varint frame version (1), unsigned varint apiKey, unsigned varint version, then
the body (see :mod:`chunkraft.records.codegen`). A decode either returns a whole record or raises
:class:`~chunkraft.errors.RecordDecodeError` naming the byte offset: unknown apiKeys or versions,
truncated input and trailing bytes are all errors, never defaults.

Thread-safe: the generated encoders and decoders are pure functions, built once per class and
version (building twice under a race is harmless).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from chunkraft.errors import RecordDecodeError, RecordEncodeError
from chunkraft.records.codegen import Decoder, Encoder, build_decoder, build_encoder, uvarint
from chunkraft.records.schema import RecordSchema, record_schema, schema_of

__all__ = [
    "FRAME_VERSION",
    "decode_record",
    "decode_record_from",
    "decode_records",
    "encode_record",
    "latest_version",
    "record_version_of",
]

FRAME_VERSION = 1

_ENCODERS: dict[tuple[type, int], tuple[bytes, Encoder]] = {}
_DECODERS: dict[tuple[int, int], Decoder] = {}
_LATEST: dict[type, int] = {}


def _record_schema_of(cls: type) -> RecordSchema:
    schema = schema_of(cls)
    if not isinstance(schema, RecordSchema):
        raise RecordEncodeError(f"{cls.__name__} is a struct, not a metadata record")
    return schema


def latest_version(cls: type) -> int:
    """The highest version declared for a record class: what :func:`encode_record` writes."""
    found = _LATEST.get(cls)
    if found is None:
        found = _LATEST[cls] = _record_schema_of(cls).versions[-1]
    return found


def _encoder(cls: type, version: int) -> tuple[bytes, Encoder]:
    key = (cls, version)
    found = _ENCODERS.get(key)
    if found is None:
        schema = _record_schema_of(cls)
        if version not in schema.versions:
            raise RecordEncodeError(
                f"{schema.name} has no version {version} (valid: {schema.valid_versions})"
            )
        frame = uvarint(FRAME_VERSION) + uvarint(schema.api_key) + uvarint(version)
        found = _ENCODERS[key] = (frame, build_encoder(schema, version, prefix=frame))
    return found


_LATEST_ENCODERS: dict[type, Encoder] = {}


def encode_record(record: Any, version: int | None = None) -> bytes:
    """Encodes one record with its frame, at ``version`` or the latest version of its type."""
    cls = type(record)
    if version is None:
        encode = _LATEST_ENCODERS.get(cls)
        if encode is None:
            version = latest_version(cls)
            encode = _LATEST_ENCODERS[cls] = _encoder(cls, version)[1]
    else:
        encode = _encoder(cls, version)[1]
    try:
        return encode(record)
    except (struct.error, AttributeError, TypeError, ValueError, OverflowError) as exc:
        shown = version if version is not None else latest_version(cls)
        raise RecordEncodeError(f"cannot encode {cls.__name__} v{shown}: {exc}") from None


def _decoder(api_key: int, version: int, key_position: int) -> Decoder:
    """The decoder of a framed body; errors name the apiKey byte or the version byte after it."""
    found = _DECODERS.get((api_key, version))
    if found is None:
        schema = record_schema(api_key)
        if schema is None:
            raise RecordDecodeError(f"unknown record apiKey {api_key}", key_position)
        if version not in schema.versions:
            raise RecordDecodeError(
                f"{schema.name} version {version} is not known "
                f"(valid: {schema.valid_versions})",
                key_position + 1,
            )
        found = _DECODERS[(api_key, version)] = build_decoder(schema, version)
    return found


def _read_small_uvarint(buf: Any, pos: int, end: int, what: str) -> tuple[int, int]:
    if pos >= end:
        raise RecordDecodeError(f"input ends before the {what}", pos)
    value = buf[pos]
    if value & 0x80:
        raise RecordDecodeError(f"{what} {value} is out of range", pos)
    return value, pos + 1


def decode_record_from(buf: Any, pos: int, end: int) -> Any:
    """Decodes the one record that occupies exactly ``buf[pos:end]`` (bytes or memoryview)."""
    start = pos
    if end - pos >= 3 and buf[pos] == FRAME_VERSION:
        # Fast path: every apiKey and version we know fits in one varint byte.
        decode = _DECODERS.get((buf[pos + 1], buf[pos + 2]))
        if decode is not None:
            record, pos = decode(buf, pos + 3, end)
            if pos == end:
                return record
            return _length_mismatch(record, pos, end)
    frame, pos = _read_small_uvarint(buf, pos, end, "frame version")
    if frame != FRAME_VERSION:
        raise RecordDecodeError(f"unknown frame version {frame}", start)
    api_key, pos = _read_small_uvarint(buf, pos, end, "apiKey")
    version, pos = _read_small_uvarint(buf, pos, end, "record version")
    record, pos = _decoder(api_key, version, start + 1)(buf, pos, end)
    if pos != end:
        _length_mismatch(record, pos, end)
    return record


def _length_mismatch(record: Any, pos: int, end: int) -> Any:
    name = type(record).__name__
    if pos > end:
        raise RecordDecodeError(f"{name} is truncated: it needs {pos - end} more bytes", end)
    raise RecordDecodeError(f"{end - pos} trailing bytes after {name}", pos)


def decode_records(blobs: Iterable[bytes]) -> list[Any]:
    """Decodes many records, each exactly one bytes object (say, a batch's records), in order.

    The same checks as :func:`decode_record`, with the per-record call overhead taken out of the
    loop: this is the snapshot loader's hot path.
    """
    out: list[Any] = []
    append = out.append
    decoders = _DECODERS
    for raw in blobs:
        end = len(raw)
        decode = decoders.get((raw[1], raw[2])) if end >= 3 and raw[0] == FRAME_VERSION else None
        if decode is not None:
            record, pos = decode(raw, 3, end)
            if pos == end:
                append(record)
                continue
        append(decode_record_from(raw, 0, end))  # the careful path, which names the problem
    return out


def decode_record(data: bytes | bytearray | memoryview) -> Any:
    """Decodes one framed record that is exactly ``data``."""
    return decode_record_from(data, 0, len(data))


def record_version_of(data: bytes | memoryview) -> tuple[int, int]:
    """(apiKey, version) of an encoded record, read from its frame without decoding the body."""
    end = len(data)
    _, pos = _read_small_uvarint(data, 0, end, "frame version")
    api_key, pos = _read_small_uvarint(data, pos, end, "apiKey")
    version, _ = _read_small_uvarint(data, pos, end, "record version")
    return api_key, version
