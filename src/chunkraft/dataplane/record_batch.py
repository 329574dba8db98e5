"""Kafka's v2 record batch (magic 2), byte-exact: build, parse, validate, rewrite, filter.

Layout (big-endian), as Kafka's ``DefaultRecordBatch``::

    0  baseOffset            int64   \\ outside the CRC: a leader rewrites them in place
    8  batchLength           int32    | (bytes after this field)
    12 partitionLeaderEpoch  int32   /
    16 magic                 int8    = 2
    17 crc                   uint32  CRC-32C of bytes 21 .. end
    21 attributes            int16   bits 0-2 compression (0 only), 3 timestamp type,
                                     4 transactional, 5 control
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 records count         int32
    61 records

Each record: varint length, int8 attributes, varlong timestampDelta, varint offsetDelta,
varint keyLength (-1: null) + key, varint valueLength (-1: null) + value, varint header count,
then per header varint key length + UTF-8 key, varint value length (-1: null) + value. Varints are
zigzag encoded (protobuf style), as Kafka's ``ByteUtils.writeVarint``.

Every function here is pure (``rewrite_base`` writes only into the buffer it is given) and safe to
call from any thread. Errors in the bytes raise :class:`CorruptBatchError` (from
``chunkraft.errors``) with the byte position relative to the buffer passed in.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, TypeAlias

from crc32c import crc32c

from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.errors import CorruptBatchError

__all__ = [
    "BATCH_HEADER_SIZE",
    "BATCH_OVERHEAD",
    "COMPRESSION_MASK",
    "CONTROL_FLAG",
    "MAGIC",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "BatchHeader",
    "ControlType",
    "CorruptBatchError",
    "ProducerRecord",
    "Record",
    "RecordInput",
    "UnsupportedCompressionError",
    "build_batch",
    "build_control_batch",
    "control_type",
    "decode_records",
    "filter_by_key_hash",
    "iter_batches",
    "parse_header",
    "rewrite_base",
    "valid_prefix_length",
    "validate_batch",
]

MAGIC = 2
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08  # set: LogAppendTime, clear: CreateTime
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20

_HEADER = struct.Struct(">qiibIhiqqqhii")
BATCH_HEADER_SIZE = _HEADER.size  # 61
# baseOffset + batchLength: the bytes not counted by batchLength.
BATCH_OVERHEAD = 12
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - BATCH_OVERHEAD  # 49: a batch with no records
_CRC_START = 21  # the CRC covers attributes .. end
_CRC_RANGE_HEAD = struct.Struct(">hiqqqhii")  # attributes .. records count
_BASE = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_LENGTH = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_CONTROL_VALUE = struct.Struct(">hi")  # version, coordinator epoch
_BUFFER = "<record batch>"

_INT32_MAX = 2**31 - 1
_NO_SEQUENCE = -1

# Zigzag varints below 64 (and above -65) are one byte; records use them for most fields.
_ONE_BYTE = tuple(bytes((z,)) for z in range(0x80))
_NULL_LENGTH = b"\x01"  # zigzag(-1)


class UnsupportedCompressionError(CorruptBatchError):
    """A well-formed batch whose compression codec chunkraft does not implement (only none).

    A subclass of :class:`CorruptBatchError` so a log recovery treats it as unreadable; the produce
    path answers it with ``UNSUPPORTED_COMPRESSION_TYPE`` instead of ``CORRUPT_MESSAGE``.
    """


class ControlType(IntEnum):
    """The type in a control record's key (Kafka's ``ControlRecordType``)."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record with its absolute offset and timestamp; immutable, thread-safe."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class ProducerRecord(NamedTuple):
    """A record to put in a batch; a plain ``(key, value, timestamp_ms)`` tuple works as well."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


RecordInput: TypeAlias = "ProducerRecord | tuple[bytes | None, bytes | None, int]"


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The 61-byte header of a v2 batch, as parsed (no CRC check); immutable, thread-safe.

    ``batch_length`` counts the bytes after its own field, so the batch occupies
    ``size_in_bytes = batch_length + 12`` bytes.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> int:
        """The compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        """Whether timestamps are the broker's append time (``maxTimestamp``) for every record."""
        return bool(self.attributes & TIMESTAMP_TYPE_FLAG)

    @property
    def is_transactional(self) -> bool:
        """Whether the batch belongs to a transaction of ``producer_id``."""
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        """Whether the batch holds a control record (a COMMIT or ABORT marker)."""
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_producer_id(self) -> bool:
        """Whether an idempotent or transactional producer wrote the batch."""
        return self.producer_id >= 0

    @property
    def last_offset(self) -> int:
        """Offset of the last record (inclusive), kept even when records were filtered out."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset just after the batch."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        """Bytes the whole batch occupies."""
        return self.batch_length + BATCH_OVERHEAD

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (-1 without a base sequence), wrapping past int32 max."""
        if self.base_sequence == _NO_SEQUENCE:
            return _NO_SEQUENCE
        return _increment_sequence(self.base_sequence, self.last_offset_delta)


