"""The ``records`` field of Produce and Fetch messages: raw record-batch bytes, two wire forms.

In Python a ``records`` value is the bytes of one or more Kafka v2 record batches, ``bytes`` or
a ``memoryview`` (a slice of a received body: :mod:`chunkraft.protocol.batch_frame` hands out
views, not copies). On the wire it has two forms:

- in a batch frame (``application/vnd.chunkraft.batches``) the frame's JSON header holds
  ``[offset, length]``, a reference into the payload that follows the header; the bytes travel
  raw. Serializing with a :class:`FrameSink` in the context collects the bytes and writes the
  reference; validating with a :class:`FramePayload` in the context resolves it to a view;
- in plain JSON (kept for curl users and old clients) it is the bytes in standard base64.

A reference outside the payload fails validation with the error type ``records_out_of_range``
(the frame decoder answers it CORRUPT_MESSAGE); anything else malformed is a plain validation
error (INVALID_REQUEST).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeAlias

from pydantic import (
    PlainSerializer,
    PlainValidator,
    SerializationInfo,
    ValidationInfo,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

__all__ = ["OUT_OF_RANGE", "FramePayload", "FrameSink", "RecordBytes", "RecordData"]

RecordData: TypeAlias = "bytes | memoryview"
"""What a ``records`` field holds in Python."""

OUT_OF_RANGE = "records_out_of_range"
"""The validation error type of a reference that points outside the frame's payload."""

_SINK = "chunkraft_frame_sink"
_PAYLOAD = "chunkraft_frame_payload"


@dataclass(slots=True)
class FrameSink:
    """Collects the records of a message being serialized into a frame, in document order.

    ``pieces`` are the collected buffers (not copied); ``size`` their total length, which is
    the next reference's offset. One per serialization; not thread-safe."""

    pieces: list[RecordData] = field(default_factory=list)
    size: int = 0

    def context(self) -> dict[str, Any]:
        """The serializer context that sends ``records`` fields here."""
        return {_SINK: self}

    def add(self, data: RecordData) -> list[int]:
        reference = [self.size, len(data)]
        if data:
            self.pieces.append(data)
            self.size += len(data)
        return reference


@dataclass(frozen=True, slots=True)
class FramePayload:
    """The payload of a received frame: references resolve to views of it (no copies).
    Immutable; thread-safe as long as the buffer under it does not change."""

    view: memoryview

    def context(self) -> dict[str, Any]:
        """The validation context that resolves ``records`` references against this payload."""
        return {_PAYLOAD: self}

    def resolve(self, value: Any) -> memoryview:
        if (not isinstance(value, list) or len(value) != 2
                or not all(type(item) is int for item in value)):
            raise PydanticCustomError(
                "records_reference", "records must be [offset, length] in a batch frame")
        offset, length = value
        if offset < 0 or length < 0 or offset + length > len(self.view):
            raise PydanticCustomError(
                OUT_OF_RANGE,
                "records [{offset}, {length}] is outside the frame's payload of {size} bytes",
                {"offset": offset, "length": length, "size": len(self.view)})
        return self.view[offset:offset + length]


def _validate(value: Any, info: ValidationInfo) -> RecordData:
    context = info.context
    payload = context.get(_PAYLOAD) if isinstance(context, dict) else None
    if isinstance(payload, FramePayload):
        return payload.resolve(value)
    if info.mode == "json":
        if not isinstance(value, str):
            raise PydanticCustomError("records_base64", "records must be a base64 string")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as error:
            raise PydanticCustomError("records_base64",
                                      "records is not base64: {reason}",
                                      {"reason": str(error)}) from None
    if isinstance(value, bytes | memoryview):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    raise PydanticCustomError("records_bytes", "records must be bytes (the record batches)")


def _serialize(value: RecordData, info: SerializationInfo) -> Any:
    context = info.context
    sink = context.get(_SINK) if isinstance(context, dict) else None
    if isinstance(sink, FrameSink):
        return sink.add(value)
    if info.mode_is_json():
        return base64.b64encode(value).decode("ascii")
    return value


RecordBytes = Annotated[
    RecordData,
    PlainValidator(_validate),
    PlainSerializer(_serialize),
    WithJsonSchema({"type": "string", "contentEncoding": "base64",
                    "description": "Kafka v2 record batches: base64 in a JSON body, "
                                   "[offset, length] into the payload in a batch frame"}),
]
"""A ``records`` field: see the module docstring."""
