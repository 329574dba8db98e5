import struct
import uuid
from pathlib import Path

import pytest
from crc32c import crc32c

from chunkraft.broker_agent.storage import (
    AbortedTransaction,
    DuplicateSequenceError,
    InconsistentTopicIdError,
    LogConfig,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
    UnifiedLog,
)
from chunkraft.dataplane.record_batch import (
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from chunkraft.error_codes import ApiException, Errors

TOPIC = uuid.UUID("3b8f2f3c-1d0c-4a7e-9c55-6a2f1f0d9e11")
SMALL = LogConfig(segment_bytes=4000, index_interval_bytes=300)


def batch(n: int = 3, ts: int = 1000, **kw: int | bool) -> bytes:
    return build_batch([(b"k%d" % i, b"v" * 50, ts + i) for i in range(n)], **kw)  # type: ignore[arg-type]


def open_log(path: Path, config: LogConfig = SMALL) -> UnifiedLog:
    return UnifiedLog.open(path / "t-0", TOPIC, config, now_ms=lambda: 10_000)


def offsets(data: bytes) -> list[int]:
    return [r.offset for h, v in iter_batches(data) for r in decode_records(v)]


def fill(log: UnifiedLog, batches: int, n: int = 3) -> None:
    for i in range(batches):
        log.append_as_leader(batch(n, ts=1000 + 10 * i), 0)


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


def test_reads_cross_segments_and_respect_limits(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 100)
    assert len(log.segments) > 3
    got = log.read(0, 10**7, 10**9)
    assert offsets(got.records) == list(range(300))
    got = log.read(10, 10**7, 60)
    assert got.next_offset == 60 and offsets(got.records)[0] == 9
    size = len(batch(3))
    got = log.read(0, size * 2 + 1, 10**9)
    assert got.next_offset == 6
    assert log.read(0, 1, 10**9, min_one_batch=False).records == b""
    assert log.read(0, 1, 10**9).next_offset == 3


def test_gaps_start_new_segments_and_reads_skip_them(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_follower(batch(10, base_offset=0, partition_leader_epoch=1))
    log.append_as_follower(batch(5, base_offset=50, partition_leader_epoch=3))
    assert [(s.base_offset, s.next_offset) for s in log.segments] == [(0, 10), (50, 55)]
    assert log.read(20, 10**6, 10**9).first_offset == 50
    assert offsets(log.read(5, 10**6, 10**9).records) == [*range(10), *range(50, 55)]
    assert log.end_offset_for_epoch(1) == (1, 50)
    assert log.end_offset_for_epoch(3) == (3, 55)
    log.close()
    again = open_log(tmp_path)
    assert [(s.base_offset, s.next_offset) for s in again.segments] == [(0, 10), (50, 55)]
    assert again.read(30, 10**6, 10**9).first_offset == 50


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


def test_producer_state_rebuilt_without_snapshot(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=0), 0)
    log.flush()
    for snap in (tmp_path / "t-0").glob("*.snapshot"):
        snap.unlink()
    again = open_log(tmp_path)
    with pytest.raises(DuplicateSequenceError):
        again.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=0), 0)


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


