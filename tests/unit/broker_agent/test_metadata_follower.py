"""MetadataFollower against a fake controller (httpx.MockTransport): pages of the stream, a
snapshot when told, the leader followed, another cluster refused; and delta_between, the delta
a snapshot load hands to the ReplicaManager."""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.broker_agent.controller_channel import ControllerChannel
from chunkraft.broker_agent.image_diff import delta_between
from chunkraft.broker_agent.metadata_follower import (
    LatencyStats,
    MetadataFollower,
    StreamError,
)
from chunkraft.controller.image import (
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
    compute_local_changes,
)
from chunkraft.records import encode_record
from chunkraft.records.files.snapshot import snapshot_batches
from chunkraft.records.uuids import kafka_uuid_str
from tests.support.brute_force import as_plain
from tests.support.histories import BROKERS, metadata_histories

CLUSTER = uuid.UUID("9d3f2c4e-5b6a-4c7d-8e9f-0a1b2c3d4e5f")
URLS = ["http://c1", "http://c2", "http://c3"]


def replay(records: list[Any], base: MetadataImage = MetadataImage.EMPTY,
           offset: int | None = None) -> MetadataImage:
    delta = MetadataDelta(base)
    for record in records:
        delta.replay(record)
    end = base.offset + len(records) if offset is None else offset
    return delta.apply(MetadataProvenance(end, 1))


