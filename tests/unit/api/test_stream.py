"""The metadata stream (chunkraft.api.stream): log paging, long poll, snapshot_needed, snapshot."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import httpx

from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.error_codes import Errors
from chunkraft.records import decode_record
from chunkraft.records.files import read_batches
from tests.unit.api.support import (
    CLUSTER_ID,
    CLUSTER_ID_TEXT,
    V1,
    Node,
    offset_of,
    running_node,
    start_brokers,
)


async def create_topics(node: Node, count: int, prefix: str = "t") -> None:
    for index in range(count):
        answer = await node.post("create-topics", {"topics": [
            {"name": f"{prefix}{index}", "num_partitions": 2, "replication_factor": 2}]})
        assert answer.status_code == 200 and answer.json()["topics"][0]["error_code"] == 0


async def read_log(node: Node, **params: Any) -> httpx.Response:
    return await node.http.get(f"{V1}/metadata-log", params=params)


def replay_batches(batches: list[dict[str, Any]], base: MetadataImage = MetadataImage.EMPTY
                   ) -> MetadataImage:
    delta = MetadataDelta(base)
    for batch in batches:
        delta.replay_all(decode_record(base64.b64decode(r)) for r in batch["records"])
    return delta.apply()


def test_the_log_pages_through_every_committed_batch_in_order() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            await create_topics(node, 4)
            image = node.context.controller.image
            after, pages, batches = -1, 0, []
            while after < image.offset:
                answer = await read_log(node, after=after, max_records=3)
                assert answer.status_code == 200
                body = answer.json()
                assert body["cluster_id"] == CLUSTER_ID_TEXT
                assert (body["node_id"], body["leader_id"]) == (1, 1)
                assert body["high_watermark"] == image.offset + 1 == offset_of(answer) + 1
                assert not body["snapshot_needed"] and body["snapshot"] is None
                assert body["batches"], body
                for batch in body["batches"]:
                    assert batch["base_offset"] == after + 1
                    assert batch["epoch"] >= 1
                    after = batch["base_offset"] + len(batch["records"]) - 1
                # whole batches, up to max_records (one batch always, even a bigger one)
                counts = [len(b["records"]) for b in body["batches"]]
                assert len(counts) == 1 or sum(counts) <= 3
                batches.extend(body["batches"])
                pages += 1
            assert pages > 1
            assert after == image.offset
            # the stream replays to the leader's image: same content, same hash
            replayed = replay_batches(batches)
            assert replayed.offset == image.offset
            assert replayed.content_hash() == image.content_hash()
            # caught up: nothing more, at once
            caught_up = await read_log(node, after=image.offset)
            assert caught_up.json()["batches"] == []

    asyncio.run(scenario())


def test_max_bytes_bounds_a_page_but_never_below_one_batch() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            await create_topics(node, 3)
            answer = await read_log(node, after=-1, max_bytes=1)
            assert len(answer.json()["batches"]) == 1
            everything = await read_log(node, after=-1)
            assert len(everything.json()["batches"]) > 1

    asyncio.run(scenario())


def test_reading_from_the_middle_of_a_batch_starts_at_the_next_offset() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            await create_topics(node, 1)
            whole = (await read_log(node, after=-1)).json()["batches"]
            last = whole[-1]  # TopicRecord + 2 PartitionRecords
            assert len(last["records"]) == 3
            answer = await read_log(node, after=last["base_offset"])
            (rest,) = answer.json()["batches"]
            assert rest["base_offset"] == last["base_offset"] + 1
            assert rest["records"] == last["records"][1:]

    asyncio.run(scenario())


def test_a_long_poll_returns_as_soon_as_something_commits() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            tail = node.context.controller.image.offset

            async def commit_later() -> None:
                await asyncio.sleep(0.2)
                await create_topics(node, 1, prefix="late")

            started = time.monotonic()
            answer, _ = await asyncio.gather(read_log(node, after=tail, wait_ms=10_000),
                                             commit_later())
            elapsed = time.monotonic() - started
            batches = answer.json()["batches"]
            assert batches and batches[0]["base_offset"] == tail + 1
            records = [decode_record(base64.b64decode(r)) for r in batches[0]["records"]]
            assert getattr(records[0], "name", None) == "late0"
            assert 0.15 < elapsed < 5

    asyncio.run(scenario())


def test_a_long_poll_with_nothing_new_returns_empty_after_its_wait() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            started = time.monotonic()
            answer = await read_log(node, after=node.context.controller.image.offset,
                                    wait_ms=200)
            assert answer.status_code == 200 and answer.json()["batches"] == []
            assert 0.15 < time.monotonic() - started < 3

    asyncio.run(scenario())


def test_a_reader_behind_the_retained_tail_is_told_to_load_the_snapshot() -> None:
    async def scenario() -> None:
        async with running_node(LocalRaft(max_retained_bytes=300)) as node:
            await start_brokers(node)
            await create_topics(node, 6)
            image = node.context.controller.image
            start = node.raft.state_machine.tail_start_offset
            assert start > 0  # the tail was trimmed
            behind = (await read_log(node, after=-1)).json()
            assert behind["snapshot_needed"] is True and behind["batches"] == []
            assert behind["snapshot"] == {"end_offset": image.offset + 1, "epoch": image.epoch}
            # from the snapshot's offset on, the tail serves the rest
            snapshot = await node.http.get(f"{V1}/snapshot")
            batches = list(read_batches(snapshot.content))
            assert batches[-1].is_end_of_snapshot
            recovered = MetadataDelta(MetadataImage.EMPTY)
            recovered.replay_all(decode_record(r) for b in batches for r in b.records)
            snapshot_image = recovered.apply()
            assert snapshot_image.content_hash() == image.content_hash()
            within = (await read_log(node, after=start - 1)).json()
            assert not within["snapshot_needed"] and within["batches"]
            assert within["batches"][0]["base_offset"] == start

    asyncio.run(scenario())


def test_the_snapshot_is_the_committed_image_as_batches() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            await create_topics(node, 3)
            await node.post("create-acls", {"creations": [{
                "resource_type": "TOPIC", "resource_name": "t0", "principal": "User:x",
                "operation": "WRITE", "permission_type": "ALLOW"}]})
            image = node.context.controller.image
            answer = await node.http.get(f"{V1}/snapshot")
            assert answer.status_code == 200
            assert answer.headers["content-type"] == "application/octet-stream"
            assert int(answer.headers["x-snapshot-end-offset"]) == image.offset + 1
            assert int(answer.headers["x-snapshot-epoch"]) == image.epoch
            assert answer.headers["x-cluster-id"] == CLUSTER_ID_TEXT
            assert offset_of(answer) == image.offset
            batches = list(read_batches(answer.content))
            assert all(b.cluster_id == CLUSTER_ID and b.epoch == image.epoch for b in batches)
            assert [b.is_end_of_snapshot for b in batches] == [False] * (len(batches) - 1) + [
                True]
            delta = MetadataDelta(MetadataImage.EMPTY)
            delta.replay_all(decode_record(r) for b in batches for r in b.records)
            replayed = delta.apply()
            assert replayed.content_hash() == image.content_hash()
            assert len(replayed.acls) == 1 and len(replayed.topics) == 3

    asyncio.run(scenario())


def test_there_is_no_snapshot_before_the_first_commit() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            answer = await node.http.get(f"{V1}/snapshot")
            assert answer.status_code == 404
            assert answer.json()["error_code"] == Errors.SNAPSHOT_NEEDED.code

    asyncio.run(scenario())


def test_bad_stream_parameters_are_400_naming_the_parameter() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            for params, name in (({"after": -2}, "after"), ({"max_records": 0}, "max_records"),
                                 ({"wait_ms": 30_001}, "wait_ms"), ({"after": "x"}, "after")):
                answer = await read_log(node, **params)
                assert answer.status_code == 400, params
                assert answer.json()["error_code"] == Errors.INVALID_REQUEST.code
                assert name in answer.json()["message"]

    asyncio.run(scenario())
