"""Appending to a partition's log (``storage.unified_log``): as leader, markers, as follower."""

import struct
from dataclasses import replace
from pathlib import Path

import pytest
from crc32c import crc32c

from chunkraft.broker_agent.storage import (
    AbortedTransaction,
    DuplicateSequenceError,
    LogConfig,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)
from chunkraft.dataplane.record_batch import (
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from chunkraft.error_codes import ApiException, Errors
from tests.unit.broker_agent.storage.log_support import batch, open_log


def test_append_assigns_offsets_and_read_returns_whole_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    info = log.append_as_leader(batch(3) + batch(2), leader_epoch=4, now_ms=1)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 4, 5)
    assert info.max_timestamp == 1002 and info.log_append_time_ms == -1
    assert log.log_end_offset == 5 and log.latest_epoch == 4
    got = log.read(4, 10_000, 100)
    assert (got.first_offset, got.next_offset) == (3, 5)  # starts at the batch holding 4
    h = parse_header(got.records)
    assert h.partition_leader_epoch == 4 and h.base_offset == 3
    assert log.read(5, 100, 100) == (b"", 5, 5)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 100, 100)


def test_a_log_append_time_log_stamps_each_batch_with_the_append_time(
        tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(2, ts=1000), leader_epoch=0, now_ms=5)
    log.config = replace(log.config, log_append_time=True)  # as a live topic change does
    info = log.append_as_leader(batch(2, ts=1000) + batch(1, ts=2000), leader_epoch=0,
                                now_ms=77_000)
    assert (info.log_append_time_ms, info.max_timestamp) == (77_000, 77_000)
    read = log.read(0, 100_000, 100)
    stamps = [(header.is_log_append_time, [r.timestamp for r in decode_records(view)])
              for header, view in iter_batches(read.records)]
    assert stamps == [(False, [1000, 1001]), (True, [77_000, 77_000]), (True, [77_000])]
    # ListOffsets by time finds the stamped batches by their append time.
    assert log.offset_for_timestamp(50_000) == (2, 77_000)


def test_follower_append_rules(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_follower(batch(3, base_offset=0))
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(batch(3, base_offset=1))
    whole = batch(3, base_offset=3)
    info = log.append_as_follower(whole + batch(3, base_offset=6)[:40])  # a cut tail is ignored
    assert info.last_offset == 5 and log.log_end_offset == 6
    bad = bytearray(batch(3, base_offset=6))
    bad[-1] ^= 1
    with pytest.raises(ApiException) as e:
        log.append_as_follower(bytes(bad))
    assert e.value.error is Errors.CORRUPT_MESSAGE
    assert log.log_end_offset == 6


def test_leader_rejects_bad_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(max_batch_bytes=500))
    bad = bytearray(batch(3))
    bad[70] ^= 0xFF
    for data, error in [
        (bytes(bad), Errors.CORRUPT_MESSAGE),
        (batch(3)[:-5], Errors.CORRUPT_MESSAGE),
        (batch(30), Errors.MESSAGE_TOO_LARGE),
        (
            build_control_batch(True, producer_id=1, producer_epoch=0, timestamp_ms=1),
            Errors.INVALID_RECORD,
        ),
    ]:
        with pytest.raises(ApiException) as e:
            log.append_as_leader(data, 0)
        assert e.value.error is error
    assert log.log_end_offset == 0


def test_a_batch_claiming_more_records_than_its_bytes_hold_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    lying = bytearray(build_batch([(b"k", b"v", 1)]))
    struct.pack_into(">i", lying, 23, 2**31 - 2)  # lastOffsetDelta
    struct.pack_into(">i", lying, 57, 2**31 - 1)  # records count
    struct.pack_into(">I", lying, 17, crc32c(bytes(lying[21:])))
    with pytest.raises(ApiException) as e:
        log.append_as_leader(bytes(lying), 0)
    assert e.value.error is Errors.INVALID_RECORD
    assert "cannot hold the 2147483647 records" in e.value.message
    assert log.log_end_offset == 0
    log.append_as_leader(batch(3), 0)  # an honest batch still goes in
    assert log.log_end_offset == 3


def test_idempotent_producer_duplicate_answers_old_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=0), 0)
    log.append_as_leader(batch(3), 0)
    retry = batch(3, producer_id=7, producer_epoch=0, base_sequence=0)
    with pytest.raises(DuplicateSequenceError) as dup:
        log.append_as_leader(retry, 0)
    assert (dup.value.first_offset, dup.value.last_offset) == (0, 2)
    assert log.log_end_offset == 6
    with pytest.raises(ApiException) as gap:
        log.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=9), 0)
    assert gap.value.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    log.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=3), 0)
    entry = log.producer_state(7)
    assert entry is not None and entry.last_sequence == 5
    log.close()
    again = open_log(tmp_path)  # producer state survives a restart (snapshot at close)
    with pytest.raises(DuplicateSequenceError):
        again.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=3), 0)


def test_transactions_lso_and_aborted_index(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(2), 0)
    txn = {"producer_id": 5, "producer_epoch": 1, "transactional": True}
    log.append_as_leader(batch(2, base_sequence=0, **txn), 0)
    log.append_as_leader(batch(2), 0)
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset() == 2
    assert log.last_stable_offset == 2
    marker = log.append_control(False, 5, 1, coordinator_epoch=0, leader_epoch=0, now_ms=5)
    assert marker.first_offset == 6
    assert log.last_stable_offset == 2  # the marker is not replicated yet
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset() is None and log.last_stable_offset == 7
    assert log.aborted_transactions(0, 7) == [AbortedTransaction(5, 2)]
    assert log.aborted_transactions(7, 10) == []
    log.close()
    again = open_log(tmp_path)
    assert again.aborted_transactions(0, 7) == [AbortedTransaction(5, 2)]
    again.truncate_to(6)  # the marker goes: the transaction is open again
    assert again.aborted_transactions(0, 7) == []
    assert again.first_unstable_offset() == 2


def test_follower_markers_build_the_aborted_index(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    data = batch(
        2, base_offset=0, producer_id=5, producer_epoch=1, base_sequence=0, transactional=True
    )
    data += build_control_batch(
        False, producer_id=5, producer_epoch=1, base_offset=2, timestamp_ms=9
    )
    log.append_as_follower(data)
    assert log.aborted_transactions(0, 3) == [AbortedTransaction(5, 0)]


def test_follower_request_with_gap_snapshots_earlier_runs(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = batch(3, base_offset=0, producer_id=7, producer_epoch=0, base_sequence=0)
    log.append_as_follower(first + batch(2, base_offset=50))
    assert [s.base_offset for s in log.segments] == [0, 50]
    log.close_files()  # crash: the roll's snapshot at 50 is all that is left
    again = open_log(tmp_path)
    with pytest.raises(DuplicateSequenceError):
        again.append_as_leader(
            batch(3, producer_id=7, producer_epoch=0, base_sequence=0), leader_epoch=0
        )


def test_older_leader_epoch_does_not_rewrite_the_cache(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(2), 5)
    log.append_as_leader(batch(2), 3)
    assert log.epoch_cache.entries == ((5, 0),)
