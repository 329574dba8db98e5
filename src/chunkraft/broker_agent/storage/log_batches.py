"""The checks a partition's log makes of the batches it is given, with their Kafka errors.

Pure functions over one batch's bytes, shared by the appends (leader, control, follower) and by
recovery (which reads markers back); safe from any thread.
"""

from __future__ import annotations

import struct

from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    MAX_OFFSET,
    BatchHeader,
    ControlType,
    CorruptBatchError,
    DecompressionLimitError,
    Record,
    UnsupportedCompressionError,
    checked_records,
    decode_records,
    validate_batch,
)
from chunkraft.error_codes import ApiException, Errors

__all__ = [
    "BATCH_LENGTH",
    "MIN_BATCH_LENGTH",
    "MIN_RECORD_BYTES",
    "DescribedBatch",
    "check_batch",
    "check_offsets_fit",
    "check_records",
    "control_marker",
]

BATCH_LENGTH = struct.Struct(">i")  # a batch's batchLength, at byte 8
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - BATCH_OVERHEAD
MIN_RECORD_BYTES = 7
"""The smallest record a v2 batch can hold: a length, attributes, timestamp delta, offset delta,
key length, value length and header count, one byte each at the least."""

DescribedBatch = tuple[int, int, int, int]  # base offset, last offset, max timestamp, size


def control_marker(view: memoryview) -> tuple[bool, int]:
    """``(is_commit, coordinator_epoch)`` of a control batch."""
    records = decode_records(view)
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        raise CorruptBatchError("control batch without a control key", "<record batch>", 61)
    _version, kind = _CONTROL_KEY.unpack_from(records[0].key)
    coordinator_epoch = 0
    value = records[0].value
    if value is not None and len(value) >= _CONTROL_VALUE.size:
        _v, coordinator_epoch = _CONTROL_VALUE.unpack_from(value)
    return kind == ControlType.COMMIT, coordinator_epoch


def check_batch(view: memoryview) -> BatchHeader:
    """``validate_batch`` with its failures as the Kafka errors a produce answers.

    The header-level checks every append makes (a follower's too): length, magic, CRC over the
    bytes as stored (compressed or not), a codec Kafka has. A codec id 5-7 answers
    UNSUPPORTED_COMPRESSION_TYPE, anything else CORRUPT_MESSAGE. A compressed batch's records
    are not decompressed here (:func:`check_records` does, on a leader).
    """
    try:
        return validate_batch(view)
    except UnsupportedCompressionError as e:
        raise ApiException(Errors.UNSUPPORTED_COMPRESSION_TYPE, str(e)) from None
    except CorruptBatchError as e:
        raise ApiException(Errors.CORRUPT_MESSAGE, str(e)) from None


def check_records(view: memoryview, max_decompressed: int) -> list[Record]:
    """The records of a batch :func:`check_batch` passed, after the leader's check of them.

    Kafka's LogValidator for a compressed batch: decompressed (at most ``max_decompressed``
    bytes, else MESSAGE_TOO_LARGE, which a Java producer answers by splitting the batch), the
    records must be well-formed, exactly as many as the header counts, with offset deltas
    increasing within the batch (CORRUPT_MESSAGE otherwise).
    """
    try:
        return checked_records(view, max_decompressed=max_decompressed)
    except DecompressionLimitError as e:
        raise ApiException(Errors.MESSAGE_TOO_LARGE, str(e)) from None
    except CorruptBatchError as e:
        raise ApiException(Errors.CORRUPT_MESSAGE, str(e)) from None


def check_offsets_fit(first: int, last: int) -> None:
    """OFFSET_OUT_OF_RANGE unless offsets ``first .. last`` fit the log: the log end offset
    after them (``last + 1``) must still be an int64, so ``last`` < MAX_OFFSET (2^63 - 1).

    Kafka's offsets are int64 and it has no answer of its own for a log that is full (its
    segments fail with an overflow exception, UNKNOWN_SERVER_ERROR on the wire);
    OFFSET_OUT_OF_RANGE says what happened, is not retriable (a retry cannot fit either), and
    is answered per partition, so the other partitions of the request are unaffected.
    """
    if first < 0 or last >= MAX_OFFSET:
        raise ApiException(
            Errors.OFFSET_OUT_OF_RANGE,
            f"offsets {first}..{last} do not fit the log: its last offset can be at most "
            f"{MAX_OFFSET - 1} (2^63 - 2)",
        )
