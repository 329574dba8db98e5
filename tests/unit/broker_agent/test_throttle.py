"""The chunk copy throttle: an async token bucket on a fake clock."""

from __future__ import annotations

import asyncio

from chunkraft.broker_agent.throttle import Throttle


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_unlimited_never_waits() -> None:
    clock = FakeClock()
    throttle = Throttle(-1, clock=clock, sleep=clock.sleep)
    asyncio.run(throttle.acquire(10**9))
    assert clock.sleeps == [] and throttle.unlimited


def test_rate_bounds_the_bytes_per_second() -> None:
    clock = FakeClock()
    throttle = Throttle(1000, clock=clock, sleep=clock.sleep)

    async def copy() -> None:
        for _ in range(10):
            await throttle.acquire(500)

    asyncio.run(copy())
    # 5000 bytes at 1000 B/s with a one-second bucket full at the start: 4 seconds.
    assert abs(clock.now - 4.0) < 1e-9


def test_a_batch_bigger_than_the_bucket_passes_and_leaves_a_debt() -> None:
    clock = FakeClock()
    throttle = Throttle(100, clock=clock, sleep=clock.sleep)

    async def copy() -> None:
        await throttle.acquire(1000)  # the bucket is full: passes now, 900 bytes in debt
        assert clock.now == 0.0
        await throttle.acquire(100)   # pays the debt first: 9 s, then 1 s for itself

    asyncio.run(copy())
    assert abs(clock.now - 10.0) < 1e-9


def test_idle_time_refills_up_to_one_second() -> None:
    clock = FakeClock()
    throttle = Throttle(100, clock=clock, sleep=clock.sleep)
    asyncio.run(throttle.acquire(100))
    clock.now += 60
    assert throttle.delay_for(100) == 0.0
    assert abs(throttle.delay_for(100) - 0.0) < 1e-9
    asyncio.run(throttle.acquire(100))
    assert abs(throttle.delay_for(50) - 0.5) < 1e-9
