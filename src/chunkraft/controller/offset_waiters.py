"""OffsetWaiters: coroutines waiting for the applied metadata offset to reach theirs.

The metadata stream's long polls (every broker keeps one open on the leader) and reads that ask
for their own writes wait here. A wake-up resolves the futures of exactly the waiters whose
offset was reached, in the loop callback that brings the Raft thread's news onto the loop: no
task to schedule, no lock for each waiter to take in turn (an ``asyncio.Condition`` costs both,
and wakes every waiter to re-check, on every apply). When the node stops, :meth:`release` lets
every waiter go at once: a graceful HTTP stop waits for the requests in flight, and the
brokers' long polls (5 s each) held the leader's stop, while its listener no longer took
requests, for as long.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

__all__ = ["OffsetWaiters"]


class OffsetWaiters:
    """Waiters for an offset, woken in offset order by :meth:`wake`.

    Contract: :meth:`wait` returns True once ``applied()`` is at least its offset (at once if it
    already is), False when ``timeout`` passes first; :meth:`wake` must be called, on the loop,
    after every change of ``applied()``. Loop-confined: not thread-safe.
    """

    def __init__(self, applied: Callable[[], int]) -> None:
        self._applied = applied
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()  # ties: first come, first woken; futures never compared
        self._abandoned = 0
        self._released = False

    def __len__(self) -> int:
        return len(self._heap)

    async def wait(self, offset: int, timeout: float) -> bool:
        if self._applied() >= offset:
            return True
        if timeout <= 0 or self._released:
            return False
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (offset, next(self._order), future))
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._forget_abandoned()
        return self._applied() >= offset

    def _forget_abandoned(self) -> None:
        # A timed-out waiter's future is cancelled and stays in the heap until wake() reaches
        # it; with no writes for a while, long polls would pile them up, so the heap is rebuilt
        # without them once they are most of it.
        self._abandoned += 1
        if self._abandoned > 64 and self._abandoned * 2 > len(self._heap):
            self._heap = [item for item in self._heap if not item[2].done()]
            heapq.heapify(self._heap)
            self._abandoned = 0

    def release(self) -> None:
        """The node is stopping: every waiter returns now (True only if its offset was
        reached), and every later :meth:`wait` at once."""
        self._released = True
        for _offset, _order, future in self._heap:
            if not future.done():
                future.set_result(None)
        self._heap.clear()
        self._abandoned = 0

    def wake(self) -> None:
        """Resolves every waiter whose offset ``applied()`` has reached."""
        applied = self._applied()
        heap = self._heap
        while heap and (heap[0][0] <= applied or heap[0][2].done()):
            _offset, _order, future = heapq.heappop(heap)
            if future.done():
                self._abandoned = max(self._abandoned - 1, 0)
            else:
                future.set_result(None)
