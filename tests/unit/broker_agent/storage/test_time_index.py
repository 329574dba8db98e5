from pathlib import Path

from chunkraft.broker_agent.storage.time_index import TimeIndex


def test_only_growing_timestamps_are_indexed(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "t.timeindex", 10)
    idx.maybe_append(1000, 12)
    idx.maybe_append(900, 15)  # not larger: skipped
    idx.maybe_append(2000, 20)
    assert len(idx) == 2
    assert idx.lookup(500) == 10
    assert idx.lookup(1000) == 12
    assert idx.lookup(1500) == 12
    assert idx.lookup(2500) == 20
    idx.truncate_to_offset(20)
    assert idx.last_entry() == (1000, 12)
    idx.flush()
    assert TimeIndex(tmp_path / "t.timeindex", 10).last_entry() == (1000, 12)
