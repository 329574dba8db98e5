"""Consumer against a scripted two-broker cluster (httpx MockTransport): chunk routing with the
serving broker on every record, the move to the next chunk at a chunk's stop offset, key-range
filtering (and its unfiltered fallback), a metadata refresh after NOT_LEADER_OR_FOLLOWER, and
the KIP-253 gate."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from chunkraft.client.consumer import Consumer, ConsumerError
from chunkraft.client.consumer_fetcher import key_in_range
from chunkraft.client.metadata import ClusterMetadata
from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import KEY_HASH_MAX

URLS = {1: "http://b1:9001", 2: "http://b2:9002"}


@dataclass
class FakeCluster:
    """Topic ``t``: partition 0 has an inactive chunk 0..9 on broker 2 and its active chunk
    (10 ..) led by broker 1; each record is one batch, key ``k<offset % 4>``. Partition 1, made
    by an expansion, has prior partition 0 at epoch 3 and records 0..2 on broker 1."""

    records: dict[int, int] = field(default_factory=lambda: {0: 15, 1: 3})
    leader_moves: int = 0
    threshold: int = 12
    fetches: list[tuple[int, int, int, Any]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    committed: dict[str, Any] = field(default_factory=lambda: {"committed_offset": -1})

    def metadata(self) -> dict[str, Any]:
        leader = 1 if self.leader_moves <= 0 else 2
        return {
            "cluster_id": "c", "controller_id": 0, "metadata_offset": 5,
            "brokers": [{"node_id": b, "host": url.split("//")[1].split(":")[0],
                         "port": int(url.rsplit(":", 1)[1])} for b, url in URLS.items()],
            "topics": [{"name": "t", "topic_id": "x", "partitions": [
                {"partition_index": 0, "leader_id": leader, "leader_epoch": 4,
                 "replica_nodes": [1], "isr_nodes": [1], "start_offset": 10,
                 "chunks": [{"start_offset": 0, "start_timestamp": 1, "stop_offset": 9,
                             "end_offset": 9, "chunk_epoch": 0, "replicas": [2],
                             "isr": [2]}]},
                {"partition_index": 1, "leader_id": 1, "leader_epoch": 0,
                 "replica_nodes": [1], "isr_nodes": [1], "start_offset": 0,
                 "prior_partition_epochs": [{"partition_index": 0, "leader_epoch": 3}]}]}]}

    def batches(self, partition: int, start: int, stop: int,
                key_range: tuple[int, int] | None) -> bytes:
        out = b""
        for offset in range(start, stop):
            key = f"k{offset % 4}".encode()
            if key_range is not None and not key_in_range(key, (key_range[0], key_range[1])):
                continue
            out += build_batch([(key, f"p{partition}-{offset}".encode(), 1000 + offset)],
                               base_offset=offset)
        return out

    def fetch(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        want = body["topics"][0]["partitions"][0]
        partition, offset = want["partition"], want["fetch_offset"]
        key_range = want.get("key_range")
        self.fetches.append((broker, partition, offset, key_range))
        answer: dict[str, Any] = {"partition": partition}
        end = self.records[partition]
        if partition == 0 and offset <= 9:
            if broker != 2:
                answer["error_code"] = Errors.NOT_LEADER_OR_FOLLOWER.code
                return answer
            data = self.batches(0, offset, 10, key_range)
            answer.update(chunk_stop_offset=9, high_watermark=10)
        else:
            leader = 1 if partition == 1 or self.leader_moves <= 0 else 2
            if broker != leader:
                self.leader_moves -= 1 if self.leader_moves < 0 else 0
                answer["error_code"] = Errors.NOT_LEADER_OR_FOLLOWER.code
                return answer
            # One batch per answer, as a fetch with a small max_bytes would get.
            data = self.batches(partition, offset, min(offset + 1, end), key_range)
            answer.update(high_watermark=end, last_stable_offset=end)
        answer["records"] = base64.b64encode(data).decode()
        return answer

    def handle(self, request: httpx.Request) -> httpx.Response:
        broker = next(b for b, url in URLS.items() if str(request.url).startswith(url))
        path = request.url.path.rsplit("/", 1)[1]
        body = json.loads(request.content) if request.content else {}
        if path == "metadata":
            return httpx.Response(200, json=self.metadata())
        if path == "fetch":
            part = self.fetch(broker, body)
            return httpx.Response(200, json={"responses": [{"topic": "t",
                                                            "partitions": [part]}]})
        if path == "list-offsets":
            want = body["topics"][0]["partitions"][0]
            offset = 0 if want["timestamp"] == -2 else self.records[want["partition_index"]]
            return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
                {"partition_index": want["partition_index"], "offset": offset}]}]})
        if path == "find-coordinator":
            return httpx.Response(200, json={"coordinators": [
                {"key": "g", "node_id": 1, "host": "b1", "port": 9001, "url": URLS[1]}]})
        if path == "offset-commit":
            self.commits.append(body)
            return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
                {"partition_index": p["partition_index"]}
                for p in body["topics"][0]["partitions"]]}]})
        if path == "offset-fetch":
            return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
                dict(partition_index=0, **self.committed)]}]})
        if path == "offsets-for-leader-epoch":
            return httpx.Response(200, json={"topics": [{"topic": "t", "partitions": [
                {"partition": 0, "leader_epoch": 3, "end_offset": self.threshold}]}]})
        return httpx.Response(404, json={"message": path})


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    cluster = FakeCluster()
    transport = httpx.MockTransport(cluster.handle)
    original = httpx.Client.__init__

    def with_transport(self: httpx.Client, *args: Any, **kwargs: Any) -> None:
        kwargs["transport"] = transport
        original(self, *args, **kwargs)

    monkeypatch.setattr(httpx.Client, "__init__", with_transport)
    return cluster


def consumer(**options: Any) -> Consumer:
    return Consumer([URLS[1]], client_id="unit", **options)


def drain(reader: Consumer, polls: int = 60) -> list[Any]:
    out: list[Any] = []
    for _ in range(polls):
        out.extend(reader.poll(0))
    return out


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


def test_the_whole_range_is_a_plain_partition_and_bad_ranges_are_refused(
        fake: FakeCluster) -> None:
    with consumer() as reader:
        reader.assign({("t", 0): [(0, KEY_HASH_MAX)]})
        reader.seek(("t", 0), 0)
        assert len(drain(reader)) == 15
        with pytest.raises(ValueError):
            reader.assign({("t", 0): [(5, 2)]})
        with pytest.raises(ConsumerError):
            reader.position(("t", 7))
        with pytest.raises(ConsumerError):
            reader.commit()


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


def test_kip_253_the_new_partition_waits_for_the_prior_partition(fake: FakeCluster) -> None:
    with consumer(max_poll_records=1) as reader:
        reader.assign([("t", 0), ("t", 1)])
        reader.seek_to_beginning()
        got = drain(reader, 80)
    offsets = [(r.partition, r.offset) for r in got]
    assert sorted(offsets) == sorted([(0, o) for o in range(15)] + [(1, o) for o in range(3)])
    first_new = offsets.index((1, 0))
    consumed_before = [o for p, o in offsets[:first_new] if p == 0]
    assert max(consumed_before) + 1 >= fake.threshold


def test_without_a_gate_a_partition_started_past_zero_is_read_at_once(
        fake: FakeCluster) -> None:
    with consumer() as reader:
        reader.assign([("t", 1)])
        reader.seek(("t", 1), 1)
        # Prior partition 0 is not read by this consumer and it has no group: not waited for.
        got = drain(reader, 5)
    assert [r.offset for r in got] == [1, 2]


def test_metadata_can_be_shared(fake: FakeCluster) -> None:
    shared = ClusterMetadata([URLS[1]])
    try:
        with Consumer([URLS[1]], metadata=shared) as reader:
            assert reader.partitions_for("t") == [0, 1]
        assert shared.partition("t", 0) is not None  # not closed by the consumer
    finally:
        shared.close()


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
