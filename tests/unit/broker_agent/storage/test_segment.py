from pathlib import Path

from chunkraft.broker_agent.storage.segment import LogSegment
from chunkraft.dataplane.record_batch import build_batch, parse_header


def batch(base: int, n: int, ts: int = 1000, size: int = 100) -> bytes:
    return build_batch([(None, b"x" * size, ts + i) for i in range(n)], base_offset=base)


def append(seg: LogSegment, data: bytes) -> None:
    h = parse_header(data)
    seg.append(data, [(h.base_offset, h.last_offset, h.max_timestamp, len(data))])


def filled(tmp_path: Path, base: int = 100, count: int = 20) -> LogSegment:
    seg = LogSegment(tmp_path, base, 512)
    for i in range(count):
        append(seg, batch(base + 3 * i, 3, ts=1000 + 10 * i))
    return seg


def test_append_tracks_offsets_timestamps_and_indexes(tmp_path: Path) -> None:
    seg = filled(tmp_path)
    assert seg.next_offset == 160
    assert seg.max_timestamp == 1000 + 10 * 19 + 2
    assert seg.first_batch_timestamp == 1002
    assert len(seg.index) > 3  # sparse: about one entry per 512 bytes
    assert (tmp_path / "00000000000000000100.log").stat().st_size == seg.size


def test_read_from_inside_a_batch_and_limits(tmp_path: Path) -> None:
    seg = filled(tmp_path)
    got = seg.read(131, 10_000, 10**9, True)
    assert got is not None
    data, first, nxt = got
    assert first == 130 and nxt == 160
    assert parse_header(data).base_offset == 130
    one = len(batch(0, 3))
    got = seg.read(100, one * 2, 10**9, True)
    assert got is not None and got[1:] == (100, 106)
    assert seg.read(100, 0, 10**9, False) is None
    assert seg.read(100, 0, 10**9, True) is not None  # min one batch
    got = seg.read(100, 10**6, 109, True)
    assert got is not None and got[2] == 109  # batch 109..111 straddles the max offset
    assert seg.read(160, 100, 10**9, True) is None


def test_truncate_to_cuts_whole_batches(tmp_path: Path) -> None:
    seg = filled(tmp_path)
    seg.truncate_to(131)
    assert seg.next_offset == 130
    assert seg.max_timestamp == 1000 + 10 * 9 + 2
    assert seg.read(127, 10**6, 10**9, True) is not None
    assert seg.read(130, 10**6, 10**9, True) is None
    seg.truncate_to(100)
    assert seg.size == 0 and seg.next_offset == 100


def test_recover_rebuilds_state_and_cuts_garbage(tmp_path: Path) -> None:
    seg = filled(tmp_path)
    seg.flush()
    seg.close()
    with (tmp_path / "00000000000000000100.log").open("ab") as f:
        f.write(b"\x00" * 10 + b"garbage" * 20)
    again = LogSegment(tmp_path, 100, 512)
    seen: list[int] = []
    cut = again.recover(0, lambda h, _v: seen.append(h.base_offset))
    assert cut == 150
    assert again.next_offset == 160
    assert seen == [100 + 3 * i for i in range(20)]
    assert again.read(150, 10**6, 10**9, True) is not None


def test_recover_from_trusted_point_checks_only_the_tail(tmp_path: Path) -> None:
    seg = filled(tmp_path)
    seg.flush()
    seg.close()
    again = LogSegment(tmp_path, 100, 512)
    seen: list[int] = []
    assert again.recover(145, lambda h, _v: seen.append(h.base_offset)) == 0
    assert seen == [145, 148, 151, 154, 157]
    assert again.next_offset == 160 and again.max_timestamp == 1192


def test_large_batch_read_beyond_scan_chunk(tmp_path: Path) -> None:
    seg = LogSegment(tmp_path, 0, 4096)
    big = batch(0, 1, size=200_000)
    append(seg, big)
    append(seg, batch(1, 1))
    got = seg.read(0, 10, 10**9, True)
    assert got is not None and got[0] == big and got[2] == 1
    assert [h.base_offset for h, _ in seg.iter_headers(0)] == [0, 1]


def test_reads_over_mixed_big_and_small_batches(tmp_path: Path) -> None:
    seg = LogSegment(tmp_path, 0, 4096)
    sizes = [10, 150_000, 10, 10, 90_000, 70_000, 10, 200_000, 10]
    bases = []
    offset = 0
    for size in sizes:
        append(seg, batch(offset, 2, size=size))
        bases.append(offset)
        offset += 2
    for start in range(offset):
        got = seg.read(start, 120_000, 10**9, True)
        assert got is not None
        data, first, nxt = got
        assert first == start - start % 2
        # whole batches, back to back, up to the byte limit (or the one big first batch)
        pos, expect = 0, first
        while pos < len(data):
            h = parse_header(data, pos)
            assert h.base_offset == expect
            expect = h.next_offset
            pos += h.size_in_bytes
        assert expect == nxt
        assert len(data) <= 120_000 or nxt == first + 2
    assert seg.find_batch(9) == (sum(len(batch(0, 2, size=s)) for s in sizes[:4]), 8)
