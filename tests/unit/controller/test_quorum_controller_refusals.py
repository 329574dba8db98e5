"""A refusal read from a speculative image is answered only once what it read has committed.

Found by the nemesis campaign: a cut answered INVALID_CHUNK_OFFSETS ("before the active
chunk's 55") because the leader's speculative image held a cut at 55 that a failover then
discarded; a later cut was refused as if the chunk at 55 had never existed. A refusal is a read
of the state, so it must rest on committed state, like every read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import Future

from chunkraft.controller.quorum_controller import QuorumController, WriteResult
from chunkraft.controller.raft import BatchOutcome, ProposalError, ProposedBatch
from chunkraft.error_codes import Errors
from tests.support.raft import key
from tests.unit.controller.quorum_doubles import (
    DeferredRaft,
    TopicResponse,
    create_topic,
    run,
    topic_names,
)


class HoldingRaft(DeferredRaft):
    """While ``hold`` is set, keeps proposals in flight; :meth:`release` commits them, and
    :meth:`discard` fails them as a failover that lost the entries would."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[Sequence[ProposedBatch], Future[tuple[BatchOutcome, ...]]]] = []

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        if not self.hold:
            return super().propose(batches)
        future: Future[tuple[BatchOutcome, ...]] = Future()
        self.held.append((list(batches), future))
        return future

    def release(self) -> None:
        self.hold = False
        for batches, future in self.held:
            self._commit(batches, future)
        self.held.clear()

    def discard(self) -> None:
        self.hold = False
        for _batches, future in self.held:
            future.set_exception(ProposalError("LEADER_CHANGED"))
        self.held.clear()


WriteTask = asyncio.Future[WriteResult[TopicResponse]]


async def create_held_then_again(controller: QuorumController,
                                 raft: HoldingRaft) -> tuple[WriteTask, WriteTask]:
    """Creates "orders" once while entries are held in flight, then again under another key;
    returns both writes once the second has validated (against the first, not committed)."""
    await controller.write(create_topic("first"), TopicResponse)
    raft.hold = True
    first = asyncio.ensure_future(controller.write(
        create_topic("orders"), TopicResponse, idempotency_key=key(1)))
    await asyncio.sleep(0.02)
    second = asyncio.ensure_future(controller.write(
        create_topic("orders"), TopicResponse, idempotency_key=key(2)))
    await asyncio.sleep(0.05)
    # It would be TOPIC_ALREADY_EXISTS, but "orders" is not committed yet.
    assert not second.done()
    return first, second


def test_a_refusal_that_read_a_write_in_flight_waits_until_it_commits() -> None:
    raft = HoldingRaft()

    async def body(controller: QuorumController) -> None:
        first, second = await create_held_then_again(controller, raft)
        raft.release()
        created, refused = await first, await second
        assert created.committed and created.response.error_code == 0
        assert refused.response.error_code == Errors.TOPIC_ALREADY_EXISTS.code
        assert not refused.committed
        assert refused.offset >= created.offset   # its X-Metadata-Offset shows the topic

    run(raft, body)
    assert topic_names(raft) == ["first", "orders"]


def test_a_refusal_that_read_a_write_a_failover_lost_is_validated_again() -> None:
    raft = HoldingRaft()

    async def body(controller: QuorumController) -> None:
        lost, second = await create_held_then_again(controller, raft)
        lost.cancel()       # its writer gives up: it will not retry
        raft.discard()      # and its entry never commits
        result = await second
        # Not "already exists" for a topic that never existed: it created it.
        assert result.committed and result.response.error_code == 0
        topic = controller.image.topics.get_by_name("orders")
        assert topic is not None and result.response.topic_id == str(topic.topic_id)

    run(raft, body)
    assert topic_names(raft) == ["first", "orders"]


def test_a_refusal_with_nothing_in_flight_answers_at_once() -> None:
    raft = HoldingRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("orders"), TopicResponse)
        raft.hold = True    # nothing is proposed by the refusal, so nothing is held
        refused = await asyncio.wait_for(controller.write(
            create_topic("orders"), TopicResponse), 1.0)
        assert refused.response.error_code == Errors.TOPIC_ALREADY_EXISTS.code

    run(raft, body)
