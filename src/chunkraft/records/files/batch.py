"""One batch of the on-disk format: its header layout, how to encode it and how to parse it.

A batch is a fixed 51-byte header followed by its records, each as ``uvarint length + bytes``.
All integers are big-endian; docs/file-format.md is the reference for the layout::

    base_offset     int64    offset of the first record
    batch_length    int32    bytes after this field (header rest + records)
    crc             uint32   zlib.crc32 of every byte after this field
    magic           int8     format version, 1
    attributes      int16    bit 0: END_OF_SNAPSHOT (last batch of a snapshot)
    epoch           int32    Raft term / leader epoch of the records
    cluster_id      16 bytes uuid of the cluster the log belongs to
    record_count    int32    records in the batch, offsets base_offset .. base_offset+count-1
    append_time_ms  int64    wall-clock time the batch was built, ms since the epoch (0: unknown)
"""

from __future__ import annotations

import operator
import struct
import uuid
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any

from chunkraft.errors import CorruptBatchError, TornTailError
from chunkraft.records.codec import decode_record, encode_record
from chunkraft.records.varint import (
    MAX_LENGTH_UVARINT_BYTES,
    SMALL_PREFIXES,
    decode_uvarint,
    encode_uvarint,
)

if TYPE_CHECKING:
    from chunkraft.records import Record

__all__ = [
    "END_OF_SNAPSHOT",
    "HEADER_SIZE",
    "MAGIC",
    "MAX_BATCH_LENGTH",
    "MIN_BATCH_LENGTH",
    "Batch",
    "encode_batch",
    "encode_record_batch",
    "parse_batch",
]

MAGIC = 1
END_OF_SNAPSHOT = 0x0001
_KNOWN_ATTRIBUTES = END_OF_SNAPSHOT

# base_offset, batch_length: what a reader needs before it knows how long the batch is.
_OFFSET_AND_LENGTH = struct.Struct(">qi")
# magic, attributes, epoch, cluster_id, record_count, append_time_ms: all covered by the CRC.
_REST = struct.Struct(">bhi16siq")
_CRC_AND_REST = struct.Struct(">Ibhi16siq")  # the crc, then _REST
_CRC_START = _OFFSET_AND_LENGTH.size  # 12
_CRC_END = _CRC_START + 4  # the CRC covers everything from here to the end of the batch

HEADER_SIZE = _OFFSET_AND_LENGTH.size + _CRC_AND_REST.size  # 51
MIN_BATCH_LENGTH = HEADER_SIZE - _CRC_START  # 39: a batch with no records
# Readers trust no length above this: a larger value is garbage, not a batch to allocate for.
MAX_BATCH_LENGTH = 64 * 1024 * 1024

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Batch:
    """A parsed, CRC-checked batch; immutable and safe to share between threads.

    ``records`` holds each record's encoded bytes (the codec's framing), in offset order;
    ``position`` and ``size`` locate the batch in its file, so ``end_position`` is where the next
    batch starts.
    """

    base_offset: int
    epoch: int
    cluster_id: uuid.UUID
    append_time_ms: int
    attributes: int
    position: int
    size: int
    records: tuple[bytes, ...]

    @property
    def count(self) -> int:
        """Number of records in the batch."""
        return len(self.records)

    @property
    def last_offset(self) -> int:
        """Offset of the last record (``base_offset - 1`` for an empty batch)."""
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        """Offset the batch after this one must start at."""
        return self.base_offset + len(self.records)

    @property
    def end_position(self) -> int:
        """Byte position just after this batch in its file."""
        return self.position + self.size

    @property
    def is_end_of_snapshot(self) -> bool:
        """True on the last batch of a snapshot."""
        return bool(self.attributes & END_OF_SNAPSHOT)

    def decode_records(self) -> list[Record]:
        """Every record decoded with :func:`chunkraft.records.decode_record`, in offset order.

        Raises :class:`~chunkraft.errors.RecordDecodeError` for the first record that does not
        decode; its offset is ``base_offset`` plus its index.
        """
        return [decode_record(record) for record in self.records]


def _frame_records(records: Sequence[bytes]) -> bytes:
    """The records of a batch, each behind its uvarint length."""
    if len(records) < 2:  # itemgetter below returns a bare item, not a tuple, for one index
        return b"".join(encode_uvarint(len(record)) + record for record in records)
    parts: list[bytes] = [b""] * (2 * len(records))
    try:
        # Fast path, all in C: every record is under 128 bytes, so its prefix is one table entry.
        parts[::2] = operator.itemgetter(*map(len, records))(SMALL_PREFIXES)
    except IndexError:
        parts[::2] = [encode_uvarint(len(record)) for record in records]
    parts[1::2] = records
    return b"".join(parts)


