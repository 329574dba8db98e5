"""The batch frame: a Produce or Fetch message with its record batches as raw bytes.

Media type ``application/vnd.chunkraft.batches`` (``docs/data-plane.md``). Layout, integers
big-endian::

    offset 0      4 bytes   magic b"CKB1" (format and version)
    offset 4      4 bytes   H, the header's length (uint32), 2 <= H <= MAX_HEADER_BYTES
    offset 8      H bytes   the header: the message as UTF-8 JSON, exactly its JSON form
                            except that every ``records`` field is [offset, length]
    offset 8 + H  the rest  the payload: the record batches, referenced by the header

References are relative to the payload's start; bytes no reference covers are ignored. The
frame replaces base64 in JSON, which cost about a fifth of a broker's CPU under produce load:
the batches are neither encoded nor scanned, a received frame hands out ``memoryview`` slices
of the body, and :func:`encode_frame` returns the pieces of a body without joining them (a
server sends them one after another).

Decoding checks the cheap things first and raises :class:`FrameError` with a Kafka error:
a body too short for the prefix, a wrong magic, a header length past the body or over the
cap, or a header that is not a valid message -> INVALID_REQUEST; a reference past the payload
-> CORRUPT_MESSAGE. The body's total size is the caller's limit (the HTTP layer's).
"""

from __future__ import annotations

import struct
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from chunkraft.error_codes import Errors
from chunkraft.protocol.record_bytes import OUT_OF_RANGE, FramePayload, FrameSink, RecordData

__all__ = ["ACCEPT_FRAME", "MAGIC", "MAX_HEADER_BYTES", "MEDIA_TYPE", "PREFIX_BYTES",
           "FrameError", "decode_answer", "decode_frame", "encode_frame", "frame_bytes",
           "is_frame_type"]

MEDIA_TYPE = "application/vnd.chunkraft.batches"
ACCEPT_FRAME = f"{MEDIA_TYPE}, application/json"
"""The Accept header of a client that reads frames and, failing that, JSON."""
MAGIC = b"CKB1"
PREFIX_BYTES = 8
MAX_HEADER_BYTES = 16 * 1024 * 1024
"""The header is JSON the broker must parse while holding the GIL: 16 MiB is far more than
the metadata of any sane request (a partition's entry is about 50 bytes) and bounds that cost."""

_PREFIX = struct.Struct(">4sI")

M = TypeVar("M", bound=BaseModel)


class FrameError(ValueError):
    """A frame that cannot be decoded: ``error`` is the Kafka error to answer with. A
    ValueError, as pydantic's own parse failures are, so readers of answers catch both."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def is_frame_type(content_type: str | None) -> bool:
    """Whether a Content-Type (or one entry of an Accept list) names the batch frame."""
    return (content_type is not None
            and content_type.split(";", 1)[0].strip().lower() == MEDIA_TYPE)


def encode_frame(message: BaseModel) -> list[RecordData]:
    """The frame of ``message`` as pieces to send in order: prefix and header first, then
    each non-empty ``records`` value as it is (not copied)."""
    sink = FrameSink()
    header = type(message).__pydantic_serializer__.to_json(message, context=sink.context())
    if len(header) > MAX_HEADER_BYTES:
        raise FrameError(Errors.INVALID_REQUEST,
                         f"the frame header is {len(header)} bytes, over {MAX_HEADER_BYTES}")
    return [_PREFIX.pack(MAGIC, len(header)) + header, *sink.pieces]


def frame_bytes(message: BaseModel) -> bytes:
    """The frame of ``message`` as one ``bytes`` (copies the records once)."""
    return b"".join(encode_frame(message))


def decode_answer(content: bytes, content_type: str | None, model: type[M]) -> M:
    """An HTTP answer's body as ``model``: a frame if its Content-Type says so, else JSON.
    Raises ValueError (FrameError or pydantic's ValidationError) when it is neither."""
    if is_frame_type(content_type):
        return decode_frame(content, model)
    return model.model_validate_json(content)


def decode_frame(body: bytes | bytearray | memoryview, model: type[M]) -> M:
    """``body`` decoded as a frame of ``model``; ``records`` are views of ``body``."""
    view = memoryview(body)
    if len(view) < PREFIX_BYTES:
        raise FrameError(Errors.INVALID_REQUEST,
                         f"a batch frame starts with {PREFIX_BYTES} bytes, this body has "
                         f"{len(view)}")
    magic, header_length = _PREFIX.unpack_from(view)
    if magic != MAGIC:
        raise FrameError(Errors.INVALID_REQUEST,
                         f"a batch frame starts with {MAGIC!r}, not {bytes(magic)!r}")
    if header_length < 2 or header_length > MAX_HEADER_BYTES:
        raise FrameError(Errors.INVALID_REQUEST,
                         f"the frame header length {header_length} is not within 2 .. "
                         f"{MAX_HEADER_BYTES}")
    end = PREFIX_BYTES + header_length
    if end > len(view):
        raise FrameError(Errors.INVALID_REQUEST,
                         f"the frame header length {header_length} goes past the body's "
                         f"{len(view)} bytes")
    payload = FramePayload(view[end:])
    try:
        return model.model_validate_json(bytes(view[PREFIX_BYTES:end]),
                                         context=payload.context())
    except ValidationError as error:
        problems = error.errors(include_url=False, include_input=False)
        kind = (Errors.CORRUPT_MESSAGE if any(p["type"] == OUT_OF_RANGE for p in problems)
                else Errors.INVALID_REQUEST)
        first = problems[0] if problems else {"loc": (), "msg": str(error)}
        where = ".".join(str(part) for part in first["loc"]) or "header"
        raise FrameError(kind, f"bad batch frame header: {where}: {first['msg']}"
                         + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                         ) from None
