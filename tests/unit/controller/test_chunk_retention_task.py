"""controller/chunk_retention: the leader's periodic pass commits the deletions through the
QuorumController (over LocalRaft); a follower writes nothing; a backlog past one pass's limit
drains."""

from __future__ import annotations

import asyncio
from typing import Any

from chunkraft.controller.chunk_retention import run_chunk_retention, run_retention_pass
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.controller.result import ControllerResult
from chunkraft.records import ChunkChangeRecord, ConfigRecord
from tests.unit.controller.operations.topic_support import apply, chunk, cluster, with_topic
from tests.unit.controller.quorum_doubles import TopicResponse, log_records, run

LATER = 10**13


def _seed(retention_ms: str = "1000") -> MetadataImage:
    """orders-0 with three inactive chunks cut at 0, 10 and 20 ms, the active one at 30 ms."""
    image = with_topic(cluster(range(2)), replicas=((0, 1),), start_offset=30,
                       start_timestamp=30)
    return apply(image, *(chunk(s, s + 9, s + 9, (0, 1), start_timestamp=s)
                          for s in (0, 10, 20)),
                 ConfigRecord(2, "orders", "retention.ms", retention_ms))


async def _write_seed(controller: QuorumController, image: MetadataImage) -> None:
    records: list[Any] = list(image.to_records())

    def operation(_: MetadataImage) -> ControllerResult[TopicResponse]:
        return ControllerResult.of(TopicResponse(name="orders"), records)

    assert (await controller.write(operation, TopicResponse)).committed


def _chunks(controller: QuorumController) -> list[int]:
    topic = controller.image.topics.get_by_name("orders")
    assert topic is not None
    return [c.start_offset for c in topic.chunks_of(0)]


def test_a_pass_commits_the_deletions_and_replay_removes_the_chunks() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> None:
        await _write_seed(controller, _seed())
        assert await run_retention_pass(controller, now_ms=1000 + 10) == 0  # 10 ms too early
        assert _chunks(controller) == [0, 10, 20]
        assert await run_retention_pass(controller, now_ms=1000 + 11) == 1
        assert _chunks(controller) == [10, 20]
        assert await run_retention_pass(controller, now_ms=LATER) == 2
        assert _chunks(controller) == []
        removals = [r for _, r in log_records(raft) if isinstance(r, ChunkChangeRecord)]
        assert [(r.start_offset, r.replicas) for r in removals] == [(0, ()), (10, ()),
                                                                    (20, ())]

    run(raft, body)


def test_the_task_deletes_on_the_leader_only_and_drains_a_backlog() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> None:
        await _write_seed(controller, _seed())
        raft.set_leader(False)
        task = asyncio.create_task(run_chunk_retention(
            controller, interval=0.02, limit=1, clock_ms=lambda: LATER))
        try:
            await asyncio.sleep(0.2)
            assert _chunks(controller) == [0, 10, 20]  # a follower deletes nothing
            raft.set_leader(True)
            for _ in range(200):
                if not _chunks(controller):
                    break
                await asyncio.sleep(0.02)
            assert _chunks(controller) == []
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(raft, body)


def test_retention_minus_one_keeps_the_chunks() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> None:
        await _write_seed(controller, _seed("-1"))
        assert await run_retention_pass(controller, now_ms=LATER) == 0
        assert _chunks(controller) == [0, 10, 20]

    run(raft, body)
