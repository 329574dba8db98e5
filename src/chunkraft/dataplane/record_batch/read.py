"""Reading v2 batches: headers, walking a buffer batch by batch, validation and record decoding.

Pure functions, safe from any thread. Errors in the bytes raise :class:`CorruptBatchError` with the
byte position relative to the buffer passed in, or, inside a compressed batch's records, relative
to the decompressed records (the error's path says which).
"""

from __future__ import annotations

from collections.abc import Iterator

from crc32c import crc32c

from chunkraft.dataplane.record_batch.compression import (
    MAX_DECOMPRESSED_BYTES,
    codec_of,
    decompress,
)
from chunkraft.dataplane.record_batch.layout import (
    _BUFFER,
    _CONTROL_KEY,
    _CRC_START,
    _DECOMPRESSED,
    _HEADER,
    _LENGTH,
    _MIN_BATCH_LENGTH,
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    MAGIC,
    BatchHeader,
    Buffer,
    ControlType,
    Record,
    _tuple_new,
)
from chunkraft.dataplane.record_batch.varint import _read_varint
from chunkraft.errors import CorruptBatchError

__all__ = [
    "checked_records",
    "control_type",
    "decode_records",
    "iter_batches",
    "parse_header",
    "records_section",
    "valid_prefix_length",
    "validate_batch",
]


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


def validate_batch(
    view: Buffer, *, deep: bool = False, max_decompressed: int = MAX_DECOMPRESSED_BYTES
) -> BatchHeader:
    """Header of the single batch ``view``, after checking it can be trusted.

    Checks: at least a header, ``batchLength`` matches the buffer exactly, magic 2, CRC-32C
    (over the bytes as stored, compressed or not), a non-negative record count and last offset
    delta, and a codec Kafka has (ids 5-7 raise :class:`UnsupportedCompressionError`). With
    ``deep``, also the records, as :func:`checked_records` (decompressing at most
    ``max_decompressed`` bytes). Raises CorruptBatchError otherwise. Whether the record count
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
        codec_of(header.attributes)
    if deep:
        checked_records(view, max_decompressed=max_decompressed)
    return header


def checked_records(
    view: Buffer, *, max_decompressed: int = MAX_DECOMPRESSED_BYTES
) -> list[Record]:
    """The records of one batch, after checking they are exactly what its header says.

    Exactly ``record_count`` well-formed records fill the (decompressed) records section, with
    offset deltas increasing within ``[0, last_offset_delta]``; together with a record count of
    ``last_offset_delta + 1`` (a producer's batch) that is deltas 0, 1, 2 ... Raises
    CorruptBatchError otherwise, DecompressionLimitError past ``max_decompressed`` bytes. Does
    not check the CRC (:func:`validate_batch` does).
    """
    header = parse_header(view)
    records = decode_records(view, max_decompressed=max_decompressed)
    previous = -1
    for position, record in enumerate(records):
        delta = record.offset - header.base_offset
        if delta <= previous or delta > header.last_offset_delta:
            raise CorruptBatchError(
                f"record {position}'s offset delta {delta} is out of order or outside the "
                f"batch (last offset delta {header.last_offset_delta})",
                _BUFFER,
                BATCH_HEADER_SIZE,
            )
        previous = delta
    return records


def records_section(
    view: Buffer, *, max_decompressed: int = MAX_DECOMPRESSED_BYTES
) -> tuple[bytes, int, str]:
    """``(data, start, name)``: the batch's records begin at ``data[start]`` and fill the rest.

    For an uncompressed batch, the batch's own bytes from byte 61; for a compressed one, the
    decompressed records from 0 (at most ``max_decompressed`` bytes, else
    DecompressionLimitError), named so that errors say where they are. A compressed batch
    with no records and no records section (how Kafka writes an emptied batch) has none.
    """
    data = bytes(view)
    header = parse_header(data)
    if not header.compression:
        return data, BATCH_HEADER_SIZE, _BUFFER
    compressed = memoryview(data)[BATCH_HEADER_SIZE:]
    if header.record_count == 0 and not compressed:
        return b"", 0, _DECOMPRESSED
    return decompress(header.compression, compressed, max_decompressed), 0, _DECOMPRESSED


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


def decode_records(
    view: Buffer, *, max_decompressed: int = MAX_DECOMPRESSED_BYTES
) -> list[Record]:
    """The records of one batch, compressed or not, with absolute offsets and timestamps.

    Does not check the CRC (call :func:`validate_batch` first for untrusted bytes). Timestamps
    of a LogAppendTime batch are its ``maxTimestamp``, as Kafka reports them. A compressed
    batch is decompressed first (at most ``max_decompressed`` bytes). Raises CorruptBatchError
    for malformed records or compressed bytes, UnsupportedCompressionError for codec ids 5-7
    and DecompressionLimitError past the limit.
    """
    header = parse_header(view)
    data, pos, where = records_section(view, max_decompressed=max_decompressed)
    return _decode(data, pos, header, where)


def _decode(data: bytes, pos: int, header: BatchHeader, where: str) -> list[Record]:
    """The ``header.record_count`` records from ``data[pos]``, which they must fill exactly."""
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    append_time = header.max_timestamp if header.is_log_append_time else None
    out: list[Record] = []
    append = out.append
    read = _read_varint
    new = _tuple_new
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
                    f"record length {length} overruns the batch", where, start
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
                raise CorruptBatchError("record fields do not fill its length", where, start)
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
        raise CorruptBatchError(f"malformed record: {e}", where, pos) from None
    if pos != end:
        raise CorruptBatchError(
            f"{end - pos} bytes after the {header.record_count} records", where, pos
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
