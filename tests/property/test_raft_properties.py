"""Properties of the Raft state machine: how batches are grouped into entries never matters,
replay is deterministic, and a replayed idempotency key never changes anything."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.controller.raft import (
    ANY_OFFSET,
    NO_KEY,
    BatchStatus,
    MetadataStateMachine,
    ProposedBatch,
    encode_entry,
)
from chunkraft.records import NoOpRecord, PartitionRecord, encode_record
from tests.support.histories import metadata_histories

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# The histories' topic ids always have a non-zero low half, so this topic never exists.
UNKNOWN_TOPIC = uuid.UUID(int=0xDEAD << 64)
NEVER = 10**12  # an expected offset no log of these sizes reaches


@dataclass(frozen=True)
class Plan:
    """Batches in proposal order and what each should become."""

    batches: list[ProposedBatch]
    expected: list[BatchStatus]


def _bad_partition() -> PartitionRecord:
    return PartitionRecord(partition_id=0, topic_id=UNKNOWN_TOPIC, replicas=(0,), isr=(0,),
                           leader=0, leader_epoch=0, partition_epoch=0, start_offset=0)


@st.composite
def plans(draw: st.DrawFn, *, barriers: bool = True) -> Plan:
    """A valid history cut into keyed batches, with barriers, offset mismatches and batches
    that do not replay mixed in; offsets and epochs as a leader would propose them."""
    records = draw(metadata_histories(max_steps=15)) or [NoOpRecord()]
    cuts = sorted(draw(st.sets(st.integers(1, max(len(records) - 1, 1)), max_size=8)))
    pieces = [records[a:b] for a, b in zip([0, *cuts], [*cuts, len(records)], strict=True)]
    batches: list[ProposedBatch] = []
    expected: list[BatchStatus] = []
    end = 0  # the offset the next committed record takes
    epoch = 1
    number = 0

    def add(records: list[Any], status: BatchStatus, *, key: bytes | None = None,
            offset: int | None = None) -> None:
        nonlocal end, number
        number += 1
        batches.append(ProposedBatch(
            key if key is not None else number.to_bytes(16, "big"),
            end if offset is None else offset,
            epoch, 1_000 + number,
            tuple(encode_record(record) for record in records),
            f'{{"n":{number}}}'.encode()))
        expected.append(status)
        if status is BatchStatus.COMMITTED:
            end += len(records)

    for piece in pieces:
        if not piece:
            continue
        epoch += draw(st.sampled_from([0, 0, 0, 1]))
        extra = draw(st.sampled_from(["none", "none", "barrier", "mismatch", "invalid"]))
        if extra == "barrier" and barriers:
            add([NoOpRecord()], BatchStatus.COMMITTED, key=NO_KEY, offset=ANY_OFFSET)
        elif extra == "mismatch":
            add(piece, BatchStatus.OFFSET_MISMATCH, offset=NEVER)
        elif extra == "invalid":
            add([*piece[:1], _bad_partition()], BatchStatus.INVALID)
        add(piece, BatchStatus.COMMITTED)
    return Plan(batches, expected)


def groupings(count: int) -> st.SearchStrategy[list[int]]:
    """Cut points splitting ``count`` batches into consecutive entries."""
    return st.sets(st.integers(1, max(count - 1, 1)), max_size=count).map(sorted)


def entries(batches: list[ProposedBatch], cuts: list[int]) -> list[bytes]:
    bounds = [0, *(c for c in cuts if c < len(batches)), len(batches)]
    return [encode_entry(batches[a:b]) for a, b in itertools.pairwise(bounds) if b > a]


def replay(payloads: list[bytes]) -> tuple[MetadataStateMachine, list[BatchStatus]]:
    machine = MetadataStateMachine()
    statuses = [o.status for payload in payloads for o in machine.apply_entry(payload)]
    return machine, statuses


def content(machine: MetadataStateMachine) -> tuple[Any, ...]:
    tail = machine.read_after(-1, max_records=10**9, max_bytes=10**12)
    return (machine.image, machine.image.content_hash(), machine.idempotency_keys(),
            tail, machine.tail_start_offset, machine.failure)


@SETTINGS
@given(plans(), st.data())
def test_grouping_batches_into_entries_does_not_matter(plan: Plan, data: st.DataObject) -> None:
    one_each, statuses = replay(entries(plan.batches, list(range(1, len(plan.batches)))))
    assert statuses == plan.expected
    first = data.draw(groupings(len(plan.batches)))
    second = data.draw(groupings(len(plan.batches)))
    for cuts in (first, second, []):
        machine, grouped = replay(entries(plan.batches, cuts))
        assert grouped == plan.expected
        assert content(machine) == content(one_each)
    assert one_each.failure is None


@SETTINGS
@given(plans(), st.data())
def test_two_fresh_machines_replaying_the_same_entries_agree(
    plan: Plan, data: st.DataObject
) -> None:
    payloads = entries(plan.batches, data.draw(groupings(len(plan.batches))))
    left, _ = replay(payloads)
    right, _ = replay(payloads)
    assert left.image.content_hash() == right.image.content_hash()
    assert left.image == right.image
    assert content(left) == content(right)


@SETTINGS
@given(plans(barriers=False), st.data())
def test_replaying_entries_with_the_same_keys_changes_nothing(
    plan: Plan, data: st.DataObject
) -> None:
    payloads = entries(plan.batches, data.draw(groupings(len(plan.batches))))
    machine, _ = replay(payloads)
    before = content(machine)
    first_outcomes = dict(machine.idempotency_keys())
    again = data.draw(st.lists(st.sampled_from(payloads), min_size=1, max_size=4))
    for payload in again:
        for outcome in machine.apply_entry(payload):
            # Keys that committed answer as the first time; the rest still cannot commit.
            assert outcome.status in (BatchStatus.DUPLICATE, BatchStatus.OFFSET_MISMATCH,
                                      BatchStatus.INVALID)
            if outcome.status is BatchStatus.DUPLICATE:
                assert outcome.base_offset in {o.base_offset for o in first_outcomes.values()}
    assert content(machine) == before