def test_aborted_index_rebuilt_after_crash(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    txn = {"producer_id": 5, "producer_epoch": 1, "transactional": True}
    log.append_as_leader(batch(2, base_sequence=0, **txn), 0)
    log.append_control(False, 5, 1, 0, 0)
    log.close_files()  # a crash: nothing flushed, no snapshot, no index files
    again = open_log(tmp_path)
    assert again.aborted_transactions(0, 3) == [AbortedTransaction(5, 0)]


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


def test_recovery_cuts_torn_tail(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 5)
    log.close()
    seg = tmp_path / "t-0" / f"{0:020d}.log"
    size = seg.stat().st_size
    with seg.open("r+b") as f:
        f.truncate(size - 10)
    again = open_log(tmp_path)
    assert again.log_end_offset == 12
    assert offsets(again.read(0, 10**6, 10**9).records) == list(range(12))


def test_recovery_cuts_garbage_and_bit_flips(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 5)
    log.close_files()  # crash before any flush: everything is checked
    seg = tmp_path / "t-0" / f"{0:020d}.log"
    with seg.open("ab") as f:
        f.write(b"\xff" * 100)
    assert open_log(tmp_path).log_end_offset == 15
    data = bytearray(seg.read_bytes())
    last = len(batch(3))
    data[len(data) - last + 70] ^= 0x10  # flip a bit inside the last batch's records
    seg.write_bytes(bytes(data))
    (tmp_path / "t-0" / "recovery-point").unlink()
    again = open_log(tmp_path)
    assert again.log_end_offset == 12


def test_recovery_deletes_segments_after_a_corrupt_one(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 60)
    segs = log.segments
    assert len(segs) >= 3
    log.close_files()
    (tmp_path / "t-0" / "recovery-point").write_text("0\n")
    first = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(first.read_bytes())
    data[-20] ^= 1
    first.write_bytes(bytes(data))
    again = open_log(tmp_path)
    assert len(again.segments) == 1
    assert again.log_end_offset == segs[0].next_offset - 3


def test_truncate_to_restores_epochs_and_hw(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(3), 1)
    log.append_as_leader(batch(3), 2)
    log.append_as_leader(batch(3), 3)
    log.update_high_watermark(9)
    assert log.truncate_to(4)
    assert log.log_end_offset == 3  # the batch holding offset 4 goes whole
    assert log.latest_epoch == 1 and log.high_watermark == 3
    assert not log.truncate_to(10)
    log.append_as_leader(batch(3), 4)
    assert log.end_offset_for_epoch(1) == (1, 3)


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 3)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100, 10**9)
    log.append_as_follower(batch(3, base_offset=100))
    log.close()
    again = open_log(tmp_path)
    assert (again.log_start_offset, again.log_end_offset) == (100, 103)


def test_delete_range_at_log_start_and_in_the_middle(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_follower(batch(10, base_offset=0))
    log.roll()
    log.append_as_follower(batch(10, base_offset=10))
    log.roll()
    log.append_as_follower(batch(10, base_offset=20))
    log.update_high_watermark(30)
    removed = log.delete_range(10, 19)  # a middle chunk: a gap appears
    assert removed > 0
    assert [s.base_offset for s in log.segments] == [0, 20]
    assert log.read(12, 10**6, 10**9).first_offset == 20
    log.delete_range(0, 9)
    assert log.log_start_offset == 20  # 10..19 is a gap: the start moves to the next segment
    assert [s.base_offset for s in log.segments] == [20]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(12, 100, 100)
    log.close()
    assert open_log(tmp_path).log_start_offset == 20


def test_delete_range_straddling_log_start_keeps_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig())
    log.append_as_follower(batch(10, base_offset=0) + batch(10, base_offset=10))
    log.delete_range(0, 14)
    assert log.log_start_offset == 15
    assert [s.base_offset for s in log.segments] == [0]
    assert log.read(15, 10**6, 10**9).first_offset == 10  # whole batch holding 15


def test_delete_range_of_everything_empties_at_end(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_follower(batch(10, base_offset=0))
    log.delete_range(0, 9)
    assert (log.log_start_offset, log.log_end_offset) == (10, 10)


def test_retention_by_time_and_size(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=4000, index_interval_bytes=300, retention_ms=1000)
    log = open_log(tmp_path, config)
    fill(log, 60)
    nsegs = len(log.segments)
    assert log.apply_retention(now_ms=10**6) == 0  # nothing below the high watermark
    log.update_high_watermark(log.log_end_offset)
    removed = log.apply_retention(now_ms=10**6)
    assert removed > 0 and len(log.segments) == 1  # the active segment stays
    assert log.log_start_offset == log.segments[0].base_offset
    log2 = UnifiedLog.open(
        tmp_path / "u-0",
        TOPIC,
        LogConfig(segment_bytes=4000, retention_ms=-1, retention_bytes=8000),
    )
    fill(log2, 60)
    log2.update_high_watermark(log2.log_end_offset)
    log2.apply_retention(now_ms=10**9)
    assert log2.size_in_bytes <= 8000 + 4000
    assert len(log2.segments) < nsegs


def test_time_based_roll(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_ms=100))
    log.append_as_leader(batch(1, ts=1000), 0)
    log.append_as_leader(batch(1, ts=1050), 0)
    log.append_as_leader(batch(1, ts=1200), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 40)  # batch i has timestamps 1000+10i .. +2
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1101) == (31, 1101)
    assert log.offset_for_timestamp(1105) == (33, 1110)
    assert log.offset_for_timestamp(99999) is None


