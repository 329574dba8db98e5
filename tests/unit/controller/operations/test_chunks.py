from __future__ import annotations

import uuid
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.chunks import (
    MAX_CHUNK_OFFSET,
    alter_chunk_assignments,
    chunk_replica_state,
    create_chunks,
)
from chunkraft.controller.operations.record_budget import MAX_RECORDS_PER_USER_OP
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.chunks import (
    AlterChunkAssignmentsRequest,
    AlterChunkAssignmentsResponse,
    ChunkReplicaStateRequest,
    ChunkReplicaStateResponse,
    CreateChunksRequest,
    CreateChunksResponse,
)
from chunkraft.records import ChunkChangeRecord, ChunkRecord, PartitionChangeRecord
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    apply,
    broker_epoch,
    chunk,
    chunk_of,
    cluster,
    commit_valid,
    partition,
    partition_of,
    topic_of,
    with_topic,
)

DIRS = (uuid.UUID(int=0xD0), uuid.UUID(int=0xD1))


def _base(**partition_fields: Any) -> MetadataImage:
    """Brokers 0-4 (4 fenced); orders-0 on (0, 1) led by 0 at leader epoch 3, its active chunk
    starting at offset 100 at time 5000, and an inactive chunk 0..99 on (0, 1)."""
    fields: dict[str, Any] = {"leader_epoch": 3, "start_offset": 100, "start_timestamp": 5000}
    fields.update(partition_fields)
    image = with_topic(cluster(range(5), fenced=(4,)), replicas=((0, 1), (1, 2)), **fields)
    return apply(image, chunk(0, 99, 99, (0, 1)))


# ------------------------------------------------------------------ create_chunks


def _cut_request(*partitions: dict[str, Any], topic: str = "orders",
                 **request: Any) -> CreateChunksRequest:
    return CreateChunksRequest.model_validate(
        {"topics": [{"name": topic, "partitions": list(partitions)}], **request})


def _cut(partition_index: int = 0, broker_ids: tuple[int, ...] = (1, 2), stop: int = 149,
         end: int = 151, **fields: Any) -> dict[str, Any]:
    values = {"partition_index": partition_index, "broker_ids": list(broker_ids),
              "prev_stop_offset": stop, "prev_end_offset": end, "start_offset": stop + 1,
              "start_timestamp": 6000}
    values.update(fields)
    return values


def _cut_outcomes(result: ControllerResult[CreateChunksResponse]
                  ) -> list[tuple[int, Errors, str | None]]:
    return [(p.partition_index, Errors.for_code(p.error_code), p.error_message)
            for t in result.response.topics for p in t.partitions]


def test_a_cut_turns_the_active_chunk_into_an_inactive_one() -> None:
    image = _base()
    result = create_chunks(image, _cut_request(_cut()))
    assert _cut_outcomes(result) == [(0, Errors.NONE, None)]
    assert result.records == (
        ChunkRecord(partition_id=0, topic_id=ORDERS_ID, start_offset=100, start_timestamp=5000,
                    stop_offset=149, end_offset=151, chunk_epoch=0, replicas=(0, 1),
                    isr=(0, 1), epoch=0),
        PartitionChangeRecord(partition_id=0, topic_id=ORDERS_ID, replicas=(1, 2), isr=(1, 2),
                              leader=1, start_offset=150, start_timestamp=6000),
    )
    after = commit_valid(image, result)
    active = partition_of(after, 0)
    assert (active.replicas, active.isr, active.leader, active.leader_epoch,
            active.partition_epoch, active.start_offset, active.start_timestamp) == (
        (1, 2), (1, 2), 1, 4, 1, 150, 6000)
    assert [(c.start_offset, c.stop_offset, c.end_offset) for c in topic_of(after).chunks_of(0)
            ] == [(0, 99, 99), (100, 149, 151)]
    assert partition_of(after, 1) == partition_of(image, 1)

    # The next cut starts where this one left the active chunk.
    again = create_chunks(after, _cut_request(_cut(broker_ids=(3, 0), stop=199, end=199,
                                                   leader=0, start_timestamp=6000)))
    later = commit_valid(after, again)
    assert chunk_of(later, 150).replicas == (1, 2)
    assert (partition_of(later, 0).leader, partition_of(later, 0).start_offset) == (0, 200)


