"""An async token bucket for the byte rate of chunk copies (``chunk.copy.throttle...``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

__all__ = ["Throttle"]


def _monotonic_s() -> float:
    return time.monotonic()


class Throttle:
    """A token bucket of ``rate`` bytes per second holding at most one second of tokens.

    ``await acquire(n)`` returns once ``n`` bytes may pass; a rate <= 0 means unlimited. A request
    larger than the bucket is let through once the bucket is full and leaves a debt, so a single
    big batch is never refused, it only delays the next copies (Kafka's quota throttling works
    the same way: the overshoot is paid for afterwards). Shared by every copy of one broker, so
    the rate is the broker's total. Not thread-safe: one event loop.
    """

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = _monotonic_s,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._rate = float(rate)
        self._clock = clock
        self._sleep = sleep
        self._tokens = max(self._rate, 0.0)
        self._last = clock()

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def unlimited(self) -> bool:
        return self._rate <= 0

    def set_rate(self, rate: float) -> None:
        """Changes the rate; the tokens already saved stay (capped at the new bucket size)."""
        self._refill()
        self._rate = float(rate)
        if self._rate > 0:
            self._tokens = min(self._tokens, self._rate)

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        if self._rate > 0:
            self._tokens = min(self._rate, self._tokens + elapsed * self._rate)

    def delay_for(self, size: int) -> float:
        """Seconds until ``size`` bytes may pass (0: now); does not take the tokens."""
        if self._rate <= 0:
            return 0.0
        self._refill()
        needed = min(float(size), self._rate)  # a batch bigger than the bucket waits for a full one
        if self._tokens >= needed:
            return 0.0
        return (needed - self._tokens) / self._rate

    async def acquire(self, size: int) -> None:
        """Waits until ``size`` bytes may pass, then takes them (possibly into debt)."""
        if self._rate <= 0 or size <= 0:
            return
        while True:
            delay = self.delay_for(size)
            if delay <= 0:
                self._tokens -= float(size)
                return
            await self._sleep(delay)
