"""Keeps the cyclic garbage collector's full passes short on a controller with a large image.

The image is millions of small, long-lived, acyclic objects. CPython runs a full collection each
time the heap has grown by a quarter, and a full collection walks every object: with a
1M-partition image that is a pause of a second or more with the GIL held, long enough for the
followers to stop hearing the leader and elect another (bench/RESULTS.md: 28 leader changes
while building 1M partitions, 9 with this). Freezing moves the objects alive now out of the
collector's sight (``gc.freeze``); reference counting still frees them when they die, so images
replaced by newer ones are freed as before.

Freezing is constant time, and a collection before it would walk the whole heap (1-2 s at 1M
partitions), so there is none. The price: reference cycles alive at a freeze that die later are
never collected (a few objects of the requests in flight). So the heap is frozen only after the
log has grown by ``min_records`` records since the last freeze, which is when the image (what
full collections would walk) has grown, not on every tick of a steady, small write load.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable

__all__ = ["run_heap_freezer"]

logger = logging.getLogger(__name__)


async def run_heap_freezer(
    log_offset: Callable[[], int], *, interval: float = 5.0, min_records: int = 100_000
) -> None:
    """Runs until cancelled: every ``interval`` seconds, if ``log_offset()`` has advanced by at
    least ``min_records`` since the last freeze, freezes everything alive."""
    frozen_at = -1
    while True:
        await asyncio.sleep(interval)
        offset = log_offset()
        if offset - frozen_at < min_records:
            continue
        started = time.monotonic()
        gc.freeze()
        frozen_at = offset
        logger.info("heap frozen at offset %d in %.3f s (%d objects frozen)", offset,
                    time.monotonic() - started, gc.get_freeze_count())
