"""Background coroutines of the replica code: run them without losing their failures."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["logged"]

log = logging.getLogger(__name__)


async def logged(work: Callable[[], Awaitable[None]], name: str) -> None:
    """Runs a background coroutine, logging (not losing) an unexpected failure. Takes a
    factory, so a task cancelled before it starts leaves no coroutine never awaited."""
    try:
        await work()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("%s failed", name)
