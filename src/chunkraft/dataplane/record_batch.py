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
    "MAX_OFFSET",
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
    "without_records",
]

MAGIC = 2
MAX_OFFSET = 2**63 - 1
"""The largest offset a batch's int64 ``baseOffset`` can carry. A log's end offset (the last
offset + 1) is an int64 too, so the last offset a log may store is ``MAX_OFFSET - 1``."""
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
_PREFIX = struct.Struct(">qiibI")  # base offset .. crc
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
# Builds a named tuple from a tuple without the generated __new__'s argument handling.
_tuple_new = tuple.__new__


class UnsupportedCompressionError(CorruptBatchError):
    """A well-formed batch whose compression codec chunkraft does not implement (only none).

    A subclass of :class:`CorruptBatchError` so a log recovery treats it as unreadable; the produce
    path answers it with ``UNSUPPORTED_COMPRESSION_TYPE`` instead of ``CORRUPT_MESSAGE``.
    """


class ControlType(IntEnum):
    """The type in a control record's key (Kafka's ``ControlRecordType``)."""

    ABORT = 0
    COMMIT = 1


class Record(NamedTuple):
    """One decoded record with its absolute offset and timestamp; immutable, thread-safe.

    A named tuple rather than a dataclass: decoding builds one per record, and a tuple is built
    in a fraction of a frozen dataclass's time.
    """

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


class BatchHeader(NamedTuple):
    """The 61-byte header of a v2 batch, as parsed (no CRC check); immutable, thread-safe.

    ``batch_length`` counts the bytes after its own field, so the batch occupies
    ``size_in_bytes = batch_length + 12`` bytes. A named tuple so that a parse is one
    ``struct.unpack_from`` wrapped without copying (scans parse a header per batch).
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
        return ((z & 0x7F) | 0x80 | (z >> 7) << 8).to_bytes(2, "little")
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


def _encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """A record's header count and headers."""
    parts = [_varint(len(headers))]
    for header_key, header_value in headers:
        encoded_key = header_key.encode()
        parts.append(_varint(len(encoded_key)))
        parts.append(encoded_key)
        if header_value is None:
            parts.append(_NULL_LENGTH)
        else:
            parts.append(_varint(len(header_value)))
            parts.append(bytes(header_value))
    return b"".join(parts)


