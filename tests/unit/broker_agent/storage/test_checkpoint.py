from pathlib import Path

from chunkraft.broker_agent.storage.checkpoint import (
    read_offset,
    read_text,
    write_atomic,
    write_offset,
)


def test_write_atomic_replaces_and_leaves_no_tmp(tmp_path: Path) -> None:
    p = tmp_path / "cp"
    write_atomic(p, "one\n")
    write_atomic(p, "two\n")
    assert read_text(p) == "two\n"
    assert [x.name for x in tmp_path.iterdir()] == ["cp"]


def test_offsets_round_trip_and_garbage_is_missing(tmp_path: Path) -> None:
    p = tmp_path / "hw"
    assert read_offset(p) is None
    write_offset(p, 42)
    assert read_offset(p) == 42
    p.write_text("not a number")
    assert read_offset(p) is None
