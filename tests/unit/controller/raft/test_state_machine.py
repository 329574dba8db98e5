"""MetadataStateMachine: entries in, one outcome per batch, all or nothing, never an exception."""

from __future__ import annotations

import random

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.raft import (
    ANY_OFFSET,
    NO_KEY,
    BatchStatus,
    MetadataStateMachine,
    ProposedBatch,
    encode_entry,
)
from chunkraft.records import NoOpRecord, decode_record, encode_record
from tests.support.raft import batch, key, partition_record, topic_record


def apply(machine: MetadataStateMachine, *batches: ProposedBatch) -> list[BatchStatus]:
    return [outcome.status for outcome in machine.apply_entry(encode_entry(batches))]


def committed_records(machine: MetadataStateMachine) -> list[bytes]:
    read = machine.read_after(machine.tail_start_offset - 1, max_records=10**9, max_bytes=10**12)
    return [record for committed in read.batches for record in committed.records]


def state(machine: MetadataStateMachine) -> tuple[object, ...]:
    """Everything a batch could change."""
    return (machine.image, machine.image.content_hash(), machine.idempotency_keys(),
            committed_records(machine), machine.tail_start_offset, machine.failure)


# ------------------------------------------------------------------ commit


def test_commits_take_consecutive_offsets() -> None:
    machine = MetadataStateMachine()
    first = machine.apply_entry(encode_entry([
        batch([topic_record(0), partition_record(0)], expected=0, epoch=4),
        batch([topic_record(1)], expected=2, epoch=4),
    ]))
    second = machine.apply_entry(encode_entry([batch([topic_record(2)], epoch=5)]))
    assert [(o.status, o.base_offset, o.count, o.last_offset) for o in first + second] == [
        (BatchStatus.COMMITTED, 0, 2, 1),
        (BatchStatus.COMMITTED, 2, 1, 2),
        (BatchStatus.COMMITTED, 3, 1, 3),
    ]
    assert machine.image.offset == 3
    assert machine.image.epoch == 5
    assert {topic.name for topic in machine.image.topics} == {"topic-0", "topic-1", "topic-2"}
    topic = machine.image.topics.get_by_name("topic-0")
    assert topic is not None
    assert topic.partition(0) is not None
    assert machine.entries_applied == 2


def test_the_response_is_kept_with_the_outcome() -> None:
    machine = MetadataStateMachine()
    (outcome,) = machine.apply_entry(encode_entry([
        batch([topic_record(0)], key_=key(1), response=b'{"name":"topic-0"}')]))
    assert outcome.response == b'{"name":"topic-0"}'
    assert machine.outcome_of(key(1)) == outcome
    assert machine.idempotency_keys() == [(key(1), outcome)]


def test_a_duplicate_key_returns_the_first_outcome_and_writes_nothing() -> None:
    machine = MetadataStateMachine()
    (first,) = machine.apply_entry(encode_entry([
        batch([topic_record(0)], key_=key(1), response=b'{"first":1}')]))
    assert first.status is BatchStatus.COMMITTED
    before = state(machine)
    # Other records, another response and an offset that would fit: still the first outcome.
    (again,) = machine.apply_entry(encode_entry([
        batch([topic_record(1)], key_=key(1), expected=1, response=b'{"second":2}')]))
    assert again.status is BatchStatus.DUPLICATE
    assert (again.base_offset, again.count, again.response) == (0, 1, b'{"first":1}')
    assert state(machine) == before


def test_a_duplicate_key_inside_one_entry_commits_once() -> None:
    machine = MetadataStateMachine()
    statuses = apply(machine, batch([topic_record(0)], key_=key(1)),
                     batch([topic_record(1)], key_=key(1)))
    assert statuses == [BatchStatus.COMMITTED, BatchStatus.DUPLICATE]
    assert machine.image.offset == 0
    assert machine.image.topics.get_by_name("topic-1") is None


def test_the_zero_key_is_never_remembered() -> None:
    machine = MetadataStateMachine()
    noop = batch([NoOpRecord()], key_=NO_KEY)
    assert apply(machine, noop, noop) == [BatchStatus.COMMITTED, BatchStatus.COMMITTED]
    assert machine.image.offset == 1
    assert machine.idempotency_keys() == []


def test_an_expected_offset_mismatch_writes_nothing() -> None:
    machine = MetadataStateMachine()
    apply(machine, batch([topic_record(0)]))
    before = state(machine)
    for expected in (0, 2, 100):
        (outcome,) = machine.apply_entry(encode_entry([
            batch([topic_record(1)], key_=key(7), expected=expected)]))
        assert outcome.status is BatchStatus.OFFSET_MISMATCH
        assert f"expected offset {expected}" in outcome.message
    assert state(machine) == before
    assert machine.outcome_of(key(7)) is None  # a mismatch does not use up the key
    assert apply(machine, batch([topic_record(1)], key_=key(7), expected=1)) == [
        BatchStatus.COMMITTED]