def _encode_records(records: Sequence[RecordInput], base_timestamp: int, parts: list[bytes]) -> int:
    """Append every record's pieces to ``parts`` (offset deltas 0, 1, ...); the max timestamp.

    The common case (one-byte deltas and key length, no headers) is built with one ``bytes()``
    call per record head; per-record overhead is most of a batch's build time.
    """
    append = parts.append
    varint = _varint
    max_timestamp = base_timestamp
    for delta, record in enumerate(records):
        key = record[0]
        value = record[1]
        timestamp = record[2]
        if timestamp > max_timestamp:
            max_timestamp = timestamp
        td = timestamp - base_timestamp
        tz = (td << 1) ^ (td >> 63)
        oz = delta << 1
        if key is None:
            key_length = 0
            kz = 1
        else:
            key_length = len(key)
            kz = key_length << 1
        if tz < 0x80 and oz < 0x80 and kz < 0x80:
            head = bytes((0, tz, oz, kz))
        else:
            head = b"".join(
                (
                    b"\x00",
                    varint(td),
                    varint(delta),
                    _NULL_LENGTH if key is None else varint(key_length),
                )
            )
        if value is None:
            value_head = _NULL_LENGTH
            value_length = 0
        else:
            value_length = len(value)
            value_head = varint(value_length)
        headers = record[3] if len(record) > 3 else ()
        tail = _encode_headers(headers) if headers else b"\x00"
        append(varint(len(head) + key_length + len(value_head) + value_length + len(tail)))
        append(head)
        if key is not None:
            append(key)
        append(value_head)
        if value is not None:
            append(value)
        append(tail)
    return max_timestamp


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
    head = _CRC_RANGE_HEAD.pack(
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    crc = crc32c(body, crc32c(head))  # incremental: no copy of the records just for the CRC
    batch_length = BATCH_HEADER_SIZE - BATCH_OVERHEAD + len(body)
    prefix = _PREFIX.pack(base_offset, batch_length, partition_leader_epoch, MAGIC, crc)
    return b"".join((prefix, head, body))


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
    parts: list[bytes] = []
    max_timestamp = _encode_records(records, base_timestamp, parts)
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
    _encode_records(
        [(key, _CONTROL_VALUE.pack(0, coordinator_epoch), timestamp_ms)], timestamp_ms, parts
    )
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
    return _tuple_new(BatchHeader, _HEADER.unpack_from(buf, pos))


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
    new = _tuple_new
    while end - pos >= BATCH_HEADER_SIZE:
        header: BatchHeader = new(BatchHeader, unpack_from(view, pos))
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
    :class:`UnsupportedCompressionError`). With ``deep``, also decodes the records: exactly
    ``record_count`` well-formed records filling the batch, offset deltas increasing within
    ``[0, last_offset_delta]``. Raises CorruptBatchError otherwise. Whether the record count
    matches the offset range (required of a producer's batch, not of a filtered one) is the
    caller's check.
    """
    if len(view) < BATCH_HEADER_SIZE:
        raise CorruptBatchError(f"{len(view)} bytes cannot hold a batch header", _BUFFER, 0)
    header: BatchHeader = _tuple_new(BatchHeader, _HEADER.unpack_from(view, 0))
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
        previous = -1
        for record in decode_records(view):
            delta = record.offset - header.base_offset
            if delta <= previous or delta > header.last_offset_delta:
                raise CorruptBatchError(
                    f"offset delta {delta} out of order or outside the batch",
                    _BUFFER,
                    BATCH_HEADER_SIZE,
                )
            previous = delta
    return header


def _read_headers(data: bytes, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """The headers of a record (count varint at ``pos``) and the position after them."""
    read = _read_varint
    count, pos = read(data, pos)
    if count < 0:
        raise ValueError(f"header count {count}")
    decoded: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        name_length, pos = read(data, pos)
        if name_length < 0:
            raise ValueError("null header key")
        name = data[pos : pos + name_length].decode()
        pos += name_length
        value_length, pos = read(data, pos)
        if value_length < 0:
            value = None
        else:
            value = data[pos : pos + value_length]
            pos += value_length
        decoded.append((name, value))
    return tuple(decoded), pos


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
    new = _tuple_new
    pos = BATCH_HEADER_SIZE
    end = len(data)
    # The one-byte varint case is inlined for the small fields: a call per field would cost
    # more than the rest of the record's decoding.
    try:
        for _ in range(header.record_count):
            start = pos
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    z = (b & 0x7F) | c << 7
                    length = (z >> 1) ^ -(z & 1)
                    pos += 2
                else:
                    length, pos = read(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptBatchError(
                    f"record length {length} overruns the batch", _BUFFER, start
                )
            pos += 1  # the attributes byte, unused
            b = data[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                timestamp_delta, pos = read(data, pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = read(data, pos)
            b = data[pos]
            if b == 1:  # -1: null
                key = None
                pos += 1
            else:
                if b < 0x80 and not b & 1:
                    key_length = b >> 1
                    pos += 1
                else:
                    key_length, pos = read(data, pos)
                    if key_length < 0:
                        raise ValueError(f"key length {key_length}")
                key = data[pos : pos + key_length]
                pos += key_length
            b = data[pos]
            if b == 1:
                value = None
                pos += 1
            else:
                if b < 0x80 and not b & 1:
                    value_length = b >> 1
                    pos += 1
                elif b & 0x81 == 0x80 and data[pos + 1] < 0x80:
                    value_length = ((b & 0x7F) | data[pos + 1] << 7) >> 1
                    pos += 2
                else:
                    value_length, pos = read(data, pos)
                    if value_length < 0:
                        raise ValueError(f"value length {value_length}")
                value = data[pos : pos + value_length]
                pos += value_length
            if data[pos] == 0:
                headers: tuple[tuple[str, bytes | None], ...] = ()
                pos += 1
            else:
                headers, pos = _read_headers(data, pos)
            if pos != record_end:
                raise CorruptBatchError("record fields do not fill its length", _BUFFER, start)
            append(
                new(
                    Record,
                    (
                        base_offset + offset_delta,
                        append_time
                        if append_time is not None
                        else base_timestamp + timestamp_delta,
                        key,
                        value,
                        headers,
                    ),
                )
            )
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise CorruptBatchError(f"malformed record: {e}", _BUFFER, pos) from None
    if pos != end:
        raise CorruptBatchError(
            f"{end - pos} bytes after the {header.record_count} records", _BUFFER, pos
        )
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
    start at the batch. A base offset outside ``0 .. MAX_OFFSET`` raises CorruptBatchError
    (it cannot be written; callers check their offsets first, this keeps a struct.error from
    ever reaching a client).
    """
    if not 0 <= base_offset <= MAX_OFFSET:
        raise CorruptBatchError(f"base offset {base_offset} is outside 0..{MAX_OFFSET}",
                                _BUFFER, 0)
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
            if key_length == -1:
                key_hash = 0
            elif key_length < 0 or p + key_length > record_end:
                raise ValueError(f"key length {key_length}")
            else:
                key_hash = positive_hash(data[p : p + key_length])
            if lo <= key_hash <= hi:
                kept.append(data[start:record_end])
            pos = record_end
    except (IndexError, ValueError) as e:
        raise CorruptBatchError(f"malformed record: {e}", _BUFFER, pos) from None
    if pos != end:
        raise CorruptBatchError(
            f"{end - pos} bytes after the {header.record_count} records", _BUFFER, pos
        )
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


def without_records(view: Buffer) -> bytes:
    """The batch's header with no records: record count 0 and a new CRC, the same base offset
    and ``lastOffsetDelta``, so the offsets it spans stay accounted for.

    A key-range fetch answers a batch none of whose records matched this way, as Kafka keeps an
    emptied batch after compaction: a reader moves past ``last_offset`` instead of fetching the
    same offsets again."""
    header = parse_header(view)
    return _assemble(
        b"",
        base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        attributes=header.attributes,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        record_count=0,
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
