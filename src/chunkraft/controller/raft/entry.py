"""The payload of one Raft entry: atomic batches of encoded records, each with a CRC.

pysyncobj carries an entry as bytes inside its own (pickled) command; what those bytes mean is
ours, documented here and in ``docs/controller.md``, and never a pickle::

    entry  := magic "CRE1" | u32 batch_count | batch*
    batch  := u32 body_length | u32 crc32(body) | body
    body   := idempotency_key[16] | i64 expected_offset | i32 epoch | i64 append_time_ms
              | u32 record_count | (uvarint length | record bytes)* | u32 response_length | response

``expected_offset`` is the offset the batch's first record must take, or -1 for "wherever the log
ends" (used only by the leader's barrier). ``response`` is the operation's response as JSON, so
that every node can answer a retried request with the same idempotency key exactly as the first
time. All integers are big-endian.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from chunkraft.errors import ChunkraftError
from chunkraft.records.varint import decode_uvarint, encode_uvarint

__all__ = [
    "ANY_OFFSET",
    "IDEMPOTENCY_KEY_SIZE",
    "MAX_EPOCH",
    "EntryCorruptError",
    "EpochOutOfRangeError",
    "ProposedBatch",
    "decode_entry",
    "encode_entry",
]

MAGIC = b"CRE1"
ANY_OFFSET = -1
IDEMPOTENCY_KEY_SIZE = 16
MAX_EPOCH = 2**31 - 1
"""The highest Raft term chunkraft can use: the term is the KRaft epoch, an int32 in every batch
(and in Kafka's protocol). A term above it can be neither encoded nor led with, so it is refused
wherever it enters (journal at start, Raft messages) and never adopted."""

_COUNT = struct.Struct(">I")
_BATCH_HEAD = struct.Struct(">II")
_BODY_HEAD = struct.Struct(">16sqiqI")


class EntryCorruptError(ChunkraftError):
    """A Raft entry's payload is not what :func:`encode_entry` wrote (a CRC or length fails)."""


class EpochOutOfRangeError(ChunkraftError):
    """A batch's epoch does not fit its int32 field (above :data:`MAX_EPOCH`)."""


@dataclass(frozen=True, slots=True)
class ProposedBatch:
    """One atomic batch: the records of one operation, committed all or none."""

    idempotency_key: bytes
    expected_offset: int
    epoch: int
    append_time_ms: int
    records: tuple[bytes, ...]
    response: bytes = b""

    def __post_init__(self) -> None:
        if len(self.idempotency_key) != IDEMPOTENCY_KEY_SIZE:
            raise ValueError(f"an idempotency key is {IDEMPOTENCY_KEY_SIZE} bytes")


def _encode_batch(batch: ProposedBatch) -> bytes:
    parts = [
        _BODY_HEAD.pack(
            batch.idempotency_key,
            batch.expected_offset,
            batch.epoch,
            batch.append_time_ms,
            len(batch.records),
        )
    ]
    for record in batch.records:
        parts.append(encode_uvarint(len(record)))
        parts.append(record)
    parts.append(_COUNT.pack(len(batch.response)))
    parts.append(batch.response)
    body = b"".join(parts)
    return _BATCH_HEAD.pack(len(body), zlib.crc32(body)) + body


def encode_entry(batches: Sequence[ProposedBatch]) -> bytes:
    """The payload for one Raft entry holding ``batches`` in order.

    Raises :class:`EpochOutOfRangeError` if a batch's epoch does not fit the int32 field (a
    typed error the proposer turns into "not the controller", never a bare ``struct.error``).
    """
    for batch in batches:
        if not -MAX_EPOCH - 1 <= batch.epoch <= MAX_EPOCH:
            raise EpochOutOfRangeError(
                f"epoch {batch.epoch} does not fit the batch's int32 epoch field")
    return b"".join([MAGIC, _COUNT.pack(len(batches)), *map(_encode_batch, batches)])


def _decode_body(body: bytes) -> ProposedBatch:
    key, expected, epoch, append_time, count = _BODY_HEAD.unpack_from(body, 0)
    position = _BODY_HEAD.size
    records = []
    for _ in range(count):
        decoded = decode_uvarint(body, position, len(body))
        if decoded is None:
            raise EntryCorruptError("a record's length is cut short")
        length, position = decoded
        end = position + length
        if end > len(body):
            raise EntryCorruptError("a record runs past the end of its batch")
        records.append(body[position:end])
        position = end
    (response_length,) = _COUNT.unpack_from(body, position)
    position += _COUNT.size
    if position + response_length != len(body):
        raise EntryCorruptError("a batch's response does not end where the batch ends")
    return ProposedBatch(key, expected, epoch, append_time, tuple(records), body[position:])


def decode_entry(payload: bytes) -> list[ProposedBatch]:
    """The batches of one entry; raises :class:`EntryCorruptError` for anything else."""
    try:
        if payload[:4] != MAGIC:
            raise EntryCorruptError("the entry does not start with the chunkraft magic")
        (count,) = _COUNT.unpack_from(payload, 4)
        position = 8
        batches = []
        for index in range(count):
            length, crc = _BATCH_HEAD.unpack_from(payload, position)
            position += _BATCH_HEAD.size
            body = payload[position : position + length]
            if len(body) != length:
                raise EntryCorruptError(f"batch {index} is cut short")
            if zlib.crc32(body) != crc:
                raise EntryCorruptError(f"batch {index} fails its CRC")
            batches.append(_decode_body(body))
            position += length
        if position != len(payload):
            raise EntryCorruptError("bytes follow the entry's last batch")
        return batches
    except (struct.error, ValueError, IndexError) as error:
        raise EntryCorruptError(f"the entry cannot be read: {error}") from error