def _increment_sequence(sequence: int, increment: int) -> int:
    # Kafka's DefaultRecordBatch.incrementSequence: sequences wrap to 0 after int32 max.
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


# --------------------------------------------------------------------------- varints


def _varint(n: int) -> bytes:
    """Zigzag varint of a signed 64-bit value (Kafka's writeVarint / writeVarlong)."""
    z = (n << 1) ^ (n >> 63)
    if z < 0x80:
        return _ONE_BYTE[z]
    if z < 0x4000:
        return bytes(((z & 0x7F) | 0x80, z >> 7))
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the zigzag varint at ``pos``; IndexError past the end."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    z = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = data[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


# --------------------------------------------------------------------------- building


def _encode_record(
    parts: list[bytes],
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
) -> None:
    """Append one record's pieces to ``parts`` (length prefix first)."""
    head = b"\x00" + _varint(timestamp_delta) + _varint(offset_delta)
    if key is None:
        head += _NULL_LENGTH
        size = len(head)
    else:
        head += _varint(len(key))
        size = len(head) + len(key)
    if value is None:
        value_head = _NULL_LENGTH
        size += 1
    else:
        value_head = _varint(len(value))
        size += len(value_head) + len(value)
    if headers:
        header_parts = [_varint(len(headers))]
        for header_key, header_value in headers:
            encoded_key = header_key.encode()
            header_parts.append(_varint(len(encoded_key)))
            header_parts.append(encoded_key)
            if header_value is None:
                header_parts.append(_NULL_LENGTH)
            else:
                header_parts.append(_varint(len(header_value)))
                header_parts.append(bytes(header_value))
        tail = b"".join(header_parts)
    else:
        tail = b"\x00"
    size += len(tail)
    parts.append(_varint(size))
    parts.append(head)
    if key is not None:
        parts.append(key)
    parts.append(value_head)
    if value is not None:
        parts.append(value)
    parts.append(tail)


def _assemble(
    body: bytes,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
) -> bytes:
    """Header + records with the CRC computed over attributes .. end."""
    crc_part = (
        _CRC_RANGE_HEAD.pack(
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        )
        + body
    )
    crc = crc32c(crc_part)
    batch_length = BATCH_HEADER_SIZE - BATCH_OVERHEAD + len(body)
    return (
        struct.pack(">qiibI", base_offset, batch_length, partition_leader_epoch, MAGIC, crc)
        + crc_part
    )


