"""The producer's shared state, its event loop thread and its metadata lookups.

:class:`ProducerCore` is the base of :class:`~chunkraft.client.producer.Producer`: it holds the
state that ``send`` callers share with the sender (under one lock) and the state only the
sender's event loop touches, starts that loop in a daemon thread, and finds partition counts and
leaders. The transaction calls (``producer_transactions``), the sender (``producer_sender``) and
the public API (``producer``) build on it, one module each, imported one way.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import ssl
import threading
import time
import uuid
from collections import deque
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from chunkraft.client.metadata import ClusterMetadata, MetadataUnavailableError
from chunkraft.client.partitioner import StickyPartitioner
from chunkraft.client.producer_batches import ProducerBatch, ProducerError
from chunkraft.client.producer_rpc import BrokerRpc
from chunkraft.error_codes import Errors

logger = logging.getLogger(__name__)

__all__ = ["FENCED", "PartitionState", "ProducerCore", "TxnState"]

T = TypeVar("T")

FENCED = frozenset({Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH})


class TxnState(enum.Enum):
    """Where a producer is in Kafka's transaction state machine (NONE: not transactional)."""

    NONE = "none"  # not transactional
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    FATAL = "fatal"


@dataclass
class PartitionState:
    """The sender's state of one partition (event loop only)."""

    queue: deque[ProducerBatch] = field(default_factory=deque)
    in_flight: int = 0
    next_sequence: int = 0
    acked_sequence: int = 0  # the sequence after the highest acknowledged batch
    known: bool = False
    """The partition's leader acknowledged a batch of the current producer id and epoch. Until
    then one batch at a time: a leader accepts any first sequence of a producer it does not
    know, so a second batch overtaking the first on another connection would be taken."""
    backoff_until: float = 0.0


