"""A log's bounds (``storage.log_truncation``): truncation, chunk deletion, retention, gaps."""

from pathlib import Path

import pytest

from chunkraft.broker_agent.storage import (
    LogConfig,
    OffsetOutOfRangeError,
    UnifiedLog,
)
from tests.unit.broker_agent.storage.log_support import TOPIC, batch, fill, offsets, open_log


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
