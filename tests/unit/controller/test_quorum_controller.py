"""QuorumController over LocalRaft (and a slower double): the leader's write path."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage, MetadataProvenance
from chunkraft.controller.quorum_controller import MAX_ENTRIES_IN_FLIGHT, QuorumController
from chunkraft.controller.raft import BatchOutcome, ProposedBatch
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.records import NoOpRecord, TopicRecord, decode_record
from tests.support.raft import batch, key
from tests.unit.controller.quorum_doubles import (
    RAFTS,
    DeferredRaft,
    TopicResponse,
    add_partition,
    create_topic,
    describe,
    log_records,
    run,
    topic_names,
)

# ------------------------------------------------------------------ basics


@pytest.mark.parametrize("make_raft", RAFTS)
def test_a_write_commits_and_returns_its_response_and_offset(
        make_raft: Callable[[], LocalRaft]) -> None:
    raft = make_raft()

    async def body(controller: QuorumController) -> None:
        result = await controller.write(create_topic("orders"), TopicResponse,
                                        idempotency_key=key(1))
        assert result.committed
        assert result.offset == 1  # after the leader's barrier at 0
        assert result.response.name == "orders"
        assert result.response.error_code == 0
        assert controller.image.offset == 1
        topic = controller.image.topics.get_by_name("orders")
        assert topic is not None
        assert str(topic.topic_id) == result.response.topic_id
        outcome = raft.state_machine.outcome_of(key(1))
        assert outcome is not None
        assert TopicResponse.model_validate_json(outcome.response) == result.response

    run(raft, body)


def test_an_operation_that_returns_no_records_commits_nothing() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("orders"), TopicResponse)
        before = log_records(raft)
        result = await controller.write(describe("orders"), TopicResponse)
        assert not result.committed
        assert result.offset == 1
        assert result.response.topic_id is not None  # it read the image it was given
        again = await controller.write(create_topic("orders"), TopicResponse)
        assert not again.committed
        assert again.response.error_code == Errors.TOPIC_ALREADY_EXISTS.code
        assert log_records(raft) == before
        assert raft.status().commit_index == 2  # the barrier's entry and the topic's

    run(raft, body)


def test_not_controller_when_not_leader() -> None:
    raft = LocalRaft(node_id=2)
    raft.set_leader(False)
    calls: list[str] = []

    async def body(controller: QuorumController) -> None:
        with pytest.raises(ApiException) as error:
            await controller.write(create_topic("orders", calls), TopicResponse)
        assert error.value.error is Errors.NOT_CONTROLLER
        assert "node 2 is not the leader" in error.value.message

    run(raft, body)
    assert calls == []
    assert log_records(raft) == []


def test_a_zero_or_short_idempotency_key_is_an_invalid_request() -> None:
    async def body(controller: QuorumController) -> None:
        for bad in (bytes(16), b"short"):
            with pytest.raises(ApiException) as error:
                await controller.write(create_topic("orders"), TopicResponse,
                                       idempotency_key=bad)
            assert error.value.error is Errors.INVALID_REQUEST

    run(LocalRaft(), body)


def test_a_failed_state_machine_answers_metadata_log_corrupt() -> None:
    raft = LocalRaft()
    raft.state_machine.apply_entry(b"garbage")

    async def body(controller: QuorumController) -> None:
        with pytest.raises(ApiException) as error:
            await controller.write(create_topic("orders"), TopicResponse)
        assert error.value.error is Errors.METADATA_LOG_CORRUPT

    run(raft, body)


# ------------------------------------------------------------------ the leader's barrier


def test_a_barrier_commits_after_gaining_leadership_before_the_first_write() -> None:
    raft = LocalRaft()
    changes: list[bool] = []

    async def body(controller: QuorumController) -> None:
        controller.leadership_listeners.append(changes.append)
        await controller.write(create_topic("a"), TopicResponse)
        await controller.write(create_topic("b"), TopicResponse)  # no barrier in between
        raft.set_leader(False)
        raft.set_leader(True)
        await asyncio.sleep(0)  # the leadership callbacks come through the loop
        await controller.write(create_topic("c"), TopicResponse)
        assert controller.leader_changes == 2

    run(raft, body)
    records = log_records(raft)
    assert [(offset, type(record).__name__) for offset, record in records] == [
        (0, "NoOpRecord"), (1, "TopicRecord"), (2, "TopicRecord"),
        (3, "NoOpRecord"), (4, "TopicRecord")]
    assert records[4][1].name == "c"
    epochs = [b.epoch for b in raft.state_machine.read_after(
        -1, max_records=100, max_bytes=10**6).batches]
    assert epochs == [1, 1, 1, 2, 2]
    assert changes == [False, True]


def test_a_barrier_is_not_remembered_as_an_idempotency_key() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("a"), TopicResponse, idempotency_key=key(1))

    run(raft, body)
    assert [k for k, _ in raft.state_machine.idempotency_keys()] == [key(1)]
    assert isinstance(log_records(raft)[0][1], NoOpRecord)


# ------------------------------------------------------------------ unknown outcomes and retries


def test_an_unknown_outcome_is_retried_with_the_same_key_and_commits_once() -> None:
    raft = LocalRaft()
    calls: list[str] = []

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("first"), TopicResponse)
        raft.fail_next(1)
        result = await controller.write(create_topic("orders", calls), TopicResponse,
                                        idempotency_key=key(5))
        assert result.committed
        assert result.offset == 2
        assert result.response.error_code == 0  # the first outcome, not "already exists"
        topic = controller.image.topics.get_by_name("orders")
        assert topic is not None
        assert result.response.topic_id == str(topic.topic_id)
        # The same key later: the same answer, nothing written.
        again = await controller.write(create_topic("orders", calls), TopicResponse,
                                       idempotency_key=key(5))
        assert again == result

    run(raft, body)
    assert topic_names(raft) == ["first", "orders"]
    assert calls == ["orders"]  # validated once: the retries found the key committed


def test_a_lost_ack_that_commits_later_leaves_no_phantom_in_the_speculative_image() -> None:
    """The retry's own batch comes back DUPLICATE: its records (a topic with another id) were
    never written, so later operations must not be validated against them."""
    raft = DeferredRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("first"), TopicResponse)
        raft.lose_ack_next()
        created = await controller.write(create_topic("orders"), TopicResponse,
                                         idempotency_key=key(9))
        topic = controller.image.topics.get_by_name("orders")
        assert topic is not None
        assert created.committed
        assert created.response.topic_id == str(topic.topic_id)
        grown = await controller.write(add_partition("orders"), TopicResponse)
        assert grown.committed
        assert grown.response.topic_id == str(topic.topic_id)

    run(raft, body)
    assert topic_names(raft) == ["first", "orders"]
    assert [type(r).__name__ for _, r in log_records(raft)][-1] == "PartitionRecord"


def test_a_retry_whose_first_attempt_commits_before_the_new_barrier_gets_that_outcome() -> None:
    """Leadership moved while the outcome was unknown; the new term's barrier brings the first
    attempt into the image. The retry must answer with it, not validate against it."""
    raft = DeferredRaft()
    calls: list[str] = []

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("first"), TopicResponse)
        raft.lose_ack_next()
        write = asyncio.ensure_future(controller.write(
            create_topic("orders", calls), TopicResponse, idempotency_key=key(4)))
        await asyncio.sleep(0.01)  # the first attempt failed; the retry is waiting
        raft.set_leader(False)
        raft.set_leader(True)
        result = await write
        assert result.committed
        assert result.response.error_code == 0
        topic = controller.image.topics.get_by_name("orders")
        assert topic is not None
        assert result.response.topic_id == str(topic.topic_id)

    run(raft, body)
    assert calls == ["orders"]
    assert [type(r).__name__ for _, r in log_records(raft)] == [
        "NoOpRecord", "TopicRecord", "TopicRecord", "NoOpRecord"]


def test_a_retry_with_the_key_of_a_write_in_flight_gets_its_outcome() -> None:
    raft = DeferredRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("warm-up"), TopicResponse)
        results = await asyncio.gather(
            *(controller.write(create_topic(f"t{n}"), TopicResponse) for n in range(4)),
            controller.write(create_topic("x"), TopicResponse, idempotency_key=key(3)),
            controller.write(create_topic("x"), TopicResponse, idempotency_key=key(3)),
        )
        first, retry = results[-2:]
        assert first.committed
        assert first.response.error_code == 0
        assert retry == first

    run(raft, body)
    assert topic_names(raft).count("x") == 1


def test_an_offset_mismatch_validates_the_operation_again() -> None:
    raft = LocalRaft()
    calls: list[str] = []

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("first"), TopicResponse)
        # Another writer gets there first; the controller's speculative image does not know.
        raft.propose([batch([TopicRecord(name="x", topic_id=uuid.UUID(int=77))])])
        result = await controller.write(create_topic("x", calls), TopicResponse)
        assert not result.committed
        assert result.response.error_code == Errors.TOPIC_ALREADY_EXISTS.code

    run(raft, body)
    assert calls == ["x", "x"]
    assert topic_names(raft) == ["first", "x"]


def test_a_write_that_is_not_known_to_commit_in_time_times_out() -> None:
    raft = DeferredRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("first"), TopicResponse)
        raft.hold = True
        started = time.monotonic()
        with pytest.raises(ApiException) as error:
            await controller.write(create_topic("orders"), TopicResponse, timeout=0.1)
        assert error.value.error is Errors.REQUEST_TIMED_OUT
        assert time.monotonic() - started < 2

    run(raft, body)


def test_a_corrupt_entry_of_several_batches_fails_every_writer_at_once() -> None:
    raft = DeferredRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("first"), TopicResponse)
        raft.corrupt = True
        started = time.monotonic()
        results = await asyncio.gather(
            *(controller.write(create_topic(f"t{n}"), TopicResponse)
              for n in range(MAX_ENTRIES_IN_FLIGHT + 4)),  # more than go one per entry
            return_exceptions=True)
        assert time.monotonic() - started < 2  # not the 10 s request timeout
        assert max(raft.entries) > 1  # some entry really held several batches
        for result in results:
            assert isinstance(result, ApiException)
            assert result.error is Errors.METADATA_LOG_CORRUPT

    run(raft, body, request_timeout=10.0)


# ------------------------------------------------------------------ concurrency


@pytest.mark.parametrize("make_raft", RAFTS)
def test_fifty_concurrent_writes_take_distinct_consecutive_offsets(
        make_raft: Callable[[], LocalRaft]) -> None:
    raft = make_raft()

    async def body(controller: QuorumController) -> list[int]:
        results = await asyncio.gather(
            *(controller.write(create_topic(f"t{n}"), TopicResponse) for n in range(50)))
        assert all(result.committed for result in results)
        for n, result in enumerate(results):
            assert result.response.name == f"t{n}"
        return [result.offset for result in results]

    offsets = run(raft, body)
    assert sorted(offsets) == list(range(1, 51))
    assert raft.state_machine.image.offset == 50
    assert sorted(topic_names(raft)) == sorted(f"t{n}" for n in range(50))
    if isinstance(raft, DeferredRaft):
        assert len(raft.entries) < 51  # batches waiting behind entries in flight went together


@pytest.mark.parametrize("make_raft", RAFTS)
def test_conflicting_concurrent_writes_see_each_other(make_raft: Callable[[], LocalRaft]) -> None:
    """Each is validated against the image with the other's records, committed or not yet."""
    raft = make_raft()

    async def body(controller: QuorumController) -> list[Any]:
        await controller.write(create_topic("warm-up"), TopicResponse)
        return await asyncio.gather(
            *(controller.write(create_topic("same"), TopicResponse) for _ in range(5)),
            *(controller.write(add_partition("same"), TopicResponse) for _ in range(3)),
            return_exceptions=True)

    results = run(raft, body)
    assert not [r for r in results if isinstance(r, BaseException)]
    creates, partitions = results[:5], results[5:]
    assert [r.response.error_code for r in creates] == [0] + [
        Errors.TOPIC_ALREADY_EXISTS.code] * 4
    assert sum(r.committed for r in creates) == 1
    assert all(r.committed for r in partitions)
    topic = raft.state_machine.image.topics.get_by_name("same")
    assert topic is not None
    assert sorted(topic.partitions) == [0, 1, 2]
    assert topic_names(raft) == ["warm-up", "same"]


