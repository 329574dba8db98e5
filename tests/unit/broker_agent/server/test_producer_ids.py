"""ProducerIdManager: blocks from the controller, prefetch at 90%, failures retriable."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from chunkraft.broker_agent.producer_ids import ALLOCATE_PRODUCER_IDS_PATH, ProducerIdManager
from chunkraft.error_codes import ApiException, Errors


@dataclass
class FakeController:
    """Hands out blocks of ``size`` ids from ``next``; ``gate`` (if set) holds each answer."""

    size: int = 10
    next: int = 0
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    gate: asyncio.Event | None = None
    fail: Exception | None = None
    refuse: int = 0

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((path, body))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        if self.refuse:
            return {"error_code": self.refuse, "error_message": "stale"}
        start, self.next = self.next, self.next + self.size
        return {"error_code": 0, "producer_id_start": start, "producer_id_len": self.size}


def test_ids_come_from_blocks_and_the_next_block_is_prefetched_at_ninety_percent() -> None:
    async def scenario() -> None:
        controller = FakeController()
        manager = ProducerIdManager(controller, broker_id=2, broker_epoch=lambda: 7)
        ids = [await manager.next_id() for _ in range(8)]
        assert ids == list(range(8))
        assert controller.calls == [(ALLOCATE_PRODUCER_IDS_PATH,
                                     {"broker_id": 2, "broker_epoch": 7})]
        await manager.next_id()  # the 9th of 10: 90% used, prefetch starts
        await asyncio.sleep(0)
        assert len(controller.calls) == 2
        ids = [await manager.next_id() for _ in range(11)]
        assert ids == list(range(9, 20))
        await asyncio.sleep(0)
        assert manager.blocks_allocated == 3  # the third prefetched at 19
        await manager.close()

    asyncio.run(scenario())


def test_concurrent_callers_share_one_allocation_and_get_distinct_ids() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        controller = FakeController(size=1000, gate=gate)
        manager = ProducerIdManager(controller, broker_id=0, broker_epoch=lambda: 1)
        waiting = [asyncio.create_task(manager.next_id()) for _ in range(50)]
        await asyncio.sleep(0)
        gate.set()
        ids = await asyncio.gather(*waiting)
        assert sorted(ids) == list(range(50))
        assert len(controller.calls) == 1

    asyncio.run(scenario())


def test_a_block_running_out_during_a_prefetch_waits_for_it() -> None:
    async def scenario() -> None:
        controller = FakeController(size=2)
        manager = ProducerIdManager(controller, broker_id=0, broker_epoch=lambda: 1)
        assert [await manager.next_id() for _ in range(6)] == list(range(6))
        assert len(set(await asyncio.gather(*(manager.next_id() for _ in range(9))))) == 9
        await manager.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("failure", ["raises", "refuses"])
def test_a_failed_allocation_is_retriable_and_backs_off(failure: str) -> None:
    async def scenario() -> None:
        now = [100.0]
        controller = FakeController()
        if failure == "raises":
            controller.fail = RuntimeError("no controller")
        else:
            controller.refuse = Errors.STALE_BROKER_EPOCH.code
        manager = ProducerIdManager(controller, broker_id=0, broker_epoch=lambda: 1,
                                    monotonic=lambda: now[0])
        with pytest.raises(ApiException) as raised:
            await manager.next_id()
        assert raised.value.error is Errors.COORDINATOR_LOAD_IN_PROGRESS
        with pytest.raises(ApiException):  # within the backoff: no second call
            await manager.next_id()
        assert len(controller.calls) == 1
        controller.fail, controller.refuse = None, 0
        now[0] += 1.0
        assert await manager.next_id() == 0

    asyncio.run(scenario())


def test_blocks_lists_the_current_and_the_prefetched_block_with_their_epochs() -> None:
    async def scenario() -> None:
        epoch = [7]
        manager = ProducerIdManager(FakeController(), broker_id=2, broker_epoch=lambda: epoch[0])
        assert manager.blocks() == []
        await manager.next_id()
        assert manager.blocks() == [(7, 0, 10)]
        epoch[0] = 8
        for _ in range(8):  # the 9th id of 10 starts the prefetch
            await manager.next_id()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert manager.blocks() == [(7, 0, 10), (8, 10, 20)]
        for _ in range(2):
            await manager.next_id()
        assert manager.blocks() == [(8, 10, 20)]
        await manager.close()

    asyncio.run(scenario())
