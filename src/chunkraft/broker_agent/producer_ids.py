"""ProducerIdManager: a broker's producer ids, in blocks from the controller (KIP-730).

A broker hands out producer ids from a block ``[start, start + len)`` that the controller
allocated to it (``POST /controller/v1/allocate-producer-ids``, with the broker's id and current
epoch). When 90% of the block is used the next block is fetched in the background, so an
InitProducerId rarely waits for the controller (Kafka's ``RPCProducerIdManager``). Blocks never
overlap (the controller commits each one), so ids are unique across the cluster; ids of a
block this broker dropped (a restart) are simply never used.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)

__all__ = ["ALLOCATE_PRODUCER_IDS_PATH", "PREFETCH_RATIO", "ProducerIdManager"]

ALLOCATE_PRODUCER_IDS_PATH = "/controller/v1/allocate-producer-ids"
PREFETCH_RATIO = 0.9
"""Fetch the next block once this share of the current one is handed out (Kafka's 90%)."""
RETRY_BACKOFF_S = 0.05
"""After a failed allocation, callers are refused (retriable) this long before another try,
so a controller outage does not turn every InitProducerId into a controller call."""


class _Channel(Protocol):
    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


class ProducerIdManager:
    """Unique producer ids for one broker, from controller-allocated blocks.

    ``controller.call(path, body)`` is the broker's controller channel (it retries; when it
    gives up it raises, and the caller gets COORDINATOR_LOAD_IN_PROGRESS, retriable, as Kafka's
    InitProducerId does while no block is available). ``broker_epoch()`` is read at each
    allocation (the controller refuses a stale one with STALE_BROKER_EPOCH, also passed on as
    retriable). Not thread-safe: used only on the broker's event loop; concurrent
    :meth:`next_id` calls share one allocation in flight.
    """

    def __init__(self, controller: _Channel, broker_id: int, broker_epoch: Callable[[], int],
                 *, prefetch_ratio: float = PREFETCH_RATIO,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.controller = controller
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.prefetch_ratio = prefetch_ratio
        self.monotonic = monotonic
        self._next = 0
        self._end = 0  # exclusive end of the current block; _next == _end: nothing left
        self._block_len = 0
        self._spare: tuple[int, int] | None = None  # the prefetched block (start, end)
        self._fetching: asyncio.Task[tuple[int, int]] | None = None
        self._failed_until = 0.0
        self.blocks_allocated = 0
        # The broker epoch each held block was allocated for (the exports report it).
        self._epochs: dict[tuple[int, int], int] = {}
        self._asked_epoch = -1

    def blocks(self) -> list[tuple[int, int, int]]:
        """``(broker_epoch, start, end)`` of the blocks held: the current one (once any was
        allocated) and a prefetched one; ``end`` is exclusive, oldest first."""
        held: list[tuple[int, int]] = []
        if self._block_len > 0:
            held.append((self._end - self._block_len, self._end))
        if self._spare is not None:
            held.append(self._spare)
        return [(self._epochs.get(block, -1), block[0], block[1]) for block in held]

    @property
    def remaining(self) -> int:
        """Ids left in the current block (not counting a prefetched one)."""
        return self._end - self._next

    async def next_id(self) -> int:
        """A producer id no other call (on any broker) ever gets; raises ApiException
        (COORDINATOR_LOAD_IN_PROGRESS, retriable) when no block could be had."""
        while self._next >= self._end:
            if self._spare is not None:
                self._use(self._spare)
                self._spare = None
                break
            if self._fetching is None and self.monotonic() < self._failed_until:
                raise ApiException(Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                   "no producer id block: the last allocation failed; retry")
            block = await asyncio.shield(self._fetch_task())
            # Blocks come in increasing order: one starting below the current end was already
            # used (by another waiter of the same allocation); then loop and look again.
            if self._next >= self._end and block[0] >= self._end:
                self._use(block)
                if self._spare == block:
                    self._spare = None
        producer_id = self._next
        self._next += 1
        if (self._fetching is None and self._spare is None
                and self._next - (self._end - self._block_len)
                >= self.prefetch_ratio * self._block_len):
            self._fetch_task()
        return producer_id

    async def close(self) -> None:
        """Cancels an allocation in flight."""
        task, self._fetching = self._fetching, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def _use(self, block: tuple[int, int]) -> None:
        self._next, self._end = block
        self._block_len = block[1] - block[0]

    def _fetch_task(self) -> asyncio.Task[tuple[int, int]]:
        if self._fetching is None:
            task = asyncio.get_running_loop().create_task(self._allocate())
            # A failed prefetch nobody awaits must not log "exception never retrieved".
            task.add_done_callback(_retrieve)
            self._fetching = task
        return self._fetching

    async def _allocate(self) -> tuple[int, int]:
        try:
            block = await self._ask()
        except ApiException:
            self._failed_until = self.monotonic() + RETRY_BACKOFF_S
            raise
        finally:
            self._fetching = None
        self.blocks_allocated += 1
        kept = {b for b in ((self._end - self._block_len, self._end), self._spare) if b}
        self._epochs = {b: e for b, e in self._epochs.items() if b in kept}
        self._epochs[block] = self._asked_epoch
        if self._next < self._end:  # a prefetch: keep it for when this block runs out
            self._spare = block
        return block

    async def _ask(self) -> tuple[int, int]:
        request = AllocateProducerIdsRequest(broker_id=self.broker_id,
                                             broker_epoch=self.broker_epoch())
        self._asked_epoch = request.broker_epoch
        try:
            payload = await self.controller.call(ALLOCATE_PRODUCER_IDS_PATH,
                                                 request.model_dump(mode="json"))
        except Exception as error:  # the channel gave up: retriable for the producer
            raise ApiException(Errors.COORDINATOR_LOAD_IN_PROGRESS,
                               f"no producer id block from the controller: {error}") from error
        response = AllocateProducerIdsResponse.model_validate(payload)
        if response.error_code != 0:
            refusal = Errors.for_code(response.error_code)
            raise ApiException(Errors.COORDINATOR_LOAD_IN_PROGRESS,
                               f"the controller refused a producer id block: {refusal.name}: "
                               f"{response.error_message or refusal.message}")
        if response.producer_id_len <= 0 or response.producer_id_start < 0:
            raise ApiException(Errors.COORDINATOR_LOAD_IN_PROGRESS,
                               "the controller answered an empty producer id block")
        return response.producer_id_start, response.producer_id_start + response.producer_id_len


def _retrieve(task: asyncio.Task[tuple[int, int]]) -> None:
    if not task.cancelled():
        task.exception()
