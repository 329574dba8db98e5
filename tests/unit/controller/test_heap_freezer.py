"""The heap freezer moves live objects out of the collector's sight, without a collection."""

from __future__ import annotations

import asyncio
import contextlib
import gc

from chunkraft.controller.heap_freezer import run_heap_freezer


def test_objects_alive_at_a_tick_are_frozen() -> None:
    async def main() -> int:
        gc.unfreeze()
        kept = [object() for _ in range(1000)]
        task = asyncio.create_task(run_heap_freezer(interval=0.01))
        try:
            for _ in range(200):  # bounded: at most about 2 s
                await asyncio.sleep(0.01)
                if gc.get_freeze_count() >= len(kept):
                    break
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return gc.get_freeze_count()

    try:
        frozen = asyncio.run(main())
        assert frozen >= 1000
    finally:
        gc.unfreeze()  # leave the test process as it was