def test_a_cut_with_an_open_transaction_overlaps_the_chunks() -> None:
    # LSO 140 < HW 152: the old chunk serves reads up to 139 and holds data up to 151.
    result = create_chunks(_base(), _cut_request(_cut(stop=139, end=151)))
    old, change = result.records
    assert (old.stop_offset, old.end_offset, change.start_offset) == (139, 151, 140)


def test_directories_follow_the_old_chunk_and_are_unknown_for_the_new_replicas() -> None:
    image = _base(directories=DIRS)
    result = create_chunks(image, _cut_request(_cut()))
    old, change = result.records
    assert old.directories == DIRS and change.directories == ()
    after = commit_valid(image, result)
    assert partition_of(after, 0).directories == ()
    assert chunk_of(after, 100).directories == DIRS


def test_a_legacy_partition_without_a_start_offset_cuts_from_zero() -> None:
    image = _base(start_offset=-1, start_timestamp=-1)
    result = create_chunks(image, _cut_request(_cut(stop=9, end=9, start_timestamp=-1)))
    after = commit_valid(image, result)
    assert (chunk_of(after, 0).stop_offset, chunk_of(after, 0).start_timestamp) == (9, -1)
    assert partition_of(after, 0).start_offset == 10


def test_the_leader_broker_may_forward_a_cut() -> None:
    request = _cut_request(_cut(leader_epoch=3), broker_id=0, broker_epoch=broker_epoch(0))
    result = create_chunks(_base(), request)
    assert _cut_outcomes(result) == [(0, Errors.NONE, None)] and len(result.records) == 2


