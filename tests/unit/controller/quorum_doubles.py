"""Doubles and small operations for the QuorumController unit tests: LocalRaft variants that
hold, lose or corrupt entries, a test response type, and operations that create, grow and read
a topic."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft import BatchOutcome, ProposalError, ProposedBatch
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.records import PartitionRecord, TopicRecord, decode_record

T = TypeVar("T")


class TopicResponse(BaseModel):
    name: str
    topic_id: str | None = None
    error_code: int = 0


def create_topic(name: str, calls: list[str] | None = None) -> Callable[
        [MetadataImage], ControllerResult[TopicResponse]]:
    """Creates topic ``name`` with a fresh id, or answers TOPIC_ALREADY_EXISTS."""

    def operation(image: MetadataImage) -> ControllerResult[TopicResponse]:
        if calls is not None:
            calls.append(name)
        if image.topics.get_by_name(name) is not None:
            return ControllerResult.of(
                TopicResponse(name=name, error_code=Errors.TOPIC_ALREADY_EXISTS.code))
        topic_id = uuid.uuid4()
        return ControllerResult.of(TopicResponse(name=name, topic_id=str(topic_id)),
                                   [TopicRecord(name=name, topic_id=topic_id)])

    return operation


def add_partition(name: str) -> Callable[[MetadataImage], ControllerResult[TopicResponse]]:
    """Adds the next partition to topic ``name`` (by the id the image has for it)."""

    def operation(image: MetadataImage) -> ControllerResult[TopicResponse]:
        topic = image.topics.get_by_name(name)
        if topic is None:
            return ControllerResult.of(
                TopicResponse(name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION.code))
        record = PartitionRecord(
            partition_id=len(topic.partitions), topic_id=topic.topic_id, replicas=(0,), isr=(0,),
            leader=0, leader_epoch=0, partition_epoch=0, start_offset=0)
        return ControllerResult.of(TopicResponse(name=name, topic_id=str(topic.topic_id)),
                                   [record])

    return operation


def describe(name: str) -> Callable[[MetadataImage], ControllerResult[TopicResponse]]:
    """Reads only: no records."""

    def operation(image: MetadataImage) -> ControllerResult[TopicResponse]:
        topic = image.topics.get_by_name(name)
        return ControllerResult.of(TopicResponse(
            name=name, topic_id=None if topic is None else str(topic.topic_id)))

    return operation


class DeferredRaft(LocalRaft):
    """Commits each proposal on a later turn of the event loop, so entries are really in flight
    (and batches staged meanwhile are grouped); can also lose an entry's ack, hold entries, or
    turn them corrupt."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[int] = []  # batches per entry, in commit order
        self.corrupt = False
        self.hold = False
        self._lose_ack = 0
        self._lost: list[Sequence[ProposedBatch]] = []

    def lose_ack_next(self) -> None:
        """The next proposal fails at once with an unknown outcome, yet commits (before any
        later proposal, as Raft would order it) when the next proposal commits."""
        self._lose_ack += 1

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        future: Future[tuple[BatchOutcome, ...]] = Future()
        if self._lose_ack:
            self._lose_ack -= 1
            self._lost.append(list(batches))
            future.set_exception(ProposalError("LEADER_CHANGED"))
        elif not self.hold:
            asyncio.get_running_loop().call_soon(self._commit, list(batches), future)
        return future

    def _commit(self, batches: Sequence[ProposedBatch], future: Future[Any]) -> None:
        for lost in self._lost:
            self.entries.append(len(lost))
            super().propose(lost)
        self._lost.clear()
        self.entries.append(len(batches))
        if self.corrupt:
            future.set_result(self.state_machine.apply_entry(b"not an entry"))
            return
        inner = super().propose(batches)
        error = inner.exception()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(inner.result())


def run(raft: LocalRaft, body: Callable[[QuorumController], Coroutine[Any, Any, T]],
        **options: Any) -> T:
    """Runs ``body`` with a started controller over ``raft`` on a fresh event loop."""

    async def main() -> T:
        controller = QuorumController(raft, **options)
        await controller.start()
        return await asyncio.wait_for(body(controller), 20)

    return asyncio.run(main())


def log_records(raft: LocalRaft) -> list[tuple[int, Any]]:
    """Every committed (offset, record), decoded."""
    read = raft.state_machine.read_after(-1, max_records=10**9, max_bytes=10**12)
    assert not read.snapshot_needed
    return [(b.base_offset + i, decode_record(r)) for b in read.batches
            for i, r in enumerate(b.records)]


def topic_names(raft: LocalRaft) -> list[str]:
    return [record.name for _, record in log_records(raft) if isinstance(record, TopicRecord)]


RAFTS = [pytest.param(LocalRaft, id="local"), pytest.param(DeferredRaft, id="deferred")]