def build_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    partition_leader_epoch: int = -1,
    log_append_time: bool = False,
) -> bytes:
    """One uncompressed v2 batch holding ``records`` at offsets ``base_offset`` + 0, 1, 2 ...

    Each record is a :class:`ProducerRecord` or a ``(key, value, timestamp_ms)`` tuple. As Kafka's
    ``MemoryRecordsBuilder``, the base timestamp is the first record's and ``maxTimestamp`` the
    largest. Raises ValueError for an empty ``records`` (Kafka never builds an empty batch) or a
    transactional batch without a producer id.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    if transactional and producer_id < 0:
        raise ValueError("a transactional batch needs a producer id")
    base_timestamp = records[0][2]
    max_timestamp = base_timestamp
    parts: list[bytes] = []
    for delta, record in enumerate(records):
        timestamp = record[2]
        if timestamp > max_timestamp:
            max_timestamp = timestamp
        headers = record[3] if len(record) > 3 else ()
        _encode_record(parts, delta, timestamp - base_timestamp, record[0], record[1], headers)
    attributes = (TRANSACTIONAL_FLAG if transactional else 0) | (
        TIMESTAMP_TYPE_FLAG if log_append_time else 0
    )
    return _assemble(
        b"".join(parts),
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=len(records) - 1,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=len(records),
    )


def build_control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp_ms: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transactional control batch with one COMMIT (``commit``) or ABORT marker record.

    Key: version int16 0 + type int16; value: version int16 0 + coordinator epoch int32 (Kafka's
    ``EndTransactionMarker``). Base sequence -1, as Kafka writes markers.
    """
    parts: list[bytes] = []
    key = _CONTROL_KEY.pack(0, ControlType.COMMIT if commit else ControlType.ABORT)
    _encode_record(parts, 0, 0, key, _CONTROL_VALUE.pack(0, coordinator_epoch), ())
    return _assemble(
        b"".join(parts),
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=TRANSACTIONAL_FLAG | CONTROL_FLAG,
        last_offset_delta=0,
        base_timestamp=timestamp_ms,
        max_timestamp=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=_NO_SEQUENCE,
        record_count=1,
    )


# --------------------------------------------------------------------------- parsing

Buffer: TypeAlias = "bytes | bytearray | memoryview"