def test_flush_policy_and_checkpoints(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(flush_interval_messages=5, flush_interval_ms=1000))
    d = tmp_path / "t-0"
    log.append_as_leader(batch(3), 0)
    assert not (d / "recovery-point").exists()  # nothing flushed yet: recovery checks all
    log.append_as_leader(batch(3), 0)
    assert (d / "recovery-point").read_text() == "6\n"
    log.append_as_leader(batch(1), 0)
    assert not log.maybe_flush(now_ms=10_500)
    assert log.maybe_flush(now_ms=11_001)
    log.update_high_watermark(5)
    log.checkpoint_high_watermark()
    assert (d / "high-watermark").read_text() == "5\n"
    assert (d / "partition.metadata").read_text() == f"version: 0\ntopic_id: {TOPIC}\n"


def test_wrong_topic_id_is_refused(tmp_path: Path) -> None:
    open_log(tmp_path).close()
    with pytest.raises(InconsistentTopicIdError):
        UnifiedLog.open(tmp_path / "t-0", uuid.uuid4(), SMALL)


def test_delete_removes_directory(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 2)
    log.delete()
    assert not (tmp_path / "t-0").exists()


def test_bit_flip_in_last_batch_cut_even_after_clean_close(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 30)
    leo = log.log_end_offset
    log.close()
    seg = tmp_path / "t-0" / f"{log.segments[-1].base_offset:020d}.log"
    data = bytearray(seg.read_bytes())
    data[-30] ^= 0x01
    seg.write_bytes(bytes(data))
    assert open_log(tmp_path).log_end_offset == leo - 3


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


def test_damaged_base_offset_outside_the_crc_is_cut(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 4)
    log.close_files()
    seg = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(seg.read_bytes())
    size = len(batch(3))
    data[3 * size + 7] ^= 0x40  # base offset of the last batch: 9 -> 73
    seg.write_bytes(bytes(data))
    assert open_log(tmp_path).log_end_offset == 9


def test_start_at_leaves_a_gap_for_chunks_held_elsewhere(tmp_path: Path) -> None:
    empty = open_log(tmp_path / "empty")
    empty.start_at(50)
    assert (empty.log_start_offset, empty.log_end_offset) == (50, 50)
    assert empty.append_as_leader(batch(2), 1).first_offset == 50
    empty.close()

    log = open_log(tmp_path / "held")
    fill(log, 2)  # offsets 0..5: an older chunk
    log.start_at(40)
    assert (log.log_start_offset, log.log_end_offset) == (0, 40)
    assert log.append_as_leader(batch(3), 1).first_offset == 40
    assert offsets(log.read(0, 100_000, 100).records) == [0, 1, 2, 3, 4, 5, 40, 41, 42]
    log.start_at(10)  # below the LEO: nothing happens
    assert log.log_end_offset == 43
    log.close()


def test_start_at_forgets_producers_whose_story_went_on_elsewhere(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=0), 0)
    log.append_as_leader(batch(2, producer_id=8, producer_epoch=0, base_sequence=0,
                               transactional=True), 0)
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset() == 3  # producer 8's transaction is open here
    log.start_at(50)  # its marker, and producer 7's sequences 3..29, are in other chunks
    assert log.first_unstable_offset() is None and log.producer_state(7) is None
    info = log.append_as_leader(batch(2, producer_id=7, producer_epoch=0, base_sequence=30), 1)
    assert info.first_offset == 50
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 52
    log.close()