@pytest.mark.parametrize(
    ("broker_id", "epoch", "message"),
    [
        (0, 7, f"Expected broker epoch {broker_epoch(0)}, but got broker epoch 7"),
        (9, 7, "No broker registration found for broker 9"),
    ],
)
def test_a_stale_broker_epoch_refuses_the_whole_cut(broker_id: int, epoch: int,
                                                    message: str) -> None:
    request = _cut_request(_cut(), _cut(1, broker_ids=(2, 3)), broker_id=broker_id,
                           broker_epoch=epoch)
    result = create_chunks(_base(), request)
    response = result.response
    assert (Errors.for_code(response.error_code), response.error_message) == (
        Errors.STALE_BROKER_EPOCH, message)
    assert _cut_outcomes(result) == [(0, Errors.STALE_BROKER_EPOCH, message),
                                     (1, Errors.STALE_BROKER_EPOCH, message)]
    assert result.records == ()


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"partition_index": 7}, Errors.UNKNOWN_TOPIC_OR_PARTITION,
         "Partition orders-7 does not exist."),
        ({"leader_epoch": 2}, Errors.FENCED_LEADER_EPOCH,
         "The request carries leader epoch 2, but orders-0 is at leader epoch 3."),
        ({"leader_epoch": 4}, Errors.UNKNOWN_LEADER_EPOCH,
         "The request carries leader epoch 4, but orders-0 is at leader epoch 3."),
        ({"broker_ids": []}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The new active chunk's assignment includes an empty replica list."),
        ({"broker_ids": [1, 8]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The new active chunk's assignment includes broker 8, but no such broker is "
         "registered."),
        ({"broker_ids": [2, 2]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The new active chunk's assignment includes the broker 2 more than once."),
        ({"broker_ids": [1, 2, 3]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The new active chunk's assignment includes 3 replica(s), but the replication factor "
         "of orders-0 is 2."),
        ({"broker_ids": [1, 4]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The new active chunk's assignment includes broker 4, which is fenced."),
        ({"leader": 3}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The leader 3 of the new active chunk is not one of its replicas [1, 2]."),
        ({"start_offset": 151}, Errors.INVALID_CHUNK_OFFSETS,
         "StartOffset 151 must be PrevStopOffset + 1 (150)."),
        ({"prev_end_offset": 148}, Errors.INVALID_CHUNK_OFFSETS,
         "PrevStopOffset 149 is after PrevEndOffset 148: the last stable offset cannot pass "
         "the high watermark."),
        ({"prev_stop_offset": 99, "start_offset": 100}, Errors.INVALID_REQUEST,
         "The active chunk of orders-0 is empty: StartOffset 100 is its own start offset, so "
         "there is nothing to cut."),
        ({"prev_stop_offset": 49, "start_offset": 50}, Errors.INVALID_CHUNK_OFFSETS,
         "StartOffset 50 is before the start offset 100 of the active chunk of orders-0."),
        ({"start_timestamp": 4999}, Errors.INVALID_CHUNK_OFFSETS,
         "StartTimestamp 4999 is before the start timestamp 5000 of the active chunk of "
         "orders-0."),
    ],
)
def test_bad_cuts_are_refused(fields: dict[str, Any], error: Errors, message: str) -> None:
    image = _base()
    request = _cut_request(_cut(**fields), _cut(1, broker_ids=(2, 3)))
    result = create_chunks(image, request)
    outcomes = _cut_outcomes(result)
    assert outcomes[0][1:] == (error, message)
    # The other partition of the request is cut; nothing of the refused one is written.
    assert outcomes[1] == (1, Errors.NONE, None)
    assert {r.partition_id for r in result.records} == {1} and len(result.records) == 2
    after = commit_valid(image, result)
    assert partition_of(after, 0) == partition_of(image, 0)


def test_a_timestamp_below_minus_one_is_refused() -> None:
    image = _base(start_timestamp=-1)
    result = create_chunks(image, _cut_request(_cut(start_timestamp=-5)))
    assert _cut_outcomes(result) == [(0, Errors.INVALID_CHUNK_OFFSETS,
                                      "StartTimestamp -5 is not a timestamp (-1: unknown).")]


def test_cut_refusals_that_depend_on_the_image() -> None:
    moving = _base(adding_replicas=(0,), removing_replicas=(1,))
    result = create_chunks(moving, _cut_request(_cut()))
    assert _cut_outcomes(result) == [(0, Errors.REASSIGNMENT_IN_PROGRESS,
                                      "A reassignment of orders-0 is in progress; cut a chunk "
                                      "once it completes.")]
    not_leader = create_chunks(_base(), _cut_request(
        _cut(), broker_id=1, broker_epoch=broker_epoch(1)))
    assert _cut_outcomes(not_leader) == [(0, Errors.NOT_LEADER_OR_FOLLOWER,
                                          "Broker 1 is not the leader of orders-0; its leader "
                                          "is 0.")]
    ghost = create_chunks(_base(), _cut_request(_cut(), topic="ghost"))
    assert _cut_outcomes(ghost) == [(0, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                     "Topic 'ghost' does not exist.")]


@pytest.mark.parametrize("offsets", [
    {"stop": 2**63 - 2, "end": 2**63 - 2},  # start 2^63 - 1: no batch could be appended
    {"stop": MAX_CHUNK_OFFSET, "end": MAX_CHUNK_OFFSET},  # start one past the last that fits
    {"stop": 149, "end": MAX_CHUNK_OFFSET + 1},
])
def test_offsets_past_what_a_log_can_append_at_are_invalid_request(offsets: dict[str, int]
                                                                   ) -> None:
    result = create_chunks(_base(), _cut_request(_cut(stop=offsets["stop"], end=offsets["end"])))
    [(index, error, message)] = _cut_outcomes(result)
    assert (index, error) == (0, Errors.INVALID_REQUEST)
    assert message is not None and f"past {MAX_CHUNK_OFFSET}" in message
    assert result.records == ()


def test_the_last_offset_a_log_can_append_at_may_start_a_chunk() -> None:
    assert MAX_CHUNK_OFFSET + (2**31 - 1) + 1 == 2**63 - 1  # a full batch there still fits
    result = create_chunks(_base(), _cut_request(_cut(stop=MAX_CHUNK_OFFSET - 1,
                                                      end=MAX_CHUNK_OFFSET)))
    assert _cut_outcomes(result) == [(0, Errors.NONE, None)]
    assert partition_of(commit_valid(_base(), result), 0).start_offset == MAX_CHUNK_OFFSET


def test_a_partition_named_twice_is_refused_each_time() -> None:
    result = create_chunks(_base(), _cut_request(_cut(), _cut(broker_ids=(2, 3))))
    assert _cut_outcomes(result) == [(0, Errors.INVALID_REQUEST, "Duplicate partition orders-0."),
                                     (0, Errors.INVALID_REQUEST, "Duplicate partition orders-0.")]
    assert result.records == ()


def test_validate_only_cut_writes_nothing() -> None:
    image = _base()
    result = create_chunks(image, _cut_request(_cut(), _cut(1, broker_ids=(9, 9)),
                                               validate_only=True))
    assert [o[1] for o in _cut_outcomes(result)] == [Errors.NONE,
                                                     Errors.INVALID_REPLICA_ASSIGNMENT]
    assert result.records == () and commit_valid(image, result) is image


def test_the_record_limit_refuses_cuts_past_it() -> None:
    count = MAX_RECORDS_PER_USER_OP // 2 + 1
    image = with_topic(cluster((0, 1)), replicas=[(0,)] * count)
    request = _cut_request(*(_cut(i, broker_ids=(1,), stop=9, end=9) for i in range(count)))
    result = create_chunks(image, request)
    outcomes = _cut_outcomes(result)
    assert all(error is Errors.NONE for _, error, _ in outcomes[:-1])
    assert outcomes[-1] == (count - 1, Errors.POLICY_VIOLATION,
                            f"Cutting the active chunk of orders-{count - 1} needs 2 records, "
                            "but only 0 of the 10000 records one operation may write are left "
                            "after the items before it; send it in a separate request.")
    assert len(result.records) == MAX_RECORDS_PER_USER_OP


# ------------------------------------------------------------------ alter_chunk_assignments


def _move(*chunks: dict[str, Any], validate_only: bool = False) -> AlterChunkAssignmentsRequest:
    return AlterChunkAssignmentsRequest.model_validate(
        {"chunks": list(chunks), "validate_only": validate_only})


def _target(broker_ids: tuple[int, ...], start: int = 0, **fields: Any) -> dict[str, Any]:
    values = {"topic_name": "orders", "partition_id": 0, "start_offset": start,
              "broker_ids": list(broker_ids)}
    values.update(fields)
    return values


def _move_outcomes(result: ControllerResult[AlterChunkAssignmentsResponse]
                   ) -> list[tuple[int, Errors, str | None]]:
    return [(r.start_offset, Errors.for_code(r.error_code), r.error_message)
            for r in result.response.results]


def _state(image: MetadataImage, start: int = 0) -> tuple[Any, ...]:
    c = chunk_of(image, start)
    return c.replicas, c.isr, c.adding_replicas, c.removing_replicas, c.epoch


def test_a_move_adds_the_target_first_and_marks_adding_and_removing() -> None:
    image = _base()
    result = alter_chunk_assignments(image, _move(_target((2, 3), chunk_epoch=0)))
    assert _move_outcomes(result) == [(0, Errors.NONE, None)]
    assert result.records == (ChunkChangeRecord(
        partition_id=0, topic_id=ORDERS_ID, start_offset=0, replicas=(2, 3, 0, 1), isr=(0, 1),
        adding_replicas=(2, 3), removing_replicas=(0, 1), epoch=1),)
    after = commit_valid(image, result)
    assert _state(after) == ((2, 3, 0, 1), (0, 1), (2, 3), (0, 1), 1)
    assert chunk_of(after, 0).chunk_epoch == 1
    assert (chunk_of(after, 0).start_offset, chunk_of(after, 0).stop_offset) == (0, 99)


def test_a_move_that_keeps_a_replica_only_adds_and_removes_the_others() -> None:
    image = _base()
    after = commit_valid(image, alter_chunk_assignments(image, _move(_target((1, 2)))))
    assert _state(after) == ((1, 2, 0), (0, 1), (2,), (0,), 1)


def test_a_move_in_progress_accepts_its_own_target_again_and_refuses_another() -> None:
    image = _base()
    moving = commit_valid(image, alter_chunk_assignments(image, _move(_target((2, 3)))))
    same = alter_chunk_assignments(moving, _move(_target((2, 3))))
    assert _move_outcomes(same) == [(0, Errors.NONE, None)] and same.records == ()
    other = alter_chunk_assignments(moving, _move(_target((2, 0))))
    assert _move_outcomes(other) == [(0, Errors.REASSIGNMENT_IN_PROGRESS,
                                      "A reassignment of chunk orders-0@0 to [2, 3] is in "
                                      "progress.")]
    assert other.records == ()


def test_a_target_equal_to_the_replicas_writes_nothing_and_a_reorder_completes_at_once() -> None:
    image = _base()
    same = alter_chunk_assignments(image, _move(_target((0, 1))))
    assert _move_outcomes(same) == [(0, Errors.NONE, None)] and same.records == ()
    reordered = commit_valid(image, alter_chunk_assignments(image, _move(_target((1, 0)))))
    assert _state(reordered) == ((1, 0), (1, 0), (), (), 1)


def test_dropping_extra_replicas_completes_at_once_but_never_the_last_in_sync_one() -> None:
    image = apply(_base(), chunk(100, 149, 149, (0, 1, 2), isr=(0, 2)))
    result = alter_chunk_assignments(image, _move(_target((2, 1), start=100)))
    assert _state(commit_valid(image, result), 100) == ((2, 1), (2,), (), (), 1)
    keeps_zero = alter_chunk_assignments(image, _move(_target((1, 0), start=100)))
    assert _state(commit_valid(image, keeps_zero), 100) == ((1, 0), (0,), (), (), 1)
    image = apply(_base(), chunk(100, 149, 149, (0, 1, 2), isr=(2,)))
    unsafe = alter_chunk_assignments(image, _move(_target((1, 0), start=100)))
    assert _move_outcomes(unsafe) == [(100, Errors.INVALID_REPLICA_ASSIGNMENT,
                                       "The chunk assignment [1, 0] would leave chunk "
                                       "orders-0@100 without an in-sync replica (its in-sync "
                                       "replicas are [2]).")]


def test_a_chunk_without_an_in_sync_replica_cannot_be_copied() -> None:
    image = apply(_base(), chunk(100, 149, 149, (0, 1), isr=()))
    result = alter_chunk_assignments(image, _move(_target((2, 3), start=100)))
    assert _move_outcomes(result) == [(100, Errors.REPLICA_NOT_AVAILABLE,
                                       "Chunk orders-0@100 has no in-sync replica for the new "
                                       "replicas to copy from.")]


def test_directories_are_unknown_after_a_move() -> None:
    image = apply(_base(), chunk(100, 149, 149, (0, 1), directories=DIRS))
    after = commit_valid(image, alter_chunk_assignments(image, _move(_target((2, 3), 100))))
    assert chunk_of(after, 100).directories == ()


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"topic_name": "ghost"}, Errors.UNKNOWN_TOPIC_OR_PARTITION,
         "Topic 'ghost' does not exist."),
        ({"partition_id": 5}, Errors.UNKNOWN_TOPIC_OR_PARTITION,
         "Partition orders-5 does not exist."),
        ({"start_offset": 50}, Errors.UNKNOWN_CHUNK,
         "Partition orders-0 has no inactive chunk that starts at offset 50."),
        ({"start_offset": 100}, Errors.UNKNOWN_CHUNK,
         "Offset 100 starts the active chunk of orders-0, which moves with a partition "
         "reassignment, not as an inactive chunk."),
        ({"chunk_epoch": 1}, Errors.FENCED_CHUNK_EPOCH,
         "Chunk orders-0@0 is at epoch 0; the request carries epoch 1."),
        ({"broker_ids": []}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The chunk assignment includes an empty replica list."),
        ({"broker_ids": [2, 7]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The chunk assignment includes broker 7, but no such broker is registered."),
        ({"broker_ids": [3, 3]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The chunk assignment includes the broker 3 more than once."),
        ({"broker_ids": [2]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The chunk assignment includes 1 replica(s), but the replication factor of orders-0 "
         "is 2."),
        ({"broker_ids": [2, 4]}, Errors.INVALID_REPLICA_ASSIGNMENT,
         "The chunk assignment includes broker 4, which is fenced."),
    ],
)
def test_bad_moves_are_refused(fields: dict[str, Any], error: Errors, message: str) -> None:
    image = apply(_base(), chunk(150, 199, 199, (0, 1)))
    bad = _target((2, 3))
    bad.update(fields)
    result = alter_chunk_assignments(image, _move(bad, _target((2, 3), start=150)))
    assert _move_outcomes(result)[0][1:] == (error, message)
    assert _move_outcomes(result)[1] == (150, Errors.NONE, None)
    assert [r.start_offset for r in result.records] == [150]
    after = commit_valid(image, result)
    assert _state(after, 0) == _state(image, 0)


def test_a_chunk_named_twice_is_refused_each_time() -> None:
    result = alter_chunk_assignments(_base(), _move(_target((2, 3)), _target((3, 2))))
    duplicate = (0, Errors.INVALID_REQUEST, "Duplicate chunk orders-0@0.")
    assert _move_outcomes(result) == [duplicate, duplicate]
    assert result.records == ()


def test_validate_only_move_writes_nothing() -> None:
    image = _base()
    result = alter_chunk_assignments(image, _move(_target((2, 3)), validate_only=True))
    assert _move_outcomes(result) == [(0, Errors.NONE, None)]
    assert result.records == () and commit_valid(image, result) is image


# ------------------------------------------------------------------ chunk_replica_state


def _report(broker_id: int, *chunks: dict[str, Any], epoch: int | None = None
            ) -> ChunkReplicaStateRequest:
    return ChunkReplicaStateRequest.model_validate({
        "broker_id": broker_id,
        "broker_epoch": broker_epoch(broker_id) if epoch is None else epoch,
        "chunks": list(chunks),
    })


def _item(state: str, start: int = 0, **fields: Any) -> dict[str, Any]:
    values = {"topic_name": "orders", "partition_id": 0, "start_offset": start, "state": state}
    values.update(fields)
    return values


def _report_outcomes(result: ControllerResult[ChunkReplicaStateResponse]
                     ) -> list[tuple[int, Errors, str | None]]:
    return [(r.start_offset, Errors.for_code(r.error_code), r.error_message)
            for r in result.response.results]


def _moving() -> MetadataImage:
    """_base with chunk 0 moving from (0, 1) to (2, 3)."""
    image = _base()
    return commit_valid(image, alter_chunk_assignments(image, _move(_target((2, 3)))))


def test_a_move_completes_when_every_adding_replica_reported() -> None:
    image = _moving()
    first = chunk_replica_state(image, _report(2, _item("in_sync", chunk_epoch=1)))
    assert _report_outcomes(first) == [(0, Errors.NONE, None)]
    image = commit_valid(image, first)
    assert _state(image) == ((2, 3, 0, 1), (2, 0, 1), (2, 3), (0, 1), 2)

    repeated = chunk_replica_state(image, _report(2, _item("in_sync")))
    assert _report_outcomes(repeated) == [(0, Errors.NONE, None)] and repeated.records == ()

    last = chunk_replica_state(image, _report(3, _item("in_sync")))
    assert last.records == (ChunkChangeRecord(
        partition_id=0, topic_id=ORDERS_ID, start_offset=0, replicas=(2, 3), isr=(2, 3),
        epoch=3),)
    image = commit_valid(image, last)
    assert _state(image) == ((2, 3), (2, 3), (), (), 3)

    done = chunk_replica_state(image, _report(3, _item("in_sync")))
    assert _report_outcomes(done) == [(0, Errors.NONE, None)] and done.records == ()
    removed = chunk_replica_state(image, _report(0, _item("in_sync")))
    assert _report_outcomes(removed) == [(0, Errors.NO_REASSIGNMENT_IN_PROGRESS,
                                          "Broker 0 is not a replica of chunk orders-0@0, and "
                                          "no reassignment of it is in progress.")]


def test_a_report_from_a_broker_the_move_does_not_add_is_refused() -> None:
    result = chunk_replica_state(_moving(), _report(4, _item("in_sync")))
    assert _report_outcomes(result) == [(0, Errors.NO_REASSIGNMENT_IN_PROGRESS,
                                         "Broker 4 is not a replica of chunk orders-0@0; the "
                                         "reassignment in progress adds [2, 3].")]


def test_a_lagging_replica_that_caught_up_joins_the_isr() -> None:
    image = apply(_base(), chunk(100, 149, 149, (0, 1), isr=(1,)))
    result = chunk_replica_state(image, _report(0, _item("in_sync", 100)))
    assert _state(commit_valid(image, result), 100) == ((0, 1), (0, 1), (), (), 1)


def test_reports_check_the_broker_and_chunk_epochs() -> None:
    stale = chunk_replica_state(_moving(), _report(2, _item("in_sync"), _item("dropped", 5),
                                                   epoch=1))
    message = f"Expected broker epoch {broker_epoch(2)}, but got broker epoch 1"
    assert (Errors.for_code(stale.response.error_code), stale.response.error_message) == (
        Errors.STALE_BROKER_EPOCH, message)
    assert _report_outcomes(stale) == [(0, Errors.STALE_BROKER_EPOCH, message),
                                       (5, Errors.STALE_BROKER_EPOCH, message)]
    assert stale.records == ()
    unknown = chunk_replica_state(_moving(), _report(9, _item("in_sync"), epoch=0))
    assert unknown.response.error_message == "No broker registration found for broker 9"
    fenced = chunk_replica_state(_moving(), _report(2, _item("in_sync", chunk_epoch=0)))
    assert _report_outcomes(fenced) == [(0, Errors.FENCED_CHUNK_EPOCH,
                                         "Chunk orders-0@0 is at epoch 1; the request carries "
                                         "epoch 0.")]


def test_the_last_replica_to_drop_a_chunk_removes_it() -> None:
    image = _base()
    first = chunk_replica_state(image, _report(0, _item("dropped")))
    image = commit_valid(image, first)
    assert _state(image) == ((1,), (1,), (), (), 1)
    again = chunk_replica_state(image, _report(0, _item("dropped")))
    assert _report_outcomes(again) == [(0, Errors.NONE, None)] and again.records == ()
    last = chunk_replica_state(image, _report(1, _item("dropped", chunk_epoch=1)))
    assert last.records == (ChunkChangeRecord(partition_id=0, topic_id=ORDERS_ID,
                                              start_offset=0, replicas=(), epoch=2),)
    image = commit_valid(image, last)
    assert topic_of(image).chunks_of(0) == ()
    gone = chunk_replica_state(image, _report(1, _item("dropped")))
    assert _report_outcomes(gone) == [(0, Errors.UNKNOWN_CHUNK, "Partition orders-0 has no "
                                       "inactive chunk that starts at offset 0.")]


def test_drops_during_a_move() -> None:
    image = _moving()  # (2, 3, 0, 1): adding (2, 3), removing (0, 1), isr (0, 1)
    image = commit_valid(image, chunk_replica_state(image, _report(0, _item("dropped"))))
    assert _state(image) == ((2, 3, 1), (1,), (2, 3), (1,), 2)
    image = commit_valid(image, chunk_replica_state(image, _report(2, _item("in_sync"))))
    assert _state(image) == ((2, 3, 1), (2, 1), (2, 3), (1,), 3)
    # The last adding replica drops: nothing is left to copy, so the move completes.
    image = commit_valid(image, chunk_replica_state(image, _report(3, _item("dropped"))))
    assert _state(image) == ((2,), (2,), (), (), 4)


def test_a_move_whose_target_keeps_no_in_sync_replica_is_cancelled() -> None:
    image = apply(_base(), chunk(100, 149, 149, (0, 1), isr=(0,)))  # 1 is lagging
    image = commit_valid(image, alter_chunk_assignments(image, _move(_target((1, 2), 100))))
    assert _state(image, 100) == ((1, 2, 0), (0,), (2,), (0,), 1)
    # 2 drops before it copied: completing would keep only 1, which holds no full copy.
    image = commit_valid(image, chunk_replica_state(image, _report(2, _item("dropped", 100))))
    assert _state(image, 100) == ((1, 0), (0,), (), (), 2)


def test_a_chunk_reported_twice_in_one_report_is_refused() -> None:
    result = chunk_replica_state(_moving(), _report(2, _item("in_sync"), _item("dropped")))
    assert _report_outcomes(result) == [(0, Errors.INVALID_REQUEST,
                                         "Duplicate chunk orders-0@0.")] * 2
    assert result.records == ()


def test_reports_on_several_chunks_apply_independently() -> None:
    image = apply(_moving(), chunk(100, 149, 149, (2, 1)))
    result = chunk_replica_state(image, _report(2, _item("in_sync"), _item("dropped", 100),
                                                _item("dropped", 7)))
    assert [o[1] for o in _report_outcomes(result)] == [Errors.NONE, Errors.NONE,
                                                        Errors.UNKNOWN_CHUNK]
    after = commit_valid(image, result)
    assert _state(after, 0)[1] == (2, 0, 1)
    assert _state(after, 100) == ((1,), (1,), (), (), 1)
    assert partition_of(after, 0) == partition(0, (0, 1), leader_epoch=3, start_offset=100,
                                               start_timestamp=5000)


ILLEGAL_NAMES = [
    ("", "Topic name is illegal, it can't be empty"),
    (".", 'Topic name cannot be "." or ".."'),
    ("..", 'Topic name cannot be "." or ".."'),
    ("a" * 250, "Topic name is illegal, it can't be longer than 249 characters, topic name: "
     + "a" * 250),
    ("or ders", 'Topic name "or ders" is illegal, it contains a character other than ASCII '
     "alphanumerics, '.', '_' and '-'"),
]


@pytest.mark.parametrize(("name", "message"), ILLEGAL_NAMES)
def test_an_illegal_topic_name_in_a_cut_or_a_move_is_invalid_topic_exception(
        name: str, message: str) -> None:
    cut = create_chunks(_base(), _cut_request(_cut(), topic=name))
    assert _cut_outcomes(cut) == [(0, Errors.INVALID_TOPIC_EXCEPTION, message)]
    assert not cut.records
    move = alter_chunk_assignments(_base(), _move(_target((1, 2), topic_name=name)))
    assert _move_outcomes(move) == [(0, Errors.INVALID_TOPIC_EXCEPTION, message)]
    assert not move.records
