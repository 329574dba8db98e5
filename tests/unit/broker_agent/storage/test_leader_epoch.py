from pathlib import Path

import pytest

from chunkraft.broker_agent.storage.leader_epoch import EpochEntry, LeaderEpochCache


def cache(tmp_path: Path) -> LeaderEpochCache:
    return LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")


def test_assign_keeps_entries_monotonic_and_persists(tmp_path: Path) -> None:
    c = cache(tmp_path)
    assert c.assign(0, 0)
    assert not c.assign(0, 5)  # same epoch, later start: nothing to record
    assert c.assign(2, 10)
    assert c.assign(1, 7)  # an older epoch: entries with epoch >= 1 or start >= 7 go
    assert c.entries == (EpochEntry(0, 0), EpochEntry(1, 7))
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n1 7\n"
    assert cache(tmp_path).entries == c.entries


def test_assign_rejects_negative(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        cache(tmp_path).assign(-1, 0)


def test_end_offset_for_matches_kafka(tmp_path: Path) -> None:
    c = cache(tmp_path)
    c.assign(1, 0)
    c.assign(3, 50)
    c.assign(5, 80)
    assert c.end_offset_for(5, 100) == (5, 100)  # latest epoch: LEO
    assert c.end_offset_for(3, 100) == (3, 80)
    assert c.end_offset_for(4, 100) == (3, 80)  # between: the floor epoch, the higher's start
    assert c.end_offset_for(0, 100) == (0, 0)  # older than all: requested epoch, first start
    assert c.end_offset_for(6, 100) == (-1, -1)
    assert c.end_offset_for(-1, 100) == (-1, -1)


def test_truncate_from_end_and_start(tmp_path: Path) -> None:
    c = cache(tmp_path)
    for epoch, start in ((0, 0), (1, 10), (2, 20), (3, 30)):
        c.assign(epoch, start)
    c.truncate_from_end(20)
    assert c.entries == (EpochEntry(0, 0), EpochEntry(1, 10))
    c.truncate_from_start(15)
    assert list(c.entries) == [EpochEntry(1, 15)]
    assert c.epoch_for_offset(16) == 1
    assert c.epoch_for_offset(3) is None
    c.clear()
    assert cache(tmp_path).entries == ()


def test_malformed_checkpoint_loads_empty(tmp_path: Path) -> None:
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n3\n1 2\n")
    assert cache(tmp_path).entries == ()
