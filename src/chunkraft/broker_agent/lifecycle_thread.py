"""LifecycleThread: a broker's registration and heartbeats on a thread and event loop of their own.

Why a thread: measured under produce load plus admin load (bench/bench_hostile.py), the broker's
``/broker/v1/status`` took up to 16.1 s to answer, and the heartbeat task, on the same asyncio
loop as produce, fetch, replication and disk work, waited as long: the controller fenced a
broker that was only busy (9 s session). Here the :class:`BrokerLifecycle` runs on its own
thread with its own loop and its own HTTP client to the controllers, so a heartbeat waits for
nothing on the data plane's loop. It still needs the GIL, but CPython hands the GIL to another
thread every ``sys.getswitchinterval()`` (5 ms) of pure-Python work and releases it around
blocking I/O (sockets, fsync), so a busy data plane delays a heartbeat by milliseconds, not
seconds. A process of its own would avoid even that, at the price of sharing the applied
metadata offset across processes; the thread is enough for a 9 s session.

What crosses between the threads, and why each crossing is safe:

- into the heartbeat thread: ``metadata_offset()`` and ``cluster_id()``, one attribute read of
  the metadata follower each (an int, a UUID: a single load, atomic under the GIL; a value one
  moment old only delays an unfence until the next poll); ``want_fence``, a bool the main loop
  writes and the next heartbeat reads; the start of a controlled shutdown, scheduled onto the
  heartbeat loop with ``call_soon_threadsafe`` (nothing else touches the lifecycle's state).
- out of it: after every answer, a frozen :class:`Standing` (epoch, fenced, shutdown allowed,
  counters) is handed to the main loop with ``call_soon_threadsafe``. Everything on the main
  loop (the data plane, the ReplicaManager's ``broker_epoch()``, the status routes) reads that
  copy, which changes between two of the main loop's callbacks, never in the middle of one:
  the same guarantee as when the lifecycle ran on the main loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from chunkraft.broker_agent.lifecycle import BrokerLifecycle
from chunkraft.protocol.brokers import BrokerRegistrationListener

__all__ = ["LifecycleThread", "Standing"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Standing:
    """The broker's standing with the controller as the heartbeat thread last saw it."""

    broker_epoch: int = -1
    fenced: bool = True
    caught_up: bool = False
    shutting_down: bool = False
    shut_down_allowed: bool = False
    heartbeats: int = 0
    heartbeat_failures: int = 0
    registrations: int = 0

    @classmethod
    def of(cls, lifecycle: BrokerLifecycle) -> Standing:
        """A copy of the lifecycle's state (call on the lifecycle's loop)."""
        return cls(broker_epoch=lifecycle.broker_epoch, fenced=lifecycle.fenced,
                   caught_up=lifecycle.caught_up, shutting_down=lifecycle.shutting_down,
                   shut_down_allowed=lifecycle.shut_down_allowed.is_set(),
                   heartbeats=lifecycle.heartbeats,
                   heartbeat_failures=lifecycle.heartbeat_failures,
                   registrations=lifecycle.registrations)