def test_a_batch_that_does_not_replay_is_invalid_and_the_next_one_still_commits() -> None:
    machine = MetadataStateMachine()
    apply(machine, batch([topic_record(0)], key_=key(0)))
    before = state(machine)
    # A valid first record, then a partition of a topic that does not exist: all or nothing.
    bad = batch([topic_record(1), partition_record(99)], key_=key(1), expected=1)
    good = batch([topic_record(2)], key_=key(2), expected=1)
    invalid, committed = machine.apply_entry(encode_entry([bad, good]))
    assert invalid.status is BatchStatus.INVALID
    assert invalid.message
    assert machine.outcome_of(key(1)) is None
    assert committed.status is BatchStatus.COMMITTED
    assert (committed.base_offset, committed.count) == (1, 1)
    assert machine.image.topics.get_by_name("topic-1") is None
    # Undo the good batch's effect by comparing against a machine that only saw it.
    reference = MetadataStateMachine()
    apply(reference, batch([topic_record(0)], key_=key(0)))
    assert state(reference) == before
    apply(reference, good)
    assert state(machine) == state(reference)


@pytest.mark.parametrize(
    "records", [(), (b"\xff\xff\xff",), (encode_record(topic_record(0)) + b"x",)])
def test_records_that_do_not_decode_are_invalid(records: tuple[bytes, ...]) -> None:
    machine = MetadataStateMachine()
    before = state(machine)
    (outcome,) = machine.apply_entry(encode_entry([
        ProposedBatch(key(1), ANY_OFFSET, 1, 0, records)]))
    assert outcome.status is BatchStatus.INVALID
    assert state(machine) == before


# ------------------------------------------------------------------ corruption


def test_a_corrupt_entry_stops_the_machine_for_good() -> None:
    machine = MetadataStateMachine()
    apply(machine, batch([topic_record(0)]))
    image = machine.image
    payload = bytearray(encode_entry([batch([topic_record(1)])]))
    payload[-1] ^= 0x01
    (outcome,) = machine.apply_entry(bytes(payload))
    assert outcome.status is BatchStatus.CORRUPT
    assert machine.failure is not None
    assert "corrupt" in machine.failure
    assert outcome.message == machine.failure
    # Every later entry is refused, even a perfectly good one.
    later = machine.apply_entry(encode_entry([batch([topic_record(2)]), batch([topic_record(3)])]))
    assert [o.status for o in later] == [BatchStatus.CORRUPT]
    assert machine.image is image


@pytest.mark.parametrize("seed", range(20))
def test_apply_entry_never_raises_for_garbage(seed: int) -> None:
    machine = MetadataStateMachine()
    garbage = random.Random(seed).randbytes(seed * 7)
    for payload in (garbage, b"CRE1" + garbage, b"CRE1\x00\x00\x00\x01" + garbage):
        outcomes = machine.apply_entry(payload)
        assert outcomes
        assert all(o.status is BatchStatus.CORRUPT for o in outcomes)
    assert machine.image is MetadataImage.EMPTY


def test_an_unexpected_error_while_applying_a_batch_is_an_outcome_not_an_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    machine = MetadataStateMachine()
    apply(machine, batch([topic_record(0)]))
    before = state(machine)

    def broken(self: object, records: object) -> None:
        raise RuntimeError("a bug in replay")

    monkeypatch.setattr("chunkraft.controller.image.MetadataDelta.replay_all", broken)
    (outcome,) = machine.apply_entry(encode_entry([batch([topic_record(1)], key_=key(1))]))
    assert outcome.status is BatchStatus.INVALID
    assert "a bug in replay" in outcome.message
    assert state(machine) == before
    assert machine.failure is None


# ------------------------------------------------------------------ read_after


def three_batches() -> MetadataStateMachine:
    """Offsets 0-2 (one batch), 3 (one), 4-5 (one)."""
    machine = MetadataStateMachine()
    apply(machine,
          batch([topic_record(0), topic_record(1), topic_record(2)], epoch=2),
          batch([topic_record(3)], epoch=2))
    apply(machine, batch([topic_record(4), topic_record(5)], epoch=3))
    return machine


def offsets_of(machine: MetadataStateMachine, offset: int, **bounds: int) -> list[list[int]]:
    limits = {"max_records": 1000, "max_bytes": 10**9} | bounds
    read = machine.read_after(offset, **limits)
    assert not read.snapshot_needed
    result = []
    for committed in read.batches:
        offsets = list(range(committed.base_offset, committed.next_offset))
        # The records really are those of these offsets: topic-N sits at offset N.
        assert [decode_record(r).name for r in committed.records] == [f"topic-{o}" for o in offsets]
        result.append(offsets)
    return result


