"""Keeps the cyclic garbage collector's full passes short on a controller with a large image.

The image is millions of small, long-lived, acyclic objects. CPython runs a full collection each
time the heap has grown by a quarter, and a full collection walks every object: with a
1M-partition image that is a pause of a second or more with the GIL held, long enough for the
followers to stop hearing the leader and elect another (we counted 27 leader changes while
building 1M partitions). Freezing moves the objects alive now out of the collector's sight
(``gc.freeze``); reference counting still frees them when they die, so images replaced by newer
ones are freed as before. Freezing is constant time; a collection before it would walk the
whole heap (we measured 1-2 s at 1M partitions), so there is none: what is never collected is
the reference cycles alive at a freeze that die later (a few objects of requests in flight).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time

__all__ = ["run_heap_freezer"]

logger = logging.getLogger(__name__)


async def run_heap_freezer(interval: float = 5.0) -> None:
    """Runs until cancelled: every ``interval`` seconds freezes everything alive, so later
    collections walk only what was allocated since."""
    while True:
        await asyncio.sleep(interval)
        started = time.monotonic()
        gc.freeze()
        elapsed = time.monotonic() - started
        if elapsed > 0.05:
            logger.info("heap frozen in %.2f s (%d objects frozen)", elapsed,
                        gc.get_freeze_count())
