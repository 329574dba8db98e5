"""QuorumController: runs operations on the leader and commits their records through Raft.

The write path, all on one asyncio event loop:

1. the operation reads the *speculative* image (the committed image plus every batch this leader
   has proposed and not yet seen applied) and returns ``ControllerResult(records, response)``;
2. the records are encoded into a batch that must start at ``speculative.offset + 1``, with an
   idempotency key and the response, and the speculative image moves past them;
3. batches waiting while earlier entries are in flight are proposed together as one Raft entry
   (group commit), so a burst of small operations costs few Raft round trips;
4. when the entry is applied the caller gets its response, or on an offset mismatch (a write got
   there first, e.g. across a failover) the operation is validated again on the fresh image.
5. an operation that writes nothing (a refusal) read the speculative image too: it is answered
   only once every batch in flight that image holds has committed, else validated again.

After winning an election the leader commits a barrier (a NoOpRecord) before it validates
anything, so every entry of earlier terms is in its image first. Reads use the committed image.

Steps 1 and 2 (the operation's validation, encoding its records, replaying them into the next
speculative image) are CPU work proportional to the request. A write that may be large
(``offload=True``: a large body, fencing a broker) does them on one worker thread, one operation
at a time (under the write lock), so the loop keeps answering broker heartbeats, reads and the
Raft callbacks meanwhile; the request limits (``docs/api.md``) bound how long it runs in all. A
small write does them on the loop: handing a millisecond of work to a thread would cost it up
to a GIL switch interval (5 ms) of waiting while the loop is busy, and small writes are the
throughput path (``docs/architecture.md``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.controller.offset_waiters import OffsetWaiters
from chunkraft.controller.raft.entry import (
    ANY_OFFSET,
    IDEMPOTENCY_KEY_SIZE,
    MAX_EPOCH,
    ProposedBatch,
)
from chunkraft.controller.raft.log import ProposalError, RaftLog
from chunkraft.controller.raft.state_machine import NO_KEY, BatchOutcome, BatchStatus, TailRead
from chunkraft.controller.result import ControllerResult, Operation
from chunkraft.error_codes import ApiException, Errors
from chunkraft.random_bytes import random_bytes
from chunkraft.records import NoOpRecord, encode_record

__all__ = ["QuorumController", "WriteResult"]

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")

MAX_ENTRIES_IN_FLIGHT = 2
"""Raft entries proposed and not yet applied; more batches wait and go together in the next."""
MAX_ENTRY_RECORDS = 2_000
"""Group commit stops adding batches to an entry past this many records: a large entry is one
long apply in every node's Raft thread, and a follower that stops hearing its leader for an
election timeout starts an election (one batch alone may still be larger)."""
MAX_BATCH_RECORDS = 10_000
"""A non-atomic result larger than this is committed as several batches of at most this size."""
MAX_ATTEMPTS = 8


@dataclass(frozen=True, slots=True)
class WriteResult(Generic[T]):
    """An operation's response and the metadata offset that reflects it.

    ``offset`` is the last offset of the committed batch, or the offset of the image the
    operation read when it wrote nothing (errors, validate-only requests).
    """

    response: T
    offset: int
    committed: bool
    response_json: bytes | None = None
    """The response as JSON when the quorum already holds it that way (saves encoding twice)."""


def _retrieve_exception(future: asyncio.Future[BatchOutcome]) -> None:
    if not future.cancelled():
        future.exception()


class _Pending:
    """A batch waiting for its Raft entry, with the future its writer awaits."""

    __slots__ = ("batch", "future", "response")

    def __init__(self, batch: ProposedBatch, future: asyncio.Future[BatchOutcome],
                 response: BaseModel) -> None:
        self.batch = batch
        self.future = future
        self.response = response


@dataclass(frozen=True, slots=True)
class _Staged:
    """One batch of a validated result, encoded, with the speculative image after it."""

    key: bytes
    base: MetadataImage
    batch: ProposedBatch
    image: MetadataImage


def _validate_and_stage(operation: Operation[Any], base: MetadataImage, key: bytes, epoch: int,
                        now_ms: int) -> tuple[ControllerResult[Any], tuple[_Staged, ...]]:
    """Runs ``operation`` on ``base`` and encodes its records as the batches to propose, each
    with the speculative image it leads to. Pure (images are immutable): runs on the worker.

    An atomic result (or a small one) is one batch under ``key``; a large non-atomic one
    (fencing a broker that holds a million partitions) consecutive batches of at most
    :data:`MAX_BATCH_RECORDS`, keys derived from ``key``: a retry finds the first committed
    and gets the response (every part carries it), while the rest were proposed right behind.
    """
    result = operation(base)
    records = result.records
    if not records:
        return result, ()
    response = result.response.model_dump_json().encode()
    if result.atomic or len(records) <= MAX_BATCH_RECORDS:
        parts = [(key, records)]
    else:
        parts = [(key if index == 0 else hashlib.sha256(
            key + index.to_bytes(4, "big")).digest()[:IDEMPOTENCY_KEY_SIZE],
            records[start:start + MAX_BATCH_RECORDS])
            for index, start in enumerate(range(0, len(records), MAX_BATCH_RECORDS))]
    staged = []
    for part_key, part in parts:
        batch = ProposedBatch(part_key, base.offset + 1, epoch, now_ms,
                              tuple(encode_record(record) for record in part), response)
        delta = MetadataDelta(base)
        delta.replay_all(part)
        image = delta.apply(MetadataProvenance(base.offset + len(part), epoch))
        staged.append(_Staged(part_key, base, batch, image))
        base = image
    return result, tuple(staged)


class QuorumController:
    """The controller's operations on top of a :class:`RaftLog`; one per node.

    Thread-safety: every coroutine must run on the loop passed to :meth:`start`; Raft callbacks
    are brought onto it with ``call_soon_threadsafe``. :attr:`image` may be read from anywhere.
    """

    def __init__(
        self,
        raft: RaftLog,
        *,
        request_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.raft = raft
        self.request_timeout = request_timeout
        self._clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._write_lock = asyncio.Lock()
        self._speculative: MetadataImage | None = None
        self._speculative_epoch = -1
        self._queue: list[_Pending] = []
        self._staged: dict[bytes, _Pending] = {}  # idempotency key -> its batch not yet applied
        self._in_flight = 0
        self._drained = asyncio.Event()
        self._drained.set()
        self._offset_waiters = OffsetWaiters(lambda: self.image.offset)
        self.leader_changes = 0
        self.leadership_listeners: list[Callable[[bool], None]] = []
        # One thread: operations validate one at a time anyway (the write lock), and a second
        # would only compete for the GIL with the loop and the Raft thread.
        self._validator = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="chunkraft-validate")

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Binds to the running loop and subscribes to the Raft log's events."""
        self._loop = asyncio.get_running_loop()
        loop = self._loop

        def applied() -> None:
            loop.call_soon_threadsafe(self._offset_waiters.wake)

        def leadership(leader: bool) -> None:
            loop.call_soon_threadsafe(self._on_leadership, leader)

        self.raft.add_apply_listener(applied)
        self.raft.add_leadership_listener(leadership)

    def _on_leadership(self, leader: bool) -> None:
        self.leader_changes += 1
        self._speculative = None  # a new leader first commits a barrier; a deposed one stops
        logger.info("node %d %s leadership", self.raft.node_id, "gained" if leader else "lost")
        for listener in self.leadership_listeners:
            listener(leader)

    # ------------------------------------------------------------------ reads

    @property
    def image(self) -> MetadataImage:
        """The committed image this node has applied (never the speculative one)."""
        return self.raft.state_machine.image

    def is_leader(self) -> bool:
        return self.raft.is_leader()

    @property
    def entries_in_flight(self) -> int:
        """Raft entries this node proposed that are not yet committed and applied (metrics)."""
        return self._in_flight

    @property
    def writes_queued(self) -> int:
        """Validated writes waiting for room among the entries in flight (metrics)."""
        return len(self._queue)

    def leader_id(self) -> int | None:
        return self.raft.leader_id()

    async def wait_for_offset(self, offset: int, timeout: float) -> bool:
        """Waits until this node has applied ``offset``; False if it has not within ``timeout``."""
        return await self._offset_waiters.wait(offset, timeout)

    def release_waiters(self) -> None:
        """The node is stopping: long polls and reads waiting for an offset answer now with
        what this node has (see :meth:`OffsetWaiters.release`). On the loop."""
        self._offset_waiters.release()

    async def read_after(
        self, offset: int, *, max_records: int, max_bytes: int, wait: float
    ) -> TailRead:
        """Committed batches after ``offset``, waiting up to ``wait`` seconds for one."""
        state_machine = self.raft.state_machine
        read = state_machine.read_after(offset, max_records=max_records, max_bytes=max_bytes)
        if read.batches or read.snapshot_needed or wait <= 0:
            return read
        await self.wait_for_offset(offset + 1, wait)
        return state_machine.read_after(offset, max_records=max_records, max_bytes=max_bytes)

    # ------------------------------------------------------------------ writes

    async def write(
        self,
        operation: Operation[R],
        response_type: type[R],
        *,
        idempotency_key: bytes | None = None,
        timeout: float | None = None,
        offload: bool = False,
    ) -> WriteResult[R]:
        """Runs ``operation`` on the leader and commits its records; see the module docstring.

        ``offload``: validate and stage on the worker thread (a request that may be large), not
        on the loop.

        Raises ApiException: NOT_CONTROLLER on a node that is not the leader, REQUEST_TIMED_OUT
        when the outcome is not known in time (retry with the same key: it never applies
        twice), METADATA_LOG_CORRUPT when this node stopped applying its log.
        """
        key = idempotency_key or random_bytes(IDEMPOTENCY_KEY_SIZE)
        if len(key) != IDEMPOTENCY_KEY_SIZE or key == NO_KEY:
            raise ApiException(Errors.INVALID_REQUEST, "an idempotency key is 16 non-zero bytes")
        deadline = time.monotonic() + (timeout if timeout is not None else self.request_timeout)
        last_error = "no attempt made"
        refusal: R | None = None
        ahead: list[asyncio.Future[BatchOutcome]] = []
        for _attempt in range(MAX_ATTEMPTS):
            self._check_usable()
            earlier = self.raft.state_machine.outcome_of(key)
            if earlier is not None:
                return self._committed(earlier, response_type)
            try:  # the lock too is waited for within the write's deadline (no task: a free
                # lock is taken at once, so concurrent writes still group into one entry)
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                    await self._write_lock.acquire()
            except TimeoutError:
                raise ApiException(Errors.REQUEST_TIMED_OUT, "earlier writes held the "
                                   "controller's write lock past this request's timeout; "
                                   "retry") from None
            try:
                base = await self._speculative_image(deadline)
                # Again, now that earlier entries (a barrier, an attempt proposed before a
                # failover) have applied: a retry must get the first outcome, not be validated
                # against an image that already holds its own records.
                earlier = self.raft.state_machine.outcome_of(key)
                if earlier is not None:
                    return self._committed(earlier, response_type)
                pending = self._staged.get(key)  # the same key still in flight: share its outcome
                if pending is None:
                    epoch = self.raft.epoch()
                    if offload:
                        result, staged = await asyncio.get_running_loop().run_in_executor(
                            self._validator, _validate_and_stage, operation, base, key, epoch,
                            self._now_ms())
                    else:
                        result, staged = _validate_and_stage(operation, base, key, epoch,
                                                             self._now_ms())
                    if not staged:
                        # A refusal (or a write with nothing to do) read ``base``; if that holds
                        # batches still in flight, it may only be answered once they commit.
                        ahead = [item.future for item in self._staged.values()]
                        if not ahead:
                            return WriteResult(result.response, base.offset, False)
                        refusal = result.response
                    elif self.raft.epoch() != epoch or self._speculative is not base:
                        # Leadership changed while it validated: validate again on what the
                        # next attempt finds (the records were never proposed).
                        self._speculative = None
                        last_error = "leadership changed during validation"
                        continue
                    else:
                        pending = self._stage_all(staged, result.response)
            finally:
                self._write_lock.release()
            if refusal is not None:
                if await self._all_committed(ahead, deadline):
                    return WriteResult(refusal, base.offset, False)
                # What it read was speculation that did not commit (a failover discarded it):
                # validate again on what did, from the committed image up.
                self._speculative = None
                refusal = None
                last_error = "a refusal read writes that did not commit"
                continue
            assert pending is not None
            try:
                remaining = max(deadline - time.monotonic(), 0.001)
                outcome = await asyncio.wait_for(asyncio.shield(pending.future), remaining)
            except TimeoutError:
                self._speculative = None
                raise ApiException(
                    Errors.REQUEST_TIMED_OUT,
                    "the operation was proposed but not known to be committed in time; it may "
                    "still commit: retry with the same idempotency key") from None
            except ProposalError as error:
                self._speculative = None
                last_error = error.reason
                await asyncio.sleep(0.05)
                continue
            if outcome.status is BatchStatus.COMMITTED and isinstance(pending.response,
                                                                      response_type):
                # This very batch committed: its response object is the answer, as is.
                return WriteResult(pending.response, outcome.last_offset, True,
                                   pending.batch.response)
            if outcome.status is BatchStatus.COMMITTED:
                return self._committed(outcome, response_type)
            self._speculative = None  # it holds this batch's records, which were not written
            if outcome.status is BatchStatus.DUPLICATE:
                return self._committed(outcome, response_type)
            if outcome.status is BatchStatus.CORRUPT:
                raise ApiException(Errors.METADATA_LOG_CORRUPT, outcome.message)
            if outcome.status is BatchStatus.INVALID:
                logger.error("a validated batch did not replay: %s", outcome.message)
                raise ApiException(Errors.UNKNOWN_SERVER_ERROR, outcome.message)
            last_error = outcome.message  # OFFSET_MISMATCH: validate again on the new image
        raise ApiException(Errors.REQUEST_TIMED_OUT, f"gave up after {MAX_ATTEMPTS} attempts: "
                                                     f"{last_error}")

    async def _all_committed(self, futures: list[asyncio.Future[BatchOutcome]],
                             deadline: float) -> bool:
        """Waits until these in-flight batches settle; True if every one committed as
        proposed (so the speculative image a refusal read is now the committed one).

        Raises ApiException REQUEST_TIMED_OUT if they do not settle before ``deadline``.
        """
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*(asyncio.shield(f) for f in futures), return_exceptions=True),
                remaining)
        except TimeoutError:
            raise ApiException(
                Errors.REQUEST_TIMED_OUT,
                "the answer depends on earlier writes not yet committed; retry") from None
        return all(isinstance(o, BatchOutcome) and o.status is BatchStatus.COMMITTED
                   for o in outcomes)

    def _check_usable(self) -> None:
        failure = self.raft.state_machine.failure
        if failure is not None:
            raise ApiException(Errors.METADATA_LOG_CORRUPT, failure)
        if not self.raft.is_leader():
            leader = self.raft.leader_id()
            raise ApiException(
                Errors.NOT_CONTROLLER,
                f"node {self.raft.node_id} is not the leader; the leader is "
                f"{'unknown' if leader is None else f'node {leader}'}")
        epoch = self.raft.epoch()
        if epoch > MAX_EPOCH:
            # Whatever the Raft layer says, a term past int32 cannot be written in a batch
            # (one flipped journal byte can make one): answer "not the controller", never let
            # struct.error become a 500.
            raise ApiException(
                Errors.NOT_CONTROLLER,
                f"node {self.raft.node_id} is at Raft term {epoch}, above {MAX_EPOCH}, the "
                "largest epoch a batch can hold: it cannot act as the controller")

    @staticmethod
    def _committed(outcome: BatchOutcome, response_type: type[R]) -> WriteResult[R]:
        response = response_type.model_validate_json(outcome.response)
        return WriteResult(response, outcome.last_offset, True, outcome.response)

    async def _speculative_image(self, deadline: float) -> MetadataImage:
        """The image to validate against; after a failure or a new election, rebuilt from the
        committed image once everything in flight is settled (and a barrier has committed)."""
        epoch = self.raft.epoch()
        if self._speculative is not None and self._speculative_epoch == epoch:
            return self._speculative
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            await asyncio.wait_for(self._drained.wait(), remaining)
        except TimeoutError:
            raise ApiException(Errors.REQUEST_TIMED_OUT, "earlier writes are still in flight"
                               ) from None
        if self._speculative_epoch != epoch:
            await self._commit_barrier(deadline)
        self._check_usable()
        self._speculative = self.image
        self._speculative_epoch = epoch
        return self._speculative

    async def _commit_barrier(self, deadline: float) -> None:
        batch = ProposedBatch(NO_KEY, ANY_OFFSET, self.raft.epoch(), self._now_ms(),
                              (encode_record(NoOpRecord()),))
        future = asyncio.wrap_future(self.raft.propose([batch]))
        try:
            await asyncio.wait_for(future, max(deadline - time.monotonic(), 0.001))
        except ProposalError as error:
            raise ApiException(Errors.NOT_CONTROLLER, f"leadership barrier failed: "
                                                      f"{error.reason}") from None
        except TimeoutError:
            raise ApiException(Errors.REQUEST_TIMED_OUT, "the leadership barrier did not "
                                                         "commit in time") from None

    def _stage_all(self, staged: tuple[_Staged, ...], response: BaseModel) -> _Pending:
        """Queues a validated result's batches for proposal, in order; the caller waits for
        the last (see :func:`_validate_and_stage`)."""
        loop = asyncio.get_running_loop()
        pending = None
        for part in staged:
            self._speculative = part.image
            self.raft.state_machine.offer_staged(part.key, part.base, part.image,
                                                 part.batch.records)
            pending = _Pending(part.batch, loop.create_future(), response)
            # A writer that timed out no longer awaits its future: retrieve its exception
            # anyway, or asyncio logs "Future exception was never retrieved" for each.
            pending.future.add_done_callback(_retrieve_exception)
            self._queue.append(pending)
            self._staged[part.key] = pending
        assert pending is not None
        self._drained.clear()
        self._send_queued()
        return pending

    def _send_queued(self) -> None:
        while self._queue and self._in_flight < MAX_ENTRIES_IN_FLIGHT:
            taken = records = 0
            for item in self._queue:
                if taken and records + len(item.batch.records) > MAX_ENTRY_RECORDS:
                    break
                taken += 1
                records += len(item.batch.records)
            queued, self._queue = self._queue[:taken], self._queue[taken:]
            self._in_flight += 1
            raft_future = asyncio.wrap_future(self.raft.propose([i.batch for i in queued]))
            raft_future.add_done_callback(functools.partial(self._entry_done, queued=queued))

    def _entry_done(self, done: asyncio.Future[tuple[BatchOutcome, ...]],
                    queued: list[_Pending]) -> None:
        self._in_flight -= 1
        error = done.exception()
        outcomes = done.result() if error is None else ()
        for index, item in enumerate(queued):
            if self._staged.get(item.batch.idempotency_key) is item:
                del self._staged[item.batch.idempotency_key]
            if item.future.done():
                continue
            if error is not None:
                item.future.set_exception(error)
            elif index < len(outcomes):
                item.future.set_result(outcomes[index])
            elif outcomes and outcomes[-1].status is BatchStatus.CORRUPT:
                # A corrupt entry (or any entry after one) has one outcome for all its batches.
                item.future.set_result(outcomes[-1])
            else:
                item.future.set_exception(ProposalError(
                    f"{len(outcomes)} outcomes for an entry of {len(queued)} batches"))
        self._send_queued()
        if not self._queue and self._in_flight == 0:
            self._drained.set()

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
