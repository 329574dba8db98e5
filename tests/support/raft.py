"""Helpers for tests of the Raft layer: records, batches, free ports and bounded waits."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from chunkraft.controller.raft import ANY_OFFSET, ProposedBatch
from chunkraft.records import PartitionRecord, TopicRecord, encode_record


def topic_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=0x7000 + n)


def topic_record(n: int) -> TopicRecord:
    return TopicRecord(name=f"topic-{n}", topic_id=topic_id(n))


def partition_record(n: int, partition_id: int = 0) -> PartitionRecord:
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id(n),
        replicas=(0,),
        isr=(0,),
        leader=0,
        leader_epoch=0,
        partition_epoch=0,
        start_offset=0,
    )


def key(n: int) -> bytes:
    """A distinct, non-zero idempotency key."""
    return (n + 1).to_bytes(16, "big")


def batch(
    records: Sequence[Any],
    *,
    key_: bytes | None = None,
    expected: int = ANY_OFFSET,
    epoch: int = 1,
    response: bytes = b'{"ok":true}',
) -> ProposedBatch:
    """A batch of ``records`` (record objects, encoded here); a random key unless given."""
    return ProposedBatch(
        key_ if key_ is not None else uuid.uuid4().bytes,
        expected,
        epoch,
        1_000,
        tuple(encode_record(record) for record in records),
        response,
    )


def wait_until(condition: Callable[[], bool], timeout: float, message: str) -> None:
    """Polls ``condition`` until it holds; fails with ``message`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s: {message}")
        time.sleep(0.01)