# ------------------------------------------------------------------ reads


def test_wait_for_offset() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("a"), TopicResponse)
        assert await controller.wait_for_offset(1, 0.0)
        started = time.monotonic()
        assert not await controller.wait_for_offset(2, 0.05)
        assert 0.04 <= time.monotonic() - started < 1
        waiter = asyncio.ensure_future(controller.wait_for_offset(3, 5))
        await asyncio.sleep(0.01)
        assert not waiter.done()
        await controller.write(create_topic("b"), TopicResponse)
        await asyncio.sleep(0.01)
        assert not waiter.done()
        started = time.monotonic()
        await controller.write(create_topic("c"), TopicResponse)
        assert await waiter
        assert time.monotonic() - started < 1

    run(raft, body)


def test_read_after_waits_for_the_next_batch() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> None:
        await controller.write(create_topic("a"), TopicResponse)
        now = await controller.read_after(-1, max_records=100, max_bytes=10**6, wait=0)
        assert [b.base_offset for b in now.batches] == [0, 1]
        empty = await controller.read_after(1, max_records=100, max_bytes=10**6, wait=0)
        assert empty.batches == ()
        assert empty.high_watermark == 2
        started = time.monotonic()
        timed_out = await controller.read_after(1, max_records=100, max_bytes=10**6, wait=0.05)
        assert timed_out.batches == ()
        assert time.monotonic() - started >= 0.04
        reader = asyncio.ensure_future(
            controller.read_after(1, max_records=100, max_bytes=10**6, wait=5))
        await asyncio.sleep(0.01)
        assert not reader.done()
        started = time.monotonic()
        await controller.write(create_topic("b"), TopicResponse)
        read = await reader
        assert time.monotonic() - started < 1
        assert [b.base_offset for b in read.batches] == [2]
        assert decode_record(read.batches[0].records[0]).name == "b"
        assert read.high_watermark == 3

    run(raft, body)


