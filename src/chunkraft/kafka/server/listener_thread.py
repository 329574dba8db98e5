"""A KafkaServer on a thread and an event loop of its own.

A broker's main event loop also applies metadata deltas, and creating a few hundred partition
logs a second keeps it busy for long stretches: a Kafka client's Metadata request queued
behind that waited seconds (``bench_hostile.py``'s baseline, p99 3.8 s, while the same broker
answered in 7 ms when idle). On a loop of its own the listener reads the image (immutable; one
attribute read) whenever the interpreter lets its thread run, which the GIL's switch interval
bounds to milliseconds. Work that belongs to the main loop (a route of the broker's app) is
handed there with :func:`on_loop`.

``start`` returns once every listener is bound (or raises what binding raised); ``stop``
closes the server on its loop and joins the thread, bounded in time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from chunkraft.kafka.server.listener import KafkaServer
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest

__all__ = ["KafkaListenerThread", "on_loop"]

_log = logging.getLogger(__name__)
T = TypeVar("T")
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


def on_loop(handler: ApiHandler, loop: asyncio.AbstractEventLoop) -> ApiHandler:
    """``handler`` run on ``loop`` (the main one) and awaited from the listener's loop."""

    async def handle(request: KafkaRequest) -> Any:
        future = asyncio.run_coroutine_threadsafe(_call(handler.handle, request), loop)
        return await asyncio.wrap_future(future)

    return ApiHandler(handler.api_key, handler.min_version, handler.max_version, handle,
                      private=handler.private,
                      before_authentication=handler.before_authentication)


async def _call(function: Callable[[KafkaRequest], Awaitable[T]], request: KafkaRequest) -> T:
    return await function(request)


class KafkaListenerThread:
    """Runs ``build()`` (a KafkaServer, made on the new loop so that everything it creates
    belongs there) on a daemon thread named ``name``."""

    def __init__(self, build: Callable[[], KafkaServer], name: str = "kafka-listener") -> None:
        self._build = build
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started: concurrent.futures.Future[KafkaServer] = concurrent.futures.Future()
        self.server: KafkaServer | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._start())
            if self._started.exception() is None:
                self._loop.run_forever()
        finally:
            self._loop.close()

    async def _start(self) -> None:
        try:
            server = self._build()
            await server.start()
        except BaseException as error:
            self._started.set_exception(error)
            return
        self.server = server
        self._started.set_result(server)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    async def start(self) -> KafkaServer:
        """Starts the thread; the server once it serves (raises what starting raised)."""
        self._thread.start()
        return await asyncio.wrap_future(self._started)

    async def stop(self) -> None:
        """Closes the server on its loop, stops the loop and joins the thread."""
        if not self._thread.is_alive():
            return
        if self.server is not None:
            closing = asyncio.run_coroutine_threadsafe(self.server.close(), self._loop)
            try:
                await asyncio.wait_for(asyncio.wrap_future(closing), STOP_TIMEOUT)
            except (TimeoutError, Exception):
                _log.exception("closing the Kafka listener failed")
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join, STOP_TIMEOUT)
