"""Value checks (chunkraft.records.validation): each Check kind, types and cross-field rules."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from chunkraft.errors import RecordValidationError
from chunkraft.records import (
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ChunkChangeRecord,
    ChunkRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    validate_record,
)
from chunkraft.records.schema import ZERO_UUID
from chunkraft.records.validation import MAX_TOPIC_NAME_LENGTH

TOPIC_ID = uuid.UUID(int=42)
DIR = uuid.UUID(int=7)

CHUNK = ChunkRecord(
    partition_id=0,
    topic_id=TOPIC_ID,
    start_offset=0,
    start_timestamp=1000,
    stop_offset=9,
    end_offset=11,
    chunk_epoch=0,
    replicas=(1, 2, 3),
    isr=(1, 2),
    epoch=0,
)
PARTITION = PartitionRecord(
    partition_id=0,
    topic_id=TOPIC_ID,
    replicas=(1, 2, 3),
    isr=(1, 2, 3),
    leader=1,
    leader_epoch=0,
    partition_epoch=0,
    start_offset=0,
    start_timestamp=0,
)
PARTITION_CHANGE = PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, isr=(1,))
CHUNK_CHANGE = ChunkChangeRecord(
    partition_id=0, topic_id=TOPIC_ID, start_offset=0, replicas=(1, 2), isr=(1,), epoch=1
)
VALID = [
    CHUNK,
    PARTITION,
    PARTITION_CHANGE,
    CHUNK_CHANGE,
    TopicRecord(name="orders", topic_id=TOPIC_ID),
    RemoveTopicRecord(topic_id=TOPIC_ID),
    RegisterBrokerRecord(
        broker_id=0,
        incarnation_id=TOPIC_ID,
        broker_epoch=5,
        end_points=(BrokerEndpoint("PLAINTEXT", "localhost", 9092, 0),),
    ),
    UnregisterBrokerRecord(broker_id=3, broker_epoch=5),
    BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=2, fenced=-1),
    ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=0),
    AccessControlEntryRecord(id=TOPIC_ID, resource_type=2, principal="User:a"),
    NoOpRecord(),
]


def _fails(record: Any, field: str, version: int | None = None, *, name: str = "") -> str:
    with pytest.raises(RecordValidationError) as info:
        validate_record(record, version)
    assert info.value.field == field, str(info.value)
    assert info.value.record_name == (name or type(record).__name__)
    return str(info.value)


@pytest.mark.parametrize("record", VALID, ids=lambda r: type(r).__name__)
def test_valid_records_pass(record: Any) -> None:
    validate_record(record)


# ---------------------------------------------------------------- Check kinds


@pytest.mark.parametrize(
    ("record", "field"),
    [
        # BROKER_ID: >= 0, for scalars and for each array element
        (RegisterBrokerRecord(broker_id=-1, incarnation_id=TOPIC_ID), "broker_id"),
        (CHUNK._replace(replicas=(1, -1), isr=(1,)), "replicas"),
        # PARTITION_ID: >= 0
        (CHUNK._replace(partition_id=-1), "partition_id"),
        (PARTITION._replace(prior_partition_epochs=(PriorPartitionEpoch(-1, 0),)), "partition_id"),
        # EPOCH: >= -1
        (CHUNK._replace(chunk_epoch=-2, epoch=-2), "chunk_epoch"),
        (UnregisterBrokerRecord(broker_id=1, broker_epoch=-2), "broker_epoch"),
        # OFFSET: >= -1
        (PARTITION._replace(start_offset=-2), "start_offset"),
        # TIMESTAMP: >= -1
        (CHUNK._replace(start_timestamp=-2), "start_timestamp"),
        # NON_NEGATIVE: >= 0
        (ProducerIdsRecord(next_producer_id=-1), "next_producer_id"),
        # LEADER: >= -1
        (PARTITION._replace(leader=-2), "leader"),
        (ProducerIdsRecord(broker_id=-2, next_producer_id=0), "broker_id"),
        # CHANGED_LEADER: >= -2
        (PARTITION_CHANGE._replace(leader=-3), "leader"),
        # TOPIC_ID: a uuid that is not all zeros
        (TopicRecord(name="t", topic_id=ZERO_UUID), "topic_id"),
        (AccessControlEntryRecord(id=ZERO_UUID), "id"),
    ],
)
def test_each_check_refuses_values_below_its_minimum(record: Any, field: str) -> None:
    nested = field == "partition_id" and type(record) is PartitionRecord
    message = _fails(record, field, name="PriorPartitionEpoch" if nested else "")
    assert "minimum" in message or "zero uuid" in message


@pytest.mark.parametrize(
    "record",
    [
        RegisterBrokerRecord(broker_id=0, incarnation_id=TOPIC_ID),
        CHUNK._replace(chunk_epoch=-1, epoch=-1, start_timestamp=-1),
        PARTITION._replace(start_offset=-1, leader=-1, leader_epoch=-1, partition_epoch=-1),
        PARTITION._replace(prior_partition_epochs=(PriorPartitionEpoch(0, -1),)),
        ProducerIdsRecord(broker_id=-1, next_producer_id=0),
        PARTITION_CHANGE._replace(leader=-2),
        PARTITION_CHANGE._replace(leader=-1),
    ],
)
def test_each_check_accepts_its_minimum(record: Any) -> None:
    validate_record(record)


def test_unchecked_integers_are_bounded_by_their_type() -> None:
    validate_record(AccessControlEntryRecord(id=TOPIC_ID, resource_type=-128, operation=127))
    message = _fails(AccessControlEntryRecord(id=TOPIC_ID, operation=128), "operation")
    assert "does not fit in int8" in message
    _fails(CHUNK._replace(partition_id=2**31), "partition_id")
    _fails(CHUNK._replace(end_offset=2**63), "end_offset")
    _fails(
        RegisterBrokerRecord(
            broker_id=1, incarnation_id=TOPIC_ID, end_points=(BrokerEndpoint(port=65536),)
        ),
        "port",
        name="BrokerEndpoint",
    )


# ---------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (CHUNK._replace(partition_id="0"), "partition_id"),  # type: ignore[arg-type]
        (CHUNK._replace(partition_id=True), "partition_id"),
        (CHUNK._replace(start_offset=0.0), "start_offset"),  # type: ignore[arg-type]
        (CHUNK._replace(replicas=[1, 2, 3]), "replicas"),  # type: ignore[arg-type]
        (CHUNK._replace(replicas=None), "replicas"),  # type: ignore[arg-type]
        (CHUNK._replace(topic_id=str(TOPIC_ID)), "topic_id"),  # type: ignore[arg-type]
        (TopicRecord(name=b"orders", topic_id=TOPIC_ID), "name"),  # type: ignore[arg-type]
        (TopicRecord(name=None, topic_id=TOPIC_ID), "name"),  # type: ignore[arg-type]
        (RegisterBrokerRecord(broker_id=1, incarnation_id=TOPIC_ID, fenced=1), "fenced"),  # type: ignore[arg-type]
        (RegisterBrokerRecord(broker_id=1, end_points=((),)), "end_points"),  # type: ignore[arg-type]
        (
            RegisterBrokerRecord(
                broker_id=1, incarnation_id=TOPIC_ID, end_points=(PriorPartitionEpoch(0, 0),)  # type: ignore[arg-type]
            ),
            "end_points",
        ),
        (RegisterBrokerRecord(broker_id=1, incarnation_id=TOPIC_ID, rack="r" * 32768), "rack"),
    ],
)
def test_wrong_types(record: Any, field: str) -> None:
    _fails(record, field)


def test_string_limit_counts_utf8_bytes() -> None:
    at_limit = "é" * (0x7FFF // 2)
    validate_record(RegisterBrokerRecord(broker_id=1, incarnation_id=TOPIC_ID, rack=at_limit))
    over = at_limit + "é"
    _fails(RegisterBrokerRecord(broker_id=1, incarnation_id=TOPIC_ID, rack=over), "rack")


def test_fields_outside_the_version_must_keep_their_defaults() -> None:
    message = _fails(PARTITION, "start_offset", 2)
    assert "not in version 2" in message
    old = PARTITION._replace(start_offset=-1, start_timestamp=-1)
    validate_record(old, 2)
    validate_record(old, 0)
    _fails(old._replace(directories=(DIR, DIR, DIR)), "directories", 0)
    validate_record(old._replace(directories=(DIR, DIR, DIR)), 1)
    _fails(old._replace(eligible_leader_replicas=()), "eligible_leader_replicas", 1)


def test_nullable_only_in_its_versions() -> None:
    validate_record(PARTITION._replace(eligible_leader_replicas=None), 3)
    validate_record(PARTITION._replace(eligible_leader_replicas=(1,)), 3)
    validate_record(PARTITION_CHANGE._replace(directories=None), 1)
    _fails(PARTITION._replace(isr=None), "isr")  # type: ignore[arg-type]


# ---------------------------------------------------------------- topic names


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "a/b", "a b", "tópico", "a\\b", "a:b", "x" * (MAX_TOPIC_NAME_LENGTH + 1)],
)
def test_illegal_topic_names(name: str) -> None:
    _fails(TopicRecord(name=name, topic_id=TOPIC_ID), "name")


@pytest.mark.parametrize("name", ["a", "...", "a.b_c-D9", "_", "x" * MAX_TOPIC_NAME_LENGTH])
def test_legal_topic_names(name: str) -> None:
    validate_record(TopicRecord(name=name, topic_id=TOPIC_ID))


def test_topic_name_limit_is_kafkas() -> None:
    assert MAX_TOPIC_NAME_LENGTH == 249


# ---------------------------------------------------------------- cross-field rules


@pytest.mark.parametrize(
    ("record", "field", "words"),
    [
        (CHUNK._replace(epoch=1), "epoch", "must be equal"),
        (CHUNK._replace(start_offset=10), "stop_offset", "start <= stop <= end"),
        (CHUNK._replace(stop_offset=12), "stop_offset", "start <= stop <= end"),
        (CHUNK._replace(start_offset=-1), "stop_offset", "0 <= start"),
        (CHUNK._replace(replicas=(), isr=()), "replicas", "at least one replica"),
        (CHUNK._replace(isr=(1, 4)), "isr", "[4] not among the replicas"),
        (CHUNK._replace(replicas=(1, 2, 2)), "replicas", "duplicate"),
        (CHUNK._replace(isr=(1, 1)), "isr", "duplicate"),
        (CHUNK._replace(adding_replicas=(5,)), "adding_replicas", "not among"),
        (CHUNK._replace(removing_replicas=(5,)), "removing_replicas", "not among"),
        (CHUNK._replace(directories=(DIR,)), "directories", "one entry per replica"),
        (PARTITION._replace(replicas=(), isr=(), leader=-1), "replicas", "at least one"),
        (PARTITION._replace(leader=4), "leader", "is not a replica"),
        (PARTITION._replace(isr=(1, 2, 3, 4)), "isr", "not among"),
        (PARTITION._replace(replicas=(1, 1)), "replicas", "duplicate"),
        (PARTITION_CHANGE._replace(replicas=(), isr=None), "replicas", "at least one"),
        (PARTITION_CHANGE._replace(replicas=(1,), isr=(2,)), "isr", "not among"),
        (PARTITION_CHANGE._replace(isr=(1, 1)), "isr", "duplicate"),
        (CHUNK_CHANGE._replace(start_offset=-1), "start_offset", "must name a chunk"),
        (CHUNK_CHANGE._replace(replicas=(), isr=(1,)), "isr", "not among"),
        (CHUNK_CHANGE._replace(replicas=(), isr=(), adding_replicas=(1,)), "adding_replicas", ""),
        (CHUNK_CHANGE._replace(isr=(3,)), "isr", "not among"),
        (BrokerRegistrationChangeRecord(broker_id=1, fenced=2), "fenced", "must be -1"),
        (
            BrokerRegistrationChangeRecord(broker_id=1, in_controlled_shutdown=-1),
            "in_controlled_shutdown",
            "must be 0",
        ),
    ],
)
def test_cross_field_rules(record: Any, field: str, words: str) -> None:
    assert words in _fails(record, field)


def test_cross_field_rules_accept_the_edges() -> None:
    validate_record(CHUNK._replace(start_offset=5, stop_offset=5, end_offset=5))
    validate_record(CHUNK._replace(directories=(DIR, DIR, DIR)))
    validate_record(PARTITION._replace(leader=-1, isr=()))
    # A change that names only the ISR cannot be checked against replicas it does not carry.
    validate_record(PARTITION_CHANGE._replace(isr=(9,)))
    # Replicas = [] removes a chunk, with nothing else.
    validate_record(CHUNK_CHANGE._replace(replicas=(), isr=()))
    validate_record(BrokerRegistrationChangeRecord(broker_id=1, fenced=1, in_controlled_shutdown=1))
