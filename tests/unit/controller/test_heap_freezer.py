"""The heap freezer moves live objects out of the collector's sight, without a collection."""

from __future__ import annotations

import asyncio
import contextlib
import gc

import pytest

from chunkraft.controller.heap_freezer import run_heap_freezer


def test_the_heap_is_frozen_only_once_the_log_has_grown_enough() -> None:
    offset = [200]

    async def main() -> tuple[int, int, int]:
        gc.unfreeze()
        kept = [object() for _ in range(1000)]
        task = asyncio.create_task(
            run_heap_freezer(lambda: offset[0], interval=0.01, min_records=100))
        try:
            await asyncio.sleep(0.05)  # 200 records since "never": the first tick freezes
            first = gc.get_freeze_count()
            gc.unfreeze()
            offset[0] = 250  # 50 more: not enough growth since that freeze
            await asyncio.sleep(0.05)
            small = gc.get_freeze_count()
            offset[0] = 400  # 200 more: freeze again
            await asyncio.sleep(0.05)
            return first, small, gc.get_freeze_count()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            del kept

    try:
        first, after_small_growth, after_large_growth = asyncio.run(main())
        assert first >= 1000
        assert after_small_growth == 0
        assert after_large_growth >= 1000
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("offset", [10**6, 0])
def test_objects_alive_at_the_first_tick_are_frozen_whatever_the_offset(offset: int) -> None:
    """The modules and the image loaded at start are frozen at once, not after min_records."""
    async def main() -> int:
        gc.unfreeze()
        kept = [object() for _ in range(1000)]
        task = asyncio.create_task(run_heap_freezer(lambda: offset, interval=0.01))
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
        assert asyncio.run(main()) >= 1000
    finally:
        gc.unfreeze()  # leave the test process as it was