class LifecycleThread:
    """Runs one :class:`BrokerLifecycle` on a daemon thread with its own event loop.

    Contract: construct anywhere; :meth:`run`, :meth:`controlled_shutdown` and every read
    belong to one event loop, the broker's main loop (the "main loop"). :meth:`run` starts the
    thread and returns when the lifecycle ends (the controller allowed the shutdown);
    cancelling it stops the thread and waits for it (at most ``join_timeout``). The lifecycle's
    channel is used and closed on the heartbeat thread only, so it must not be shared with
    the main loop. Reads (:attr:`broker_epoch`, :attr:`fenced`, ...) come from the last
    :class:`Standing` handed over; :attr:`registered`, :attr:`unfenced` and
    :attr:`shut_down_allowed` are events of the main loop. See the module docstring.
    """

    def __init__(self, lifecycle: BrokerLifecycle, *, join_timeout: float = 5.0) -> None:
        self.lifecycle = lifecycle
        self.join_timeout = join_timeout
        self.standing = Standing.of(lifecycle)
        self.registered = asyncio.Event()
        self.unfenced = asyncio.Event()
        self.shut_down_allowed = asyncio.Event()
        self.thread: threading.Thread | None = None
        self._main: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the heartbeat thread's
        self._task: asyncio.Task[object] | None = None
        self._stopping = False
        self._started = threading.Event()
        self._lock = threading.Lock()  # orders _stopping against the thread publishing _task
        lifecycle.on_change = self._publish

    # ------------------------------------------------------------------ reads (main loop)

    @property
    def node_id(self) -> int:
        return self.lifecycle.node_id

    @property
    def listener(self) -> BrokerRegistrationListener:
        return self.lifecycle.listener

    @property
    def rack(self) -> str | None:
        return self.lifecycle.rack

    @property
    def broker_epoch(self) -> int:
        return self.standing.broker_epoch

    @property
    def fenced(self) -> bool:
        return self.standing.fenced

    @property
    def caught_up(self) -> bool:
        return self.standing.caught_up

    @property
    def shutting_down(self) -> bool:
        return self.standing.shutting_down

    @property
    def heartbeats(self) -> int:
        return self.standing.heartbeats

    @property
    def heartbeat_failures(self) -> int:
        return self.standing.heartbeat_failures

    @property
    def registrations(self) -> int:
        return self.standing.registrations

    @property
    def want_fence(self) -> bool:
        return self.lifecycle.want_fence

    @want_fence.setter
    def want_fence(self, value: bool) -> None:
        # A bool store is atomic; the heartbeat thread reads it when it builds its next
        # heartbeat, which the wake-up sends at once.
        self.lifecycle.want_fence = value
        self._on_heartbeat_loop(self.lifecycle.wake)

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        """Runs the lifecycle on its thread until it ends; cancellation stops the thread."""
        self._main = asyncio.get_running_loop()
        done: asyncio.Future[None] = self._main.create_future()
        self.thread = threading.Thread(
            target=self._thread_main, args=(done,), daemon=True,
            name=f"broker-{self.lifecycle.node_id}-heartbeat")
        self.thread.start()
        try:
            await done
        finally:
            self._stop_thread()
            thread = self.thread
            await asyncio.to_thread(thread.join, self.join_timeout)
            if thread.is_alive():
                logger.warning("broker %d: the heartbeat thread did not stop within %.1f s",
                               self.lifecycle.node_id, self.join_timeout)

    async def controlled_shutdown(self, timeout: float) -> bool:
        """Asks the controller to let this broker go (heartbeats ``want_shut_down``); whether it
        said so within ``timeout``. Without a running heartbeat thread only a broker never
        registered may go (it leads nothing)."""
        self.standing = replace(self.standing, shutting_down=True)
        if not self._on_heartbeat_loop(self.lifecycle.begin_shutdown):
            return self.standing.broker_epoch < 0
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.shut_down_allowed.wait()
        return self.shut_down_allowed.is_set()

    def _thread_main(self, done: asyncio.Future[None]) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException:  # the thread's end is reported below either way
            logger.exception("broker %d: the heartbeat thread failed", self.lifecycle.node_id)
        finally:
            self._on_main_loop(lambda: _resolve(done))

    async def _serve(self) -> None:
        with self._lock:
            if self._stopping:
                return
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
        self._started.set()
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self.lifecycle.run()
        finally:
            with contextlib.suppress(Exception):
                await self.lifecycle.channel.aclose()

    def _stop_thread(self) -> None:
        with self._lock:
            self._stopping = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the thread has ended
                loop.call_soon_threadsafe(task.cancel)

    # ------------------------------------------------------------------ crossing threads

    def _on_heartbeat_loop(self, action: Callable[[], None]) -> bool:
        """Schedules ``action`` on the heartbeat loop; False when it is not running."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return False
        try:
            loop.call_soon_threadsafe(action)
        except RuntimeError:
            return False
        return True

    def _on_main_loop(self, action: Callable[[], object]) -> None:
        main = self._main
        if main is None or main.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the main loop is shutting down
            main.call_soon_threadsafe(action)

    def _publish(self) -> None:
        """On the heartbeat loop: hands the lifecycle's new state to the main loop."""
        standing = Standing.of(self.lifecycle)
        if self._main is None:  # not run by run() (tests driving the lifecycle directly)
            self._apply(standing)
            return
        self._on_main_loop(lambda: self._apply(standing))

    def _apply(self, standing: Standing) -> None:
        """On the main loop: the new standing, and the events it sets or clears."""
        # A shutdown the main loop started stays started, even against an older snapshot.
        self.standing = replace(standing, shutting_down=standing.shutting_down
                                or self.standing.shutting_down)
        if standing.broker_epoch >= 0:
            self.registered.set()
        if standing.broker_epoch >= 0 and not standing.fenced:
            self.unfenced.set()
        else:
            self.unfenced.clear()
        if standing.shut_down_allowed:
            self.shut_down_allowed.set()


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
