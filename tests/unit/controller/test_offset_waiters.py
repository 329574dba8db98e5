"""OffsetWaiters: woken exactly when the applied offset reaches theirs, never left behind."""

from __future__ import annotations

import asyncio

from chunkraft.controller.offset_waiters import OffsetWaiters


class _Applied:
    def __init__(self) -> None:
        self.offset = 10

    def __call__(self) -> int:
        return self.offset


def test_an_offset_already_applied_returns_at_once_without_waiting() -> None:
    applied = _Applied()
    waiters = OffsetWaiters(applied)
    assert asyncio.run(waiters.wait(10, 5.0)) is True
    assert asyncio.run(waiters.wait(11, 0)) is False
    assert len(waiters) == 0


def test_wake_resolves_only_the_waiters_whose_offset_was_reached() -> None:
    async def scenario() -> list[int]:
        applied = _Applied()
        waiters = OffsetWaiters(applied)
        woken: list[int] = []

        async def wait(offset: int) -> None:
            if await waiters.wait(offset, 5.0):
                woken.append(offset)

        tasks = [asyncio.create_task(wait(offset)) for offset in (13, 11, 12, 11)]
        await asyncio.sleep(0)
        applied.offset = 11
        waiters.wake()
        for _ in range(20):  # a woken waiter resumes within a few loop turns
            await asyncio.sleep(0)
        assert sorted(woken) == [11, 11] and len(waiters) == 2
        applied.offset = 13
        waiters.wake()
        await asyncio.gather(*tasks)
        return woken

    assert sorted(asyncio.run(scenario())) == [11, 11, 12, 13]


def test_a_timed_out_waiter_says_false_and_abandoned_ones_do_not_pile_up() -> None:
    async def scenario() -> None:
        applied = _Applied()
        waiters = OffsetWaiters(applied)
        results = await asyncio.gather(*(waiters.wait(11, 0.001) for _ in range(200)))
        assert results == [False] * 200
        # Long polls with no write meanwhile: the heap is rebuilt without them.
        assert len(waiters) <= 130
        applied.offset = 11
        waiters.wake()
        assert len(waiters) == 0

    asyncio.run(scenario())


def test_a_waiter_that_times_out_just_as_its_offset_arrives_says_true() -> None:
    async def scenario() -> bool:
        applied = _Applied()
        waiters = OffsetWaiters(applied)

        async def apply_late() -> None:
            await asyncio.sleep(0.02)
            applied.offset = 11  # applied, but wake() not yet called when the wait times out

        task = asyncio.create_task(apply_late())
        result = await waiters.wait(11, 0.05)
        await task
        return result

    assert asyncio.run(scenario()) is True


def test_release_lets_every_waiter_go_at_once_and_later_waits_do_not_wait() -> None:
    async def scenario() -> tuple[list[bool], float, bool, int]:
        applied = _Applied()
        waiters = OffsetWaiters(applied)
        loop = asyncio.get_running_loop()
        started = loop.time()
        tasks = [asyncio.create_task(waiters.wait(offset, 30.0)) for offset in (11, 12)]
        await asyncio.sleep(0)
        applied.offset = 11  # reached by the first, not by the second, and no wake()
        waiters.release()
        results = list(await asyncio.wait_for(asyncio.gather(*tasks), 5.0))
        later = await asyncio.wait_for(waiters.wait(13, 30.0), 5.0)
        return results, loop.time() - started, later, len(waiters)

    results, seconds, later, left = asyncio.run(scenario())
    assert results == [True, False]
    assert seconds < 5.0 and later is False and left == 0