# ------------------------------------------------------------------ sizes of batches and entries


class RecordingRaft(DeferredRaft):
    """Also remembers how many records each proposed entry holds."""

    def __init__(self) -> None:
        super().__init__()
        self.entry_records: list[int] = []

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        self.entry_records.append(sum(len(b.records) for b in batches))
        return super().propose(batches)


def many_noops(count: int, *, atomic: bool) -> Callable[
        [MetadataImage], ControllerResult[TopicResponse]]:
    def operation(image: MetadataImage) -> ControllerResult[TopicResponse]:
        return ControllerResult((NoOpRecord(),) * count, TopicResponse(name="noops"),
                                atomic=atomic)

    return operation


def test_a_large_non_atomic_result_commits_as_consecutive_batches_of_at_most_10000() -> None:
    raft = RecordingRaft()

    async def body(controller: QuorumController) -> Any:
        return await controller.write(many_noops(25_000, atomic=False), TopicResponse)

    result = run(raft, body)
    committed = raft.state_machine.read_after(0, max_records=10**9, max_bytes=10**12).batches
    assert [len(b.records) for b in committed] == [10_000, 10_000, 5_000]
    offsets = [b.base_offset for b in committed]
    assert offsets == [1, 10_001, 20_001]  # offset 0 is the leader's barrier
    assert result.offset == 25_000 and result.response.name == "noops"


