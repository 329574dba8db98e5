"""The log's checks of one batch (``storage.log_batches``), with the Kafka errors they answer."""

import struct

import pytest
from crc32c import crc32c

from chunkraft.broker_agent.storage.log_batches import (
    check_batch,
    check_offsets_fit,
    check_records,
    control_marker,
)
from chunkraft.dataplane.record_batch import MAX_OFFSET, build_batch, build_control_batch
from chunkraft.error_codes import ApiException, Errors


def test_control_marker_reads_commit_and_coordinator_epoch() -> None:
    commit = build_control_batch(
        True, producer_id=4, producer_epoch=0, coordinator_epoch=9, timestamp_ms=1
    )
    abort = build_control_batch(False, producer_id=4, producer_epoch=0, timestamp_ms=1)
    assert control_marker(memoryview(commit)) == (True, 9)
    assert control_marker(memoryview(abort)) == (False, 0)


def test_check_batch_answers_corrupt_message() -> None:
    data = bytearray(build_batch([(b"k", b"v", 1)]))
    assert check_batch(memoryview(data)).record_count == 1
    data[-1] ^= 0x01  # the CRC no longer matches
    with pytest.raises(ApiException) as info:
        check_batch(memoryview(data))
    assert info.value.error is Errors.CORRUPT_MESSAGE
    for codec in (1, 2, 3, 4):  # a compressed batch's CRC is over its compressed bytes
        packed = bytearray(build_batch([(b"k", b"v", 1)], compression=codec))
        assert check_batch(memoryview(packed)).compression == codec
        packed[-1] ^= 0x01
        with pytest.raises(ApiException) as info:
            check_batch(memoryview(packed))
        assert info.value.error is Errors.CORRUPT_MESSAGE


def _marked(codec: int, data: bytes) -> memoryview:
    out = bytearray(data)
    struct.pack_into(">h", out, 21, codec)  # CRC-valid once recomputed below
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return memoryview(out)


def test_check_batch_answers_unsupported_compression_type_for_codecs_kafka_lacks() -> None:
    for codec in (5, 6, 7):
        with pytest.raises(ApiException) as info:
            check_batch(_marked(codec, build_batch([(b"k", b"v", 1)])))
        assert info.value.error is Errors.UNSUPPORTED_COMPRESSION_TYPE
        assert info.value.error.code == 76 and not info.value.error.retriable


def test_check_records_decompresses_and_answers_corrupt_message_or_too_large() -> None:
    records = [(b"k%d" % i, b"v" * 100, i) for i in range(10)]
    packed = memoryview(build_batch(records, compression=3))
    assert [r.key for r in check_records(packed, 10_000)] == [k for k, _, _ in records]
    with pytest.raises(ApiException) as too_large:
        check_records(packed, 500)
    assert too_large.value.error is Errors.MESSAGE_TOO_LARGE
    # Marked gzip, the records plain: the header is fine, the records do not decompress.
    not_gzip = _marked(1, build_batch(records))
    assert check_batch(not_gzip).compression == 1
    with pytest.raises(ApiException) as corrupt:
        check_records(not_gzip, 10_000)
    assert corrupt.value.error is Errors.CORRUPT_MESSAGE
    assert "gzip records do not decompress" in corrupt.value.message


def test_offsets_must_leave_room_for_an_int64_log_end() -> None:
    check_offsets_fit(0, MAX_OFFSET - 1)
    for first, last in ((-1, 0), (0, MAX_OFFSET)):
        with pytest.raises(ApiException) as info:
            check_offsets_fit(first, last)
        assert info.value.error is Errors.OFFSET_OUT_OF_RANGE
