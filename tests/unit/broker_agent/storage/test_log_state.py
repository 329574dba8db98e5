"""A log's segments and files (``storage.log_state``): rolls, the flush policy, checkpoints."""

from pathlib import Path

from chunkraft.broker_agent.storage import (
    LogConfig,
)
from tests.unit.broker_agent.storage.log_support import TOPIC, batch, fill, open_log


def test_time_based_roll(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_ms=100))
    log.append_as_leader(batch(1, ts=1000), 0)
    log.append_as_leader(batch(1, ts=1050), 0)
    log.append_as_leader(batch(1, ts=1200), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


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


def test_delete_removes_directory(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 2)
    log.delete()
    assert not (tmp_path / "t-0").exists()