def parse_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """The header of the batch starting at ``pos``; checks neither CRC nor magic.

    Raises CorruptBatchError when fewer than 61 bytes remain.
    """
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptBatchError("batch header cut short", _BUFFER, pos)
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def iter_batches(buf: Buffer) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Each batch of ``buf`` in order, as (header, a memoryview of the whole batch).

    Stops quietly at a truncated tail (a header or batch cut short: an interrupted write); use
    :func:`valid_prefix_length` or the header sizes to know where it stopped. Raises
    CorruptBatchError for a batch length below the 49-byte minimum, after which nothing can be
    located. CRCs are not checked (:func:`validate_batch` does).
    """
    view = memoryview(buf)
    end = len(view)
    pos = 0
    unpack_from = _HEADER.unpack_from
    while end - pos >= BATCH_HEADER_SIZE:
        header = BatchHeader(*unpack_from(view, pos))
        if header.batch_length < _MIN_BATCH_LENGTH:
            raise CorruptBatchError(
                f"batch length {header.batch_length} below the minimum {_MIN_BATCH_LENGTH}",
                _BUFFER,
                pos,
            )
        next_pos = pos + header.batch_length + BATCH_OVERHEAD
        if next_pos > end:
            return
        yield header, view[pos:next_pos]
        pos = next_pos


def validate_batch(view: Buffer, *, deep: bool = False) -> BatchHeader:
    """Header of the single batch ``view``, after checking it can be trusted.

    Checks: at least a header, ``batchLength`` matches the buffer exactly, magic 2, CRC-32C,
    a non-negative record count and last offset delta; then compression none (else
    :class:`UnsupportedCompressionError`). With ``deep``, also walks the records: exactly
    ``record_count`` well-formed records filling the batch, offset deltas within
    ``[0, last_offset_delta]``. Raises CorruptBatchError otherwise.
    """
    if len(view) < BATCH_HEADER_SIZE:
        raise CorruptBatchError(f"{len(view)} bytes cannot hold a batch header", _BUFFER, 0)
    header = BatchHeader(*_HEADER.unpack_from(view, 0))
    if header.size_in_bytes != len(view):
        raise CorruptBatchError(
            f"batch length {header.batch_length} does not match the {len(view)} bytes given",
            _BUFFER,
            8,
        )
    if header.magic != MAGIC:
        raise CorruptBatchError(f"magic {header.magic}, expected {MAGIC}", _BUFFER, 16)
    actual = crc32c(memoryview(view)[_CRC_START:])
    if actual != header.crc:
        raise CorruptBatchError(
            f"CRC-32C {actual:#010x} does not match the stored {header.crc:#010x}", _BUFFER, 17
        )
    if header.record_count < 0 or header.last_offset_delta < 0:
        raise CorruptBatchError(
            f"impossible record count {header.record_count} or last offset delta "
            f"{header.last_offset_delta}",
            _BUFFER,
            23,
        )
    if header.compression:
        raise UnsupportedCompressionError(
            f"compression codec {header.compression} is not supported", _BUFFER, 21
        )
    if deep:
        spans = _record_spans(bytes(view), header)
        for _start, _end, offset_delta in spans:
            if offset_delta < 0 or offset_delta > header.last_offset_delta:
                raise CorruptBatchError(
                    f"offset delta {offset_delta} outside the batch", _BUFFER, _start
                )
    return header


def _record_spans(data: bytes, header: BatchHeader) -> list[tuple[int, int, int]]:
    """(start, end, offset delta) of each record (start includes the length prefix)."""
    spans: list[tuple[int, int, int]] = []
    pos = BATCH_HEADER_SIZE
    end = len(data)
    try:
        for _ in range(header.record_count):
            start = pos
            length, pos = _read_varint(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptBatchError(
                    f"record length {length} overruns the batch", _BUFFER, start
                )
            _ts_delta, p = _read_varint(data, pos + 1)
            offset_delta, p = _read_varint(data, p)
            spans.append((start, record_end, offset_delta))
            pos = record_end
    except (IndexError, ValueError) as e:
        raise CorruptBatchError(f"malformed record: {e}", _BUFFER, pos) from None
    if pos != end:
        raise CorruptBatchError(
            f"{end - pos} bytes after the {header.record_count} records", _BUFFER, pos
        )
    return spans


def decode_records(view: Buffer) -> list[Record]:
    """The records of one uncompressed batch, with absolute offsets and timestamps.

    Does not check the CRC (call :func:`validate_batch` first for untrusted bytes). Timestamps
    of a LogAppendTime batch are its ``maxTimestamp``, as Kafka reports them. Raises
    CorruptBatchError for malformed records and UnsupportedCompressionError for compressed ones.
    """
    data = bytes(view)
    header = parse_header(data)
    if header.compression:
        raise UnsupportedCompressionError(
            f"compression codec {header.compression} is not supported", _BUFFER, 21
        )
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    append_time = header.max_timestamp if header.is_log_append_time else None
    out: list[Record] = []
    append = out.append
    read = _read_varint
    pos = BATCH_HEADER_SIZE
    end = len(data)
    try:
        for _ in range(header.record_count):
            start = pos
            length, pos = read(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptBatchError(
                    f"record length {length} overruns the batch", _BUFFER, start
                )
            timestamp_delta, pos = read(data, pos + 1)  # +1: the attributes byte, unused
            offset_delta, pos = read(data, pos)
            key_length, pos = read(data, pos)
            if key_length < 0:
                key = None
            else:
                key = data[pos : pos + key_length]
                pos += key_length
            value_length, pos = read(data, pos)
            if value_length < 0:
                value = None
            else:
                value = data[pos : pos + value_length]
                pos += value_length
            header_count, pos = read(data, pos)
            headers: tuple[tuple[str, bytes | None], ...] = ()
            if header_count:
                decoded: list[tuple[str, bytes | None]] = []
                for _h in range(header_count):
                    name_length, pos = read(data, pos)
                    if name_length < 0:
                        raise CorruptBatchError("null header key", _BUFFER, pos)
                    name = data[pos : pos + name_length].decode()
                    pos += name_length
                    header_value_length, pos = read(data, pos)
                    if header_value_length < 0:
                        header_value = None
                    else:
                        header_value = data[pos : pos + header_value_length]
                        pos += header_value_length
                    decoded.append((name, header_value))
                headers = tuple(decoded)
            if pos != record_end:
                raise CorruptBatchError("record fields do not fill its length", _BUFFER, start)
            append(
                Record(
                    base_offset + offset_delta,
                    append_time if append_time is not None else base_timestamp + timestamp_delta,
                    key,
                    value,
                    headers,
                )
            )
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise CorruptBatchError(f"malformed record: {e}", _BUFFER, pos) from None
    return out


def control_type(view: Buffer) -> ControlType | None:
    """ABORT or COMMIT for a control batch, None for a data batch.

    Raises CorruptBatchError when the control record's key is missing or of an unknown type.
    """
    header = parse_header(view)
    if not header.is_control:
        return None
    records = decode_records(view)
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        raise CorruptBatchError("control batch without a control key", _BUFFER, BATCH_HEADER_SIZE)
    _version, kind = _CONTROL_KEY.unpack_from(records[0].key)
    try:
        return ControlType(kind)
    except ValueError:
        raise CorruptBatchError(
            f"unknown control type {kind}", _BUFFER, BATCH_HEADER_SIZE
        ) from None


# --------------------------------------------------------------------------- rewriting


def rewrite_base(
    view: bytearray | memoryview, base_offset: int, partition_leader_epoch: int
) -> None:
    """Set the batch's base offset and partition leader epoch in place.

    Both fields are outside the CRC, so the batch stays valid; ``view`` must be writable and
    start at the batch.
    """
    _BASE.pack_into(view, 0, base_offset)
    _EPOCH.pack_into(view, 12, partition_leader_epoch)


def filter_by_key_hash(view: Buffer, lo: int, hi: int) -> bytes | None:
    """The batch with only the records whose positive murmur2 key hash is in ``[lo, hi]``.

    A null key hashes as 0. Kept records keep their offsets and timestamps (their bytes are
    copied unchanged, base offset, base and max timestamp and ``lastOffsetDelta`` stay, so the
    batch still ends at the same offset), the record count and CRC are recomputed. A control
    batch is returned whole. Returns None when no record is left, the original bytes when all
    are kept. Does not check the CRC of the input.
    """
    data = bytes(view)
    header = parse_header(data)
    if header.is_control:
        return data
    if header.compression:
        raise UnsupportedCompressionError(
            f"compression codec {header.compression} is not supported", _BUFFER, 21
        )
    kept: list[bytes] = []
    read = _read_varint
    pos = BATCH_HEADER_SIZE
    end = len(data)
    try:
        for _ in range(header.record_count):
            start = pos
            length, pos = read(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptBatchError(
                    f"record length {length} overruns the batch", _BUFFER, start
                )
            _ts, p = read(data, pos + 1)
            _od, p = read(data, p)
            key_length, p = read(data, p)
            key_hash = 0 if key_length < 0 else positive_hash(data[p : p + key_length])
            if lo <= key_hash <= hi:
                kept.append(data[start:record_end])
            pos = record_end
    except (IndexError, ValueError) as e:
        raise CorruptBatchError(f"malformed record: {e}", _BUFFER, pos) from None
    if not kept:
        return None
    if len(kept) == header.record_count:
        return data
    return _assemble(
        b"".join(kept),
        base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        attributes=header.attributes,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        record_count=len(kept),
    )


def valid_prefix_length(buf: Buffer) -> int:
    """Bytes at the start of ``buf`` made of whole batches that pass :func:`validate_batch`.

    What a log recovery keeps: the first torn, corrupt or unsupported batch and everything after
    it are beyond this length.
    """
    view = memoryview(buf)
    end = len(view)
    pos = 0
    while end - pos >= BATCH_HEADER_SIZE:
        (batch_length,) = _LENGTH.unpack_from(view, pos + 8)
        next_pos = pos + batch_length + BATCH_OVERHEAD
        if batch_length < _MIN_BATCH_LENGTH or next_pos > end:
            break
        try:
            validate_batch(view[pos:next_pos])
        except CorruptBatchError:
            break
        pos = next_pos
    return pos
