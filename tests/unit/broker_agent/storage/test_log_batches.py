"""The log's checks of one batch (``storage.log_batches``), with the Kafka errors they answer."""

import struct

import pytest
from crc32c import crc32c

from chunkraft.broker_agent.storage.log_batches import (
    check_batch,
    check_offsets_fit,
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
    compressed = bytearray(build_batch([(b"k", b"v", 1)]))
    struct.pack_into(">h", compressed, 21, 1)  # gzip: CRC-valid once recomputed below
    struct.pack_into(">I", compressed, 17, crc32c(bytes(compressed[21:])))
    with pytest.raises(ApiException) as info:
        check_batch(memoryview(compressed))
    assert info.value.error is Errors.CORRUPT_MESSAGE


def test_offsets_must_leave_room_for_an_int64_log_end() -> None:
    check_offsets_fit(0, MAX_OFFSET - 1)
    for first, last in ((-1, 0), (0, MAX_OFFSET)):
        with pytest.raises(ApiException) as info:
            check_offsets_fit(first, last)
        assert info.value.error is Errors.OFFSET_OUT_OF_RANGE
