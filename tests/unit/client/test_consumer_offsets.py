"""The consumer's offsets (``client.consumer_offsets``): key ranges commit range offsets and
start from them."""

from __future__ import annotations

import time

import pytest

from chunkraft.client.consumer import ConsumerError
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


def test_an_offset_lookup_retries_until_the_leader_answers(fake: FakeCluster) -> None:
    fake.list_offsets_failures = 8  # a leader restarting after kill -9, say
    with consumer() as reader:
        reader.assign([("t", 0)])
        reader.seek_to_beginning()
        assert reader.position(("t", 0)) == 0
        reader.seek_to_end()
        assert reader.position(("t", 0)) == 15
    assert fake.list_offsets_asked == 10


def test_an_offset_lookup_gives_up_after_default_api_timeout_naming_the_failure(
        fake: FakeCluster) -> None:
    fake.list_offsets_failures = 10_000
    with consumer(default_api_timeout_ms=400) as reader:
        reader.assign([("t", 0)])
        started = time.monotonic()
        with pytest.raises(ConsumerError) as raised:
            reader.position(("t", 0))  # auto_offset_reset=earliest: a lookup
        took = time.monotonic() - started
    assert 0.3 < took < 2.0
    message = str(raised.value)
    assert "no offset for t-0 at timestamp -2" in message
    assert "default_api_timeout_ms" in message
    assert "broker 1 answered NOT_LEADER_OR_FOLLOWER" in message


def test_a_timestamp_lookup_also_waits_for_the_leader(fake: FakeCluster) -> None:
    fake.list_offsets_failures = 3
    with consumer() as reader:
        reader.assign([("t", 0)])
        # Later than every record of the inactive chunk (timestamps 1000..1009): the active
        # chunk's leader must answer, after its three failures.
        assert reader.seek_to_timestamp(("t", 0), 5000) == 15


def test_default_api_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="default_api_timeout_ms"):
        consumer(default_api_timeout_ms=0)