class FakeQuorum:
    """Committed records in batches of ``batch`` on one log; ``retained_from``: the first
    offset still in the tail (older readers are told to load the snapshot). Answers as node
    ``answering`` of URL -> node id, with ``leader``."""

    def __init__(self, records: list[Any], *, batch: int = 3, cluster: uuid.UUID = CLUSTER,
                 leader: int = 3) -> None:
        self.records = records
        self.batch = batch
        self.cluster = cluster
        self.leader = leader
        self.retained_from = 0
        self.requests: list[str] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        node = URLS.index(f"http://{request.url.host}") + 1
        self.requests.append(f"{request.url.host}{request.url.path}")
        if request.url.path.endswith("/snapshot"):
            image = replay(self.records, offset=len(self.records) - 1)
            body = b"".join(snapshot_batches(
                image.encoded_records(), epoch=1, cluster_id=self.cluster, append_time_ms=0,
                records_per_batch=2, batch_bytes=1 << 20))
            return httpx.Response(200, content=body, headers={
                "X-Snapshot-End-Offset": str(len(self.records)), "X-Snapshot-Epoch": "1",
                "X-Cluster-Id": kafka_uuid_str(self.cluster)})
        after = int(request.url.params["after"])
        max_records = int(request.url.params["max_records"])
        wanted = after + 1
        hw = len(self.records)
        body: dict[str, Any] = {"cluster_id": kafka_uuid_str(self.cluster), "node_id": node,
                                "leader_id": self.leader, "high_watermark": hw,
                                "snapshot_needed": wanted < self.retained_from,
                                "snapshot": None, "batches": []}
        if not body["snapshot_needed"]:
            offset = wanted
            while offset < hw and offset - wanted < max_records:
                end = min(hw, (offset // self.batch + 1) * self.batch)
                body["batches"].append({
                    "base_offset": offset, "epoch": 1,
                    "append_time_ms": int(time.time() * 1000) - 5,
                    "records": [base64.b64encode(encode_record(r)).decode()
                                for r in self.records[offset:end]]})
                offset = end
        return httpx.Response(200, json=body)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[MetadataDelta, MetadataImage]] = []

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.calls.append((delta, image))


def follower_of(quorum: FakeQuorum, **kwargs: Any) -> MetadataFollower:
    channel = ControllerChannel(URLS, transport=httpx.MockTransport(quorum.handler))
    return MetadataFollower(channel, max_records=4, **kwargs)


async def catch_up(follower: MetadataFollower, offset: int) -> None:
    for _ in range(200):
        if follower.applied_offset >= offset:
            return
        await follower.poll_once(wait_ms=0)
    raise AssertionError(f"stuck at {follower.applied_offset}")


HISTORY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@HISTORY
@given(metadata_histories(max_steps=15))
def test_pages_of_the_stream_replay_to_the_controllers_image(records: list[Any]) -> None:
    quorum = FakeQuorum(records)
    recorder = Recorder()

    async def scenario() -> MetadataFollower:
        follower = follower_of(quorum)
        follower.add_listener(recorder)
        await follower.poll_once(wait_ms=0)
        await catch_up(follower, len(records) - 1)
        await follower.channel.aclose()
        return follower

    follower = asyncio.run(scenario())
    expected = replay(records, offset=len(records) - 1)
    assert follower.image.content_hash() == expected.content_hash()
    assert follower.offset == follower.applied_offset == len(records) - 1
    assert follower.caught_up and follower.cluster_id == CLUSTER
    # the listener saw every image in order, each delta based on the one before
    assert not records or recorder.calls[-1][1] is follower.image
    for (delta, _), (_, before) in zip(recorder.calls[1:], recorder.calls, strict=False):
        assert delta.image is before
    assert follower.latency.count == follower.batches_applied > 0 or not records
    assert 0 <= (follower.latency.percentile(0.99) or 0) < 60_000


def test_the_follower_moves_to_the_leader_once_it_knows_its_url() -> None:
    records = list(replay_records())
    quorum = FakeQuorum(records, leader=2)

    async def scenario() -> MetadataFollower:
        follower = follower_of(quorum)
        await follower.poll_once(wait_ms=0)  # c1 says: leader 2, URL unknown -> try c2
        await follower.poll_once(wait_ms=0)  # c2 is node 2, the leader: stay
        await follower.poll_once(wait_ms=0)
        await follower.channel.aclose()
        return follower

    follower = asyncio.run(scenario())
    assert quorum.requests[:3] == ["c1/controller/v1/metadata-log",
                                   "c2/controller/v1/metadata-log",
                                   "c2/controller/v1/metadata-log"]
    assert follower.url == "http://c2" and follower.leader_id == 2
    assert follower.channel.preferred_url == "http://c2"  # the lifecycle's calls go there too


def replay_records() -> list[Any]:
    from chunkraft.records import PartitionRecord, RegisterBrokerRecord, TopicRecord

    topic_id = uuid.UUID(int=7)
    return [RegisterBrokerRecord(broker_id=b, broker_epoch=b, incarnation_id=uuid.UUID(int=b + 1))
            for b in range(3)] + [
        TopicRecord(name="orders", topic_id=topic_id),
        *(PartitionRecord(partition_id=p, topic_id=topic_id, replicas=(0, 1, 2), isr=(0, 1, 2),
                          leader=p % 3, leader_epoch=0, partition_epoch=0) for p in range(5))]


def test_a_reader_behind_the_tail_loads_the_snapshot_and_tells_the_listener() -> None:
    records = replay_records()
    quorum = FakeQuorum(records)
    quorum.retained_from = 6
    recorder = Recorder()

    async def scenario() -> MetadataFollower:
        follower = follower_of(quorum)
        follower.add_listener(recorder)
        await follower.poll_once(wait_ms=0)
        await follower.channel.aclose()
        return follower

    follower = asyncio.run(scenario())
    assert follower.snapshots_loaded == 1 and follower.offset == len(records) - 1
    assert follower.image == replay(records, offset=len(records) - 1)
    ((delta, image),) = recorder.calls
    assert delta.image is MetadataImage.EMPTY and image is follower.image
    leaders = compute_local_changes(delta.topics_delta, 1).leaders
    assert sorted(tp.partition_id for tp in leaders) == [1, 4]


def test_another_clusters_controller_is_refused() -> None:
    quorum = FakeQuorum(replay_records(), cluster=uuid.UUID(int=99))

    async def scenario() -> None:
        follower = follower_of(quorum, cluster_id=CLUSTER)
        try:
            await follower.poll_once(wait_ms=0)
        finally:
            await follower.channel.aclose()

    with pytest.raises(StreamError, match="controller of cluster"):
        asyncio.run(scenario())


def test_run_moves_to_another_controller_when_one_fails() -> None:
    records = replay_records()
    quorum = FakeQuorum(records, leader=-1)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "c1":
            raise httpx.ConnectError("down")
        return quorum.handler(request)

    async def scenario() -> MetadataFollower:
        channel = ControllerChannel(URLS, transport=httpx.MockTransport(handler))
        follower = MetadataFollower(channel, wait_ms=0)
        task = asyncio.create_task(follower.run())
        reached = await follower.wait_for_offset(len(records) - 1, timeout=5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await channel.aclose()
        assert reached
        return follower

    follower = asyncio.run(scenario())
    assert follower.failures >= 1 and follower.url != "http://c1"


def test_latency_percentiles_are_nearest_rank() -> None:
    stats = LatencyStats(size=1000)
    assert stats.percentile(0.5) is None
    for value in range(1, 101):
        stats.add(float(value))
    assert stats.percentile(0.5) == 50.0 and stats.percentile(0.99) == 99.0
    assert stats.summary()["count"] == 100 and stats.summary()["max_ms"] == 100.0


@HISTORY
@given(metadata_histories(max_steps=20), st.data())
def test_delta_between_two_images_applies_to_the_newer_and_asks_the_same_of_brokers(
        records: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(records)))
    old = replay(records[:cut])
    new = replay(records[cut:], old)
    by_records = MetadataDelta(old)
    for record in records[cut:]:
        by_records.replay(record)
    diff = delta_between(old, new)
    assert diff.apply(new.provenance) == new
    for broker_id in BROKERS:
        assert as_plain(compute_local_changes(diff.topics_delta, broker_id)) == as_plain(
            compute_local_changes(by_records.topics_delta, broker_id)), broker_id


def test_a_failing_listener_is_reported_and_the_stream_goes_on() -> None:
    records = replay_records()
    quorum = FakeQuorum(records, leader=-1)
    errors: list[BaseException] = []

    class Broken:
        async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
            raise RuntimeError("disk gone")

    async def scenario() -> MetadataFollower:
        follower = follower_of(quorum)
        follower.add_listener(Broken())
        follower.on_listener_error = errors.append
        await catch_up(follower, len(records) - 1)
        await follower.channel.aclose()
        return follower

    follower = asyncio.run(scenario())
    assert follower.listener_failures == len(errors) >= 1
    assert str(errors[0]) == "disk gone" and follower.applied_offset == len(records) - 1
