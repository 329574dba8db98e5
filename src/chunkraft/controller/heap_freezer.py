"""Keeps the cyclic garbage collector's full passes short on a controller with a large image.

The image is millions of small, long-lived, acyclic objects. CPython runs a full collection each
time the heap has grown by a quarter, and a full collection walks every object: with a
1M-partition image that is a pause of a second or more with the GIL held, long enough for the
followers to stop hearing the leader and elect another (bench/RESULTS.md: 28 leader changes
while building 1M partitions, 9 with this). Freezing moves the objects alive now out of the
collector's sight (``gc.freeze``); reference counting still frees them when they die, so images
replaced by newer ones are freed as before.

A full collection walks every object not frozen, so what bounds its pause is how much grew
since the last freeze. With a freeze only every 100,000 records, a small cluster under a steady
createTopics load (150 a second, 3 controllers on 2 cores) had full collections of 0.16-0.46 s
at 10,000-25,000 topics (measured with a ``gc.callbacks`` timer): the Raft thread logged stalls
of 0.26-0.46 s, and elections followed (the election timeout is 0.2-0.5 s). So the heap is
frozen at the first tick after start (the modules, the loaded image) and then each time the log
grew by ``min_records`` (2,000) records.

Freezing is constant time; a full collection before it would walk the whole heap (1-2 s at 1M
partitions), so there is none, only a young one (generations 0 and 1: the objects of the last
moments), which frees the cycles of finished requests first. The price: a reference cycle that
is alive and old at a freeze and dies later is never collected (a few objects of the requests
in flight), which is why the log's growth, not the clock, paces the freezes.
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
    log_offset: Callable[[], int], *, interval: float = 1.0, min_records: int = 2_000
) -> None:
    """Runs until cancelled: at the first tick, then every ``interval`` seconds if
    ``log_offset()`` has advanced by at least ``min_records`` since the last freeze, collects
    the young generations and freezes everything alive."""
    frozen_at: int | None = None
    while True:
        await asyncio.sleep(interval)
        offset = log_offset()
        if frozen_at is not None and offset - frozen_at < min_records:
            continue
        started = time.monotonic()
        gc.collect(1)
        gc.freeze()
        frozen_at = offset
        logger.debug("heap frozen at offset %d in %.3f s (%d objects frozen)", offset,
                    time.monotonic() - started, gc.get_freeze_count())
