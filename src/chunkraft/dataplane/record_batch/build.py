"""Building v2 batches: data batches from records (compressed or not) and transaction marker
(control) batches.

Pure functions, safe from any thread; :func:`_assemble` is shared with the rewriting module, which
rebuilds a batch around records it kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from crc32c import crc32c

from chunkraft.dataplane.record_batch.compression import compress
from chunkraft.dataplane.record_batch.layout import (
    _CONTROL_KEY,
    _CONTROL_VALUE,
    _CRC_RANGE_HEAD,
    _NO_SEQUENCE,
    _PREFIX,
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    MAGIC,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    ControlType,
    RecordInput,
)
from chunkraft.dataplane.record_batch.varint import _NULL_LENGTH, _varint

__all__ = ["build_batch", "build_control_batch"]


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
    """Header + records with the CRC computed over attributes .. end.

    ``body`` is the records uncompressed; they are compressed here with the codec of
    ``attributes`` (bits 0-2), so the CRC covers the compressed bytes, as Kafka's does.
    """
    if attributes & COMPRESSION_MASK:
        body = compress(attributes & COMPRESSION_MASK, body)
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
    compression: int = 0,
) -> bytes:
    """One v2 batch holding ``records`` at offsets ``base_offset`` + 0, 1, 2 ...

    Each record is a :class:`ProducerRecord` or a ``(key, value, timestamp_ms)`` tuple. As Kafka's
    ``MemoryRecordsBuilder``, the base timestamp is the first record's and ``maxTimestamp`` the
    largest. ``compression`` is the codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd) the records
    section is compressed with. Raises ValueError for an empty ``records`` (Kafka never builds
    an empty batch), a transactional batch without a producer id or a codec id outside 0-4.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    if transactional and producer_id < 0:
        raise ValueError("a transactional batch needs a producer id")
    if not 0 <= compression <= 4:
        raise ValueError(f"compression codec {compression} does not exist (Kafka's are 0-4)")
    base_timestamp = records[0][2]
    parts: list[bytes] = []
    max_timestamp = _encode_records(records, base_timestamp, parts)
    attributes = (
        (TRANSACTIONAL_FLAG if transactional else 0)
        | (TIMESTAMP_TYPE_FLAG if log_append_time else 0)
        | compression
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
