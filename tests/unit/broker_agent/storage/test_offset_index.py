from pathlib import Path

from chunkraft.broker_agent.storage.offset_index import OffsetIndex


def test_lookup_truncate_flush_reload(tmp_path: Path) -> None:
    p = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(p, 100)
    assert idx.lookup(150) == (100, 0)
    idx.append_entry(110, 4096)
    idx.append_entry(120, 8192)
    assert idx.lookup(115) == (110, 4096)
    assert idx.lookup(500) == (120, 8192)
    assert idx.lookup(105) == (100, 0)
    idx.flush()
    assert p.stat().st_size == 16
    idx.truncate_to_offset(120)
    idx.flush()
    assert OffsetIndex(p, 100).lookup(500) == (110, 4096)
    idx.append_entry(130, 9000)
    idx.flush()
    assert OffsetIndex(p, 100).last_entry() == (130, 9000)
    idx.truncate_to_position(9000)
    assert idx.last_entry() == (110, 4096)


def test_torn_entry_ignored_and_sanity(tmp_path: Path) -> None:
    p = tmp_path / "x.index"
    idx = OffsetIndex(p, 0)
    idx.append_entry(5, 100)
    idx.append_entry(9, 200)
    idx.flush()
    with p.open("ab") as f:
        f.write(b"\x00\x01\x02")
    again = OffsetIndex(p, 0)
    assert len(again) == 2
    assert again.is_sane(201)
    assert not again.is_sane(200)
    again.flush()  # rewrites without the torn bytes
    assert p.stat().st_size == 16
