"""QuorumController: validation offloaded to its worker thread, and terms past the epoch range."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft import ProposalError
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.records import NoOpRecord
from tests.support.raft import batch
from tests.unit.controller.quorum_doubles import (
    TopicResponse,
    create_topic,
    log_records,
    run,
    topic_names,
)

# ------------------------------------------------------------------ offloaded validation


def busy_create_topic(name: str, seconds: float, threads: list[int]
                      ) -> Callable[[MetadataImage], ControllerResult[TopicResponse]]:
    """create_topic after ``seconds`` of pure-Python CPU work; records its thread."""
    inner = create_topic(name)

    def operation(image: MetadataImage) -> ControllerResult[TopicResponse]:
        threads.append(threading.get_ident())
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            sum(range(1000))
        return inner(image)

    return operation


def test_an_offloaded_write_leaves_the_loop_free_while_it_validates() -> None:
    raft = LocalRaft()
    threads: list[int] = []

    async def body(controller: QuorumController) -> tuple[float, int]:
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        result = await controller.write(busy_create_topic("heavy", 0.5, threads), TopicResponse,
                                        offload=True)
        task.cancel()
        assert result.committed and result.response.name == "heavy"
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        return max(gaps), len(ticks)

    longest_gap, ticks = run(raft, body)
    assert threads and threads[0] != threading.get_ident()
    # The loop kept turning through the half second of validation (a GIL turn is 5 ms).
    assert longest_gap < 0.2, longest_gap
    assert ticks > 20
    assert topic_names(raft) == ["heavy"]


def test_an_inline_write_validates_on_the_loop() -> None:
    raft = LocalRaft()
    threads: list[int] = []

    async def body(controller: QuorumController) -> int:
        await controller.write(busy_create_topic("light", 0.0, threads), TopicResponse)
        return threading.get_ident()

    loop_thread = run(raft, body)
    assert threads == [loop_thread]


def test_a_leadership_change_during_offloaded_validation_validates_again() -> None:
    raft = LocalRaft()
    calls: list[str] = []

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("first"), TopicResponse)
        inner = create_topic("second", calls)
        changed = False

        def operation(image: MetadataImage) -> ControllerResult[TopicResponse]:
            nonlocal changed
            if not changed:
                changed = True
                # As a lost and regained leadership does: the controller's listener runs on
                # the loop and drops the speculative image while this runs on the worker.
                loop = controller._loop
                assert loop is not None
                loop.call_soon_threadsafe(controller._on_leadership, True)
                time.sleep(0.05)
            return inner(image)

        result = await controller.write(operation, TopicResponse, offload=True)
        assert result.committed

    run(raft, body)
    assert calls == ["second", "second"]  # validated again after the change
    assert sorted(topic_names(raft)) == ["first", "second"]


def test_a_term_past_the_epoch_range_answers_not_controller_not_an_error() -> None:
    """At term 71776119061217291 a write must not raise struct.error (an HTTP 500)."""
    raft = LocalRaft()
    raft._epoch = 71776119061217291  # what one flipped journal byte made the quorum's term
    calls: list[str] = []

    async def body(controller: QuorumController) -> None:
        with pytest.raises(ApiException) as error:
            await controller.write(create_topic("orders", calls), TopicResponse)
        assert error.value.error is Errors.NOT_CONTROLLER
        assert "71776119061217291" in error.value.message

    run(raft, body)
    assert calls == []
    assert log_records(raft) == []


def test_local_raft_fails_a_batch_it_cannot_encode_as_a_proposal_error() -> None:
    raft = LocalRaft()
    future = raft.propose([batch([NoOpRecord()], epoch=2**31)])
    with pytest.raises(ProposalError, match="EPOCH_OUT_OF_RANGE"):
        future.result(1)
