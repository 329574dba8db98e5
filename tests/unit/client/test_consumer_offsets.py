"""The consumer's offsets (``client.consumer_offsets``): key ranges commit range offsets and
start from them."""

from __future__ import annotations

from chunkraft.protocol.data_plane import KEY_HASH_MAX
from tests.unit.client.consumer_fakes import FakeCluster, consumer


def test_key_ranges_commit_range_offsets_and_start_from_them(fake: FakeCluster) -> None:
    low, high = (0, 1000), (1001, KEY_HASH_MAX)
    with consumer(group_id="g") as reader:
        reader.assign({("t", 0): [low, high]})
        reader.seek(("t", 0), 0)
        for _ in range(30):
            reader.poll(0)
            if reader.range_positions(("t", 0))[high] == 15:
                break
        reader.seek(("t", 0), 0)
        reader.poll(0)  # the low range is read again from 0 (no key of it: it moves on)
        positions = reader.range_positions(("t", 0))
        reader.commit()
    (partition,) = fake.commits[-1]["topics"][0]["partitions"]
    assert partition["committed_offset"] == min(positions.values())
    assert {(r["lo"], r["hi"]): r["offset"] for r in partition["range_offsets"]} == positions

    fake.committed = {"committed_offset": 4, "range_offsets": [
        {"lo": 0, "hi": 1000, "offset": 9}, {"lo": 1001, "hi": KEY_HASH_MAX, "offset": 12}]}
    with consumer(group_id="g") as again:
        again.assign({("t", 0): [(0, 500), (900, 2000), high]})
        assert again.range_positions(("t", 0)) == {(0, 500): 9, (900, 2000): 9, high: 12}
        assert again.committed(("t", 0)) == 4
        assert again.committed_ranges(("t", 0)) == {low: 9, high: 12}
    with consumer(group_id="g") as whole:
        whole.assign([("t", 0)])
        assert whole.position(("t", 0)) == 4