def test_an_atomic_result_stays_one_batch_however_large() -> None:
    raft = RecordingRaft()

    async def body(controller: QuorumController) -> Any:
        return await controller.write(many_noops(12_000, atomic=True), TopicResponse)

    run(raft, body)
    committed = raft.state_machine.read_after(0, max_records=10**9, max_bytes=10**12).batches
    assert [len(b.records) for b in committed] == [12_000]


def test_group_commit_keeps_entries_under_2000_records() -> None:
    raft = RecordingRaft()

    async def body(controller: QuorumController) -> None:
        await asyncio.gather(*(controller.write(many_noops(300, atomic=True), TopicResponse)
                               for _ in range(40)))

    run(raft, body)
    assert sum(raft.entry_records) == 1 + 40 * 300  # the barrier, then every batch once
    assert max(raft.entry_records) <= 2_000
    assert any(n > 300 for n in raft.entry_records), "batches were never grouped"


def test_the_leader_applies_its_own_batch_by_taking_the_image_it_validated_against() -> None:
    raft = LocalRaft()

    async def body(controller: QuorumController) -> tuple[object, object]:
        await controller.write(create_topic("orders"), TopicResponse)
        return controller._speculative, raft.state_machine.image

    speculative, committed = run(raft, body)
    assert speculative is committed  # no second decode and replay on the leader


def test_a_staged_image_is_not_taken_for_other_records_under_the_same_key() -> None:
    raft = LocalRaft()
    base = raft.state_machine.image
    other = batch([TopicRecord(name="other", topic_id=uuid.uuid4())], key_=key(3))
    staged_image = MetadataImage.EMPTY.with_provenance(MetadataProvenance(0, 1))
    raft.state_machine.offer_staged(key(3), base, staged_image, (b"different",))
    raft.propose([other]).result()
    image = raft.state_machine.image
    assert image is not staged_image and image.topics.get_by_name("other") is not None


def test_a_write_waiting_behind_the_write_lock_times_out_within_its_deadline() -> None:
    async def body(controller: QuorumController) -> None:
        await controller._write_lock.acquire()  # an earlier write that does not finish
        try:
            started = time.monotonic()
            with pytest.raises(ApiException) as raised:
                await controller.write(create_topic("late"), TopicResponse,
                                       idempotency_key=key(9), timeout=0.3)
            assert raised.value.error is Errors.REQUEST_TIMED_OUT
            assert time.monotonic() - started < 1.0
        finally:
            controller._write_lock.release()
        assert controller.image.topics.get_by_name("late") is None  # nothing was proposed
        done = await controller.write(create_topic("later"), TopicResponse,
                                      idempotency_key=key(10))
        assert done.committed  # the lock is free again

    run(LocalRaft(), body)