class ProducerCore:
    """The state and loop thread of Kafka's producer: not used alone, create a
    :class:`~chunkraft.client.producer.Producer` (whose docstring says what the options of
    ``__init__`` mean). ``send`` callers and the loop share what ``_lock`` guards; the rest
    belongs to the loop thread.
    """

    def __init__(self, bootstrap: list[str], *, token: str | None = None,
                 verify: ssl.SSLContext | bool = True, acks: int = -1,
                 enable_idempotence: bool = True, transactional_id: str | None = None,
                 transaction_timeout_ms: int = 60_000, linger_ms: float = 5,
                 batch_size: int = 100, delivery_timeout_ms: int = 120_000,
                 retry_backoff_ms: int = 100, request_timeout_ms: int = 30_000,
                 max_in_flight: int = 5, max_block_ms: int = 60_000,
                 metadata_max_age_ms: int = 300_000, client_id: str | None = None,
                 transport: httpx.BaseTransport | None = None,
                 async_transport: httpx.AsyncBaseTransport | None = None) -> None:
        if acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1, 0 or 1, not {acks}")
        if transactional_id is not None and acks != -1:
            raise ValueError("a transactional producer needs acks=-1")
        if batch_size < 1 or max_in_flight < 1:
            raise ValueError("batch_size and max_in_flight must be positive")
        self.client_id = client_id or f"producer-{uuid.uuid4().hex[:8]}"
        self.acks = acks
        self.transactional_id = transactional_id
        self.idempotent = transactional_id is not None or (enable_idempotence and acks == -1)
        self.transaction_timeout_ms = transaction_timeout_ms
        self.linger = linger_ms / 1000
        self.batch_size = batch_size
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self.max_block = max_block_ms / 1000
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.metadata = ClusterMetadata(bootstrap, token=token, verify=verify,
                                        timeout=request_timeout_ms / 1000 + 5,
                                        transport=transport)
        self._partitioner = StickyPartitioner(start=hash(self.client_id) & 0xFFFF)
        # Shared with send() callers: guarded by _lock.
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._open: dict[tuple[str, int], ProducerBatch] = {}
        self._closed_batches: list[ProducerBatch] = []
        self._unfinished = 0
        self._flushing = 0
        self._order = 0
        self._closed = False
        self._idle = True  # the sender waits for a wake-up, not for a lingering batch
        # The event loop's own state.
        self._states: dict[tuple[str, int], PartitionState] = {}
        self._producer_id = -1
        self._producer_epoch = -1
        self._held: dict[str, list[ProducerBatch]] = {}
        self._held_at: dict[str, int] = {}
        self._refreshes = 0
        self._refresh_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._txn = TxnState.NONE if transactional_id is None else TxnState.UNINITIALIZED
        self._txn_partitions: set[tuple[str, int]] = set()
        self._txn_offsets = False
        self._txn_error: BaseException | None = None
        self._fatal: BaseException | None = None
        self._stopping = False
        self._executor_gone: RuntimeError | None = None
        """Set (loop thread) when a worker thread could not be had: the interpreter is exiting,
        and the sender stops instead of retrying for ever (see _refresh)."""
        self._rpc_options = {"token": token, "verify": verify,
                             "timeout": request_timeout_ms / 1000 + 5,
                             "retry_backoff": self.retry_backoff, "transport": async_transport}
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, name=f"{self.client_id}-sender",
                                        daemon=True)
        self._thread.start()
        self._ready.wait()

    # ------------------------------------------------------------------ the loop thread

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        # The producer's own worker thread for metadata refreshes (a blocking httpx call),
        # shut down with the loop: nothing of the producer outlives close().
        self._refresher = ThreadPoolExecutor(max_workers=1,
                                             thread_name_prefix=f"{self.client_id}-metadata")
        self._wake_event = asyncio.Event()
        self._rpc = BrokerRpc(**self._rpc_options)  # type: ignore[arg-type]
        self._sender_task = self._loop.create_task(self._sender())
        self._ready.set()
        self._loop.run_until_complete(self._sender_task)
        self._loop.run_until_complete(self._shutdown())
        self._loop.close()

    async def _shutdown(self) -> None:
        """Lets a metadata refresh under way end (it runs in a worker thread and cannot be
        cancelled) and cancels what else is left, then closes the connections."""
        if self._refresh_task is not None:
            await asyncio.gather(self._refresh_task, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._rpc.aclose()
        self._refresher.shutdown(wait=False)

    def _call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs ``coroutine`` on the sender's loop and waits for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _wake(self) -> None:
        # A closed loop (RuntimeError) means a closed producer: nothing to wake.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._wake_event.set)

    async def _sender(self) -> None:
        """The sender's loop (:class:`~chunkraft.client.producer_sender.ProducerSender`)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ metadata

    def _partition_count(self, topic: str) -> int:
        count = self.metadata.partition_count(topic)
        if count is not None:
            return count
        ends = time.monotonic() + self.max_block
        while True:
            problem = ""
            try:
                self.metadata.refresh([topic])
            except MetadataUnavailableError as unavailable:
                problem = str(unavailable)
            count = self.metadata.partition_count(topic)
            if count is not None:
                return count
            topic_error = self.metadata.topic_error(topic)
            if topic_error is not None and not topic_error.retriable:
                raise ProducerError(f"topic {topic!r}", topic_error)
            if time.monotonic() + self.retry_backoff > ends:
                raise ProducerError(f"no metadata for topic {topic!r} within "
                                    f"{self.max_block} s {problem}",
                                    topic_error or Errors.UNKNOWN_TOPIC_OR_PARTITION)
            time.sleep(self.retry_backoff)

    def _request_refresh(self) -> None:
        if self._refresh_task is None or self._refresh_task.done():
            self._refresh_task = self._loop.create_task(self._refresh())

    async def _refresh(self) -> None:
        """One metadata refresh in the producer's worker thread. It never ends in an exception
        (a task's exception nobody retrieves is only printed when it is collected): a refresh
        that fails is retried after ``retry_backoff_ms``; one that cannot even start because
        the interpreter is exiting (the executors refuse work) stops the sender."""
        try:
            await self._loop.run_in_executor(self._refresher, self.metadata.refresh)
            self._refreshes += 1
        except MetadataUnavailableError:
            await asyncio.sleep(self.retry_backoff)
        except RuntimeError as error:  # "cannot schedule new futures after (interpreter) shutdown"
            self._executor_gone = error
        except Exception:
            logger.warning("%s: metadata refresh failed", self.client_id, exc_info=True)
            await asyncio.sleep(self.retry_backoff)
        self._wake_event.set()

    # ------------------------------------------------------------------ shared by the sender

    def _state(self, key: tuple[str, int]) -> PartitionState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PartitionState()
        return state

    def _finished(self, count: int) -> None:
        with self._done:
            self._unfinished -= count
            if self._unfinished <= 0:
                self._done.notify_all()

    def _fail_queue(self, key: tuple[str, int], error: BaseException) -> None:
        state = self._state(key)
        while state.queue:
            batch = state.queue.popleft()
            batch.fail(error)
            self._finished(len(batch))
