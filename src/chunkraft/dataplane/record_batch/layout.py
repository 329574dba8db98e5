"""The v2 batch's fixed layout: its constants, struct layouts and the types its bytes decode to.

Layout (big-endian), as Kafka's ``DefaultRecordBatch``::

    0  baseOffset            int64   \\ outside the CRC: a leader rewrites them in place
    8  batchLength           int32    | (bytes after this field)
    12 partitionLeaderEpoch  int32   /
    16 magic                 int8    = 2
    17 crc                   uint32  CRC-32C of bytes 21 .. end
    21 attributes            int16   bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4,
                                     4 zstd), 3 timestamp type, 4 transactional, 5 control
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 records count         int32
    61 records

A compressed batch keeps this header as is and compresses the records section (byte 61 on) as
one stream (see the ``compression`` module); offset deltas, counts and the CRC are as in an
uncompressed one.

Each record: varint length, int8 attributes, varlong timestampDelta, varint offsetDelta,
varint keyLength (-1: null) + key, varint valueLength (-1: null) + value, varint header count,
then per header varint key length + UTF-8 key, varint value length (-1: null) + value. Varints are
zigzag encoded (protobuf style), as Kafka's ``ByteUtils.writeVarint``.

The underscored names are private to the ``record_batch`` package: its building, reading and
rewriting modules share them so that the byte layout is written down once, here.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple, TypeAlias

from chunkraft.errors import CorruptBatchError

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
_DECOMPRESSED = "<decompressed records>"  # where errors inside a compressed batch's records are

_INT32_MAX = 2**31 - 1
_NO_SEQUENCE = -1

# Builds a named tuple from a tuple without the generated __new__'s argument handling.
_tuple_new = tuple.__new__


Buffer: TypeAlias = "bytes | bytearray | memoryview"


class UnsupportedCompressionError(CorruptBatchError):
    """A batch whose compression codec id (5-7) names no codec Kafka has.

    A subclass of :class:`CorruptBatchError` so a log recovery treats it as unreadable; the produce
    path answers it with ``UNSUPPORTED_COMPRESSION_TYPE`` instead of ``CORRUPT_MESSAGE``.
    """


class DecompressionLimitError(CorruptBatchError):
    """A compressed batch whose records decompress to more bytes than the reader allows.

    A subclass of :class:`CorruptBatchError` (the batch cannot be read within the limit); the
    produce path answers it with ``MESSAGE_TOO_LARGE``, which a Java producer answers by
    splitting the batch.
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

