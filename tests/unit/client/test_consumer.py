"""The Consumer's polls against a scripted two-broker cluster (httpx MockTransport): chunk
routing with the broker of each record, key-range reads, leader moves."""

from __future__ import annotations

from chunkraft.client.consumer_fetcher import key_in_range
from chunkraft.dataplane.murmur2 import positive_hash
from tests.unit.client.consumer_fakes import FakeCluster, consumer, drain


def test_records_come_from_the_chunk_replica_then_the_leader(fake: FakeCluster) -> None:
    with consumer() as reader:
        reader.assign([("t", 0)])
        reader.seek_to_beginning()
        got = drain(reader)
        assert reader.position(("t", 0)) == 15
    assert [r.offset for r in got] == list(range(15))
    assert [r.broker_id for r in got] == [2] * 10 + [1] * 5
    assert got[3].value == b"p0-3" and got[3].timestamp == 1003


def test_a_key_range_reads_only_its_keys_and_progresses_past_other_keys(
        fake: FakeCluster) -> None:
    hashes = sorted(positive_hash(f"k{i}".encode()) for i in range(4))
    key_range = (0, hashes[1])  # two of the four keys
    with consumer() as reader:
        reader.assign({("t", 0): [key_range]})
        reader.seek(("t", 0), 0)
        got = drain(reader)
        assert reader.range_positions(("t", 0)) == {key_range: 15}
    assert got and all(key_in_range(r.key, key_range) for r in got)
    expected = [o for o in range(15) if key_in_range(f"k{o % 4}".encode(), key_range)]
    assert [r.offset for r in got] == expected


def test_a_leader_move_refreshes_the_metadata_and_reads_on(fake: FakeCluster) -> None:
    with consumer() as reader:
        reader.assign([("t", 0)])
        reader.seek(("t", 0), 10)
        first = drain(reader, 2)
        fake.leader_moves = 1  # broker 1 refuses from now on; the metadata names broker 2
        rest = drain(reader)
    got = first + rest
    assert [r.offset for r in got] == list(range(10, 15))
    assert {r.broker_id for r in rest} <= {1, 2}
    assert rest and rest[-1].broker_id == 2
