"""A partition replica's state: the wake-up signal, roles and append gating."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from chunkraft.broker_agent.partition import Partition, Role, Signal
from chunkraft.broker_agent.storage import LogConfig, UnifiedLog


def test_signal_wakes_waiters_and_times_out() -> None:
    async def scenario() -> None:
        signal = Signal()
        assert not await signal.wait(0.01)
        waiter = asyncio.ensure_future(signal.wait(5))
        await asyncio.sleep(0)
        signal.notify()
        assert await asyncio.wait_for(waiter, 1)
        event = signal.event()
        signal.notify()
        assert event.is_set() and not signal.event().is_set()

    asyncio.run(scenario())


def test_only_a_ready_leader_accepts_appends_and_close_stops_tasks(tmp_path: Path) -> None:
    async def scenario() -> None:
        log_ = UnifiedLog.open(tmp_path / "t-0", uuid.UUID(int=3), LogConfig())
        partition = Partition("t", uuid.UUID(int=3), 0, log_)
        assert partition.label == "t-0" and partition.leader_epoch == -1
        assert not partition.accepts_appends()
        partition.role = Role.LEADER
        assert partition.accepts_appends()
        partition.appends_paused = True
        assert not partition.accepts_appends()
        partition.appends_paused = False
        partition.overlap_pending = True
        assert not partition.accepts_appends()
        sleeper = asyncio.ensure_future(asyncio.sleep(60))
        partition.copies[5] = sleeper
        partition.fetcher = asyncio.ensure_future(asyncio.sleep(60))
        partition.close()
        await asyncio.sleep(0)
        assert sleeper.cancelled() and partition.fetcher is None and partition.copies == {}
        assert partition.closed and partition.role is Role.NONE
        log_.close()

    asyncio.run(scenario())