def encode_batch(
    records: Sequence[bytes],
    *,
    base_offset: int,
    epoch: int,
    cluster_id: uuid.UUID,
    append_time_ms: int = 0,
    end_of_snapshot: bool = False,
    max_batch_length: int = MAX_BATCH_LENGTH,
) -> bytes:
    """One batch holding ``records`` (each already encoded by the codec) at ``base_offset``.

    Raises ValueError for values the header cannot hold and for a batch whose ``batch_length``
    would exceed ``max_batch_length`` (at most :data:`MAX_BATCH_LENGTH`).
    """
    if not 0 <= base_offset <= _INT64_MAX - len(records):
        raise ValueError(f"base offset {base_offset} is out of range")
    if not 0 <= epoch <= _INT32_MAX:
        raise ValueError(f"epoch {epoch} is out of range (0 .. {_INT32_MAX})")
    if not -1 <= append_time_ms <= _INT64_MAX:
        raise ValueError(f"append time {append_time_ms} is out of range")
    if max_batch_length > MAX_BATCH_LENGTH:
        raise ValueError(f"max batch length {max_batch_length} exceeds {MAX_BATCH_LENGTH}")
    if len(records) > max_batch_length:  # each record needs at least its 1-byte prefix
        raise ValueError(f"{len(records)} records cannot fit in one batch")
    body = _frame_records(records)
    batch_length = MIN_BATCH_LENGTH + len(body)
    if batch_length > max_batch_length:
        raise ValueError(
            f"batch of {len(records)} records is {batch_length} bytes long, "
            f"over the limit of {max_batch_length} bytes; split it"
        )
    attributes = END_OF_SNAPSHOT if end_of_snapshot else 0
    rest = _REST.pack(MAGIC, attributes, epoch, cluster_id.bytes, len(records), append_time_ms)
    crc = zlib.crc32(body, zlib.crc32(rest))
    head = _OFFSET_AND_LENGTH.pack(base_offset, batch_length) + crc.to_bytes(4, "big")
    return b"".join((head, rest, body))


def encode_record_batch(
    records: Iterable[Record],
    *,
    base_offset: int,
    epoch: int,
    cluster_id: uuid.UUID,
    append_time_ms: int = 0,
    end_of_snapshot: bool = False,
) -> bytes:
    """Like :func:`encode_batch`, but encodes record objects with the codec first."""
    return encode_batch(
        [encode_record(record) for record in records],
        base_offset=base_offset,
        epoch=epoch,
        cluster_id=cluster_id,
        append_time_ms=append_time_ms,
        end_of_snapshot=end_of_snapshot,
    )


def _split_records(data: bytes, position: int, end: int, count: int) -> list[bytes] | None:
    """The ``count`` length-prefixed records filling ``data[position:end]`` exactly, or None."""
    if not 0 <= count <= end - position:  # every record takes at least its prefix byte
        return None
    records: list[bytes] = []
    append = records.append
    try:
        # The hot loop of every read: one index, one compare, one slice per record. No bounds
        # checks inside: positions only grow, so a record running past ``end`` leaves ``position``
        # beyond it (caught below) or makes the next index fail.
        for _ in repeat(None, count):
            length = data[position]
            start = position + 1
            if length >= 0x80:
                decoded = decode_uvarint(data, position, end, MAX_LENGTH_UVARINT_BYTES)
                if decoded is None:
                    return None
                length, start = decoded
            position = start + length
            append(data[start:position])
    except IndexError:
        return None
    return records if position == end else None


def parse_batch(data: Any, position: int, end: int, path: str) -> Batch:
    """The batch starting at ``data[position]``, where the file's bytes end at ``end``.

    ``data`` is ``bytes`` or an ``mmap`` (anything whose slices are ``bytes`` and which
    ``struct.unpack_from`` accepts). Raises :class:`TornTailError` if the data ends inside the
    batch and :class:`CorruptBatchError` if its CRC fails or its header is impossible.
    """
    remaining = end - position
    if remaining < _OFFSET_AND_LENGTH.size:
        raise TornTailError(
            f"file ends inside a batch header "
            f"(need at least {HEADER_SIZE} bytes, have {remaining})",
            path,
            position,
        )
    base_offset, batch_length = _OFFSET_AND_LENGTH.unpack_from(data, position)
    if base_offset < 0:
        raise CorruptBatchError(f"impossible base offset {base_offset}", path, position)
    if not MIN_BATCH_LENGTH <= batch_length <= MAX_BATCH_LENGTH:
        raise CorruptBatchError(
            f"batch at base offset {base_offset} has an impossible length {batch_length} "
            f"(must be {MIN_BATCH_LENGTH} .. {MAX_BATCH_LENGTH})",
            path,
            position,
        )
    size = _OFFSET_AND_LENGTH.size + batch_length
    if remaining < size:
        raise TornTailError(
            f"file ends inside the batch at base offset {base_offset} "
            f"(need {size} bytes, have {remaining})",
            path,
            position,
        )
    chunk: bytes = data[position : position + size]
    crc, magic, attributes, epoch, cluster_bytes, count, append_time_ms = _CRC_AND_REST.unpack_from(
        chunk, _CRC_START
    )
    # Magic first: a batch of a later format may place its CRC differently.
    if magic != MAGIC:
        raise CorruptBatchError(
            f"batch at base offset {base_offset} has magic {magic}, expected {MAGIC}",
            path,
            position,
        )
    computed = zlib.crc32(memoryview(chunk)[_CRC_END:])
    if computed != crc:
        raise CorruptBatchError(
            f"batch at base offset {base_offset} fails its CRC "
            f"(stored {crc:#010x}, computed {computed:#010x})",
            path,
            position,
        )
    if epoch < 0:
        raise CorruptBatchError(
            f"batch at base offset {base_offset} has an impossible epoch {epoch}", path, position
        )
    if attributes & ~_KNOWN_ATTRIBUTES:
        raise CorruptBatchError(
            f"batch at base offset {base_offset} has unknown attributes {attributes:#06x}",
            path,
            position,
        )
    records = _split_records(chunk, HEADER_SIZE, size, count)
    if records is None:
        raise CorruptBatchError(
            f"batch at base offset {base_offset}: record count {count} does not match "
            f"its {size - HEADER_SIZE} record bytes",
            path,
            position,
        )
    return Batch(
        base_offset=base_offset,
        epoch=epoch,
        cluster_id=uuid.UUID(bytes=cluster_bytes),
        append_time_ms=append_time_ms,
        attributes=attributes,
        position=position,
        size=size,
        records=tuple(records),
    )