def test_read_after_is_exclusive() -> None:
    machine = three_batches()
    assert offsets_of(machine, -1) == [[0, 1, 2], [3], [4, 5]]
    assert offsets_of(machine, 2) == [[3], [4, 5]]
    assert offsets_of(machine, 3) == [[4, 5]]
    assert offsets_of(machine, 5) == []
    assert offsets_of(machine, 50) == []
    read = machine.read_after(5, max_records=10, max_bytes=10**6)
    assert read.high_watermark == 6
    assert read.batches == ()


def test_read_after_trims_a_batch_the_reader_has_begun() -> None:
    machine = three_batches()
    assert offsets_of(machine, 0) == [[1, 2], [3], [4, 5]]
    assert offsets_of(machine, 1) == [[2], [3], [4, 5]]
    assert offsets_of(machine, 4) == [[5]]
    read = machine.read_after(4, max_records=10, max_bytes=10**6)
    assert read.batches[0].epoch == 3
    assert read.batches[0].append_time_ms == 1_000


def test_read_after_bounds_keep_whole_batches_and_at_least_one() -> None:
    machine = three_batches()
    assert offsets_of(machine, -1, max_records=1) == [[0, 1, 2]]
    assert offsets_of(machine, -1, max_records=3) == [[0, 1, 2]]
    assert offsets_of(machine, -1, max_records=4) == [[0, 1, 2], [3]]
    assert offsets_of(machine, -1, max_records=5) == [[0, 1, 2], [3]]
    assert offsets_of(machine, -1, max_records=6) == [[0, 1, 2], [3], [4, 5]]
    assert offsets_of(machine, -1, max_bytes=1) == [[0, 1, 2]]
    first = machine.read_after(-1, max_records=1, max_bytes=1).batches[0].size
    second = machine.read_after(2, max_records=1, max_bytes=1).batches[0].size
    assert offsets_of(machine, -1, max_bytes=first + second) == [[0, 1, 2], [3]]
    assert offsets_of(machine, -1, max_bytes=first + second - 1) == [[0, 1, 2]]
    assert offsets_of(machine, 0, max_records=0, max_bytes=0) == [[1, 2]]


def test_a_reader_behind_the_retained_tail_needs_a_snapshot() -> None:
    machine = MetadataStateMachine(max_retained_bytes=200)
    for n in range(40):
        apply(machine, batch([topic_record(n)]))
    start = machine.tail_start_offset
    assert 0 < start <= 39
    kept = machine.read_after(start - 1, max_records=1000, max_bytes=10**9)
    assert not kept.snapshot_needed
    assert kept.batches[0].base_offset == start
    assert kept.batches[-1].next_offset == 40
    assert sum(b.size for b in kept.batches) <= 200
    for offset in (-1, 0, start - 2):
        read = machine.read_after(offset, max_records=1000, max_bytes=10**9)
        assert read.snapshot_needed
        assert read.batches == ()
        assert read.high_watermark == 40
    assert offsets_of(machine, 39) == []


def test_the_tail_keeps_one_batch_larger_than_its_bound() -> None:
    machine = MetadataStateMachine(max_retained_bytes=10)
    apply(machine, batch([topic_record(0), topic_record(1)]))
    apply(machine, batch([topic_record(2), topic_record(3)]))
    assert offsets_of(machine, 1) == [[2, 3]]
    assert machine.read_after(0, max_records=10, max_bytes=10**6).snapshot_needed


def test_restore_replaces_the_whole_state() -> None:
    source = three_batches()
    apply(source, batch([topic_record(6)], key_=key(6), response=b'{"six":6}'))
    machine = MetadataStateMachine()
    apply(machine, batch([topic_record(9)]))
    machine.apply_entry(b"garbage")
    assert machine.failure is not None
    machine.restore(source.image, source.idempotency_keys())
    assert machine.failure is None
    assert machine.image is source.image
    assert machine.outcome_of(key(6)) == source.outcome_of(key(6))
    assert machine.tail_start_offset == 7
    assert offsets_of(machine, 6) == []
    assert machine.read_after(5, max_records=10, max_bytes=10**6).snapshot_needed
    # The log goes on after the image.
    assert apply(machine, batch([topic_record(7)], expected=7)) == [BatchStatus.COMMITTED]
    assert offsets_of(machine, 6) == [[7]]
    assert [o.status for o in machine.apply_entry(encode_entry([
        batch([topic_record(8)], key_=key(6))]))] == [BatchStatus.DUPLICATE]


def test_old_keys_are_forgotten_beyond_the_bound() -> None:
    machine = MetadataStateMachine(max_idempotency_keys=3)
    for n in range(5):
        apply(machine, batch([topic_record(n)], key_=key(n)))
    assert [k for k, _ in machine.idempotency_keys()] == [key(2), key(3), key(4)]
    assert machine.outcome_of(key(0)) is None
