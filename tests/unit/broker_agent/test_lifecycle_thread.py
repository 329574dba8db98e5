"""LifecycleThread: the lifecycle heartbeats on its own thread while the main loop is blocked,
hands registration, unfencing and the shutdown permission back to the main loop, and stops its
thread when cancelled."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from chunkraft.broker_agent.lifecycle_thread import LifecycleThread
from tests.unit.broker_agent.test_lifecycle import FakeController, lifecycle


class ThreadedController(FakeController):
    """Records which thread each call ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()

    async def call(self, path: str, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        self.threads.add(threading.current_thread().name)
        return await super().call(path, body, **kwargs)

    async def aclose(self) -> None:
        return None


def test_heartbeats_go_on_while_the_main_loop_is_blocked() -> None:
    controller = ThreadedController()

    async def scenario() -> tuple[int, int, LifecycleThread]:
        agent = LifecycleThread(lifecycle(controller, lambda: controller.offset))
        task = asyncio.create_task(agent.run())
        await asyncio.wait_for(agent.unfenced.wait(), 2)
        assert agent.broker_epoch == 11 and not agent.fenced and agent.registrations == 1
        before = agent.lifecycle.heartbeats
        time.sleep(0.5)  # the main loop does blocking work: 25 heartbeat intervals of 20 ms
        during = agent.lifecycle.heartbeats - before
        # The main loop's copy catches up once the loop runs again.
        for _ in range(100):
            await asyncio.sleep(0.01)
            if agent.heartbeats >= before + during:
                break
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return during, agent.heartbeats - before, agent

    during, seen, agent = asyncio.run(scenario())
    assert during >= 5, f"only {during} heartbeats while the main loop was blocked"
    assert seen >= during
    assert controller.threads == {"broker-2-heartbeat"}
    assert agent.thread is not None and not agent.thread.is_alive()


def test_the_controlled_shutdown_is_asked_on_the_thread_and_allowed_on_the_main_loop() -> None:
    controller = ThreadedController()

    async def scenario() -> tuple[bool, LifecycleThread]:
        agent = LifecycleThread(lifecycle(controller, lambda: controller.offset))
        agent.lifecycle.heartbeat_interval = 5.0  # the shutdown must not wait for the interval
        task = asyncio.create_task(agent.run())
        await asyncio.wait_for(agent.unfenced.wait(), 2)
        allowed = await agent.controlled_shutdown(timeout=2)
        assert agent.shutting_down
        await asyncio.wait_for(task, 2)  # run() returns once the lifecycle ended
        return allowed, agent

    allowed, agent = asyncio.run(scenario())
    assert allowed and agent.fenced and agent.shut_down_allowed.is_set()
    assert controller.requests[-1][1]["want_shut_down"] is True
    assert agent.thread is not None and not agent.thread.is_alive()


def test_want_fence_reaches_the_next_heartbeat_at_once() -> None:
    controller = ThreadedController()

    async def scenario() -> None:
        agent = LifecycleThread(lifecycle(controller, lambda: controller.offset))
        agent.lifecycle.heartbeat_interval = 5.0
        task = asyncio.create_task(agent.run())
        await asyncio.wait_for(agent.unfenced.wait(), 2)
        agent.want_fence = True
        for _ in range(200):
            if any(body.get("want_fence") for _, body in controller.requests):
                break
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert any(body.get("want_fence") for _, body in controller.requests)


def test_without_a_thread_only_an_unregistered_broker_may_stop() -> None:
    agent = LifecycleThread(lifecycle(ThreadedController(), lambda: 0))
    assert asyncio.run(agent.controlled_shutdown(timeout=0.1)) is True
    assert agent.shutting_down
