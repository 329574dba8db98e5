"""Reading a log (``storage.log_reads``): whole batches across segments and gaps, timestamps."""

from pathlib import Path

from tests.unit.broker_agent.storage.log_support import batch, fill, offsets, open_log


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


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 40)  # batch i has timestamps 1000+10i .. +2
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1101) == (31, 1101)
    assert log.offset_for_timestamp(1105) == (33, 1110)
    assert log.offset_for_timestamp(99999) is None


def test_max_timestamp_record_is_the_first_record_with_the_largest_timestamp(
        tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 20)  # batch i has timestamps 1000+10i .. +2: the largest, 1192, at offset 59
    log.append_as_leader(batch(3, ts=1100), 0)  # an older timestamp later in the log: 60-62
    log.append_as_leader(batch(1, ts=1192), 0)  # the same largest timestamp again: 63
    assert len(log.segments) > 1
    assert log.max_timestamp_record(10**9) == (59, 1192)
    assert log.max_timestamp_record(59) == (58, 1191)  # below the bound only
    assert log.max_timestamp_record(0) is None
    log.append_as_leader(batch(1, ts=5000), 0)  # offset 64
    assert log.max_timestamp_record(10**9) == (64, 5000)
