"""The JSON view of records (chunkraft.records.json_view)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from chunkraft.errors import RecordEncodeError, RecordValidationError
from chunkraft.records import (
    BrokerEndpoint,
    ChunkChangeRecord,
    NoOpRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    RegisterBrokerRecord,
    TopicRecord,
    record_from_json,
    record_to_json,
)

TOPIC_ID = uuid.UUID(bytes=bytes(range(16)))
TOPIC_ID_TEXT = "AAECAwQFBgcICQoLDA0ODw"


def test_topic_record_view() -> None:
    view = record_to_json(TopicRecord(name="orders", topic_id=TOPIC_ID))
    assert view == {
        "type": "TopicRecord",
        "version": 0,
        "data": {"name": "orders", "topicId": TOPIC_ID_TEXT},
    }
    assert json.loads(json.dumps(view)) == view


def test_view_has_camel_case_names_nulls_and_lists() -> None:
    record = ChunkChangeRecord(partition_id=1, topic_id=TOPIC_ID, start_offset=5, replicas=(1, 2))
    assert record_to_json(record)["data"] == {
        "partitionId": 1,
        "topicId": TOPIC_ID_TEXT,
        "startOffset": 5,
        "replicas": [1, 2],
        "directories": None,
        "isr": [],
        "removingReplicas": [],
        "addingReplicas": [],
        "epoch": -1,
    }


def test_view_has_only_the_fields_of_the_version() -> None:
    record = PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1,), leader=1)
    v0 = record_to_json(record, 0)
    v3 = record_to_json(record, 3)
    assert v0["version"] == 0 and v3["version"] == 3
    assert "directories" not in v0["data"] and "startOffset" not in v0["data"]
    assert v3["data"]["startOffset"] == -1
    assert v3["data"]["priorPartitionEpochs"] == []
    assert set(v0["data"]) < set(v3["data"])
    assert record_from_json(v0) == record
    assert record_from_json(v3) == record


def test_structs_nest_as_objects() -> None:
    record = RegisterBrokerRecord(
        broker_id=1,
        incarnation_id=TOPIC_ID,
        end_points=(BrokerEndpoint("PLAINTEXT", "h", 9092, 0),),
        log_dirs=(TOPIC_ID,),
    )
    data = record_to_json(record)["data"]
    assert data["endPoints"] == [
        {"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}
    ]
    assert data["logDirs"] == [TOPIC_ID_TEXT]
    assert record_from_json(record_to_json(record)) == record
    partition = PartitionRecord(
        topic_id=TOPIC_ID, prior_partition_epochs=(PriorPartitionEpoch(0, 3),)
    )
    assert record_to_json(partition)["data"]["priorPartitionEpochs"] == [
        {"partitionId": 0, "leaderEpoch": 3}
    ]
    assert record_from_json(record_to_json(partition)) == partition


@pytest.mark.parametrize(
    "record",
    [
        TopicRecord(name="t", topic_id=TOPIC_ID),
        NoOpRecord(),
        ChunkChangeRecord(topic_id=TOPIC_ID, directories=()),
        RegisterBrokerRecord(rack="r1", features=()),
    ],
)
def test_round_trip_through_json_text(record: Any) -> None:
    text = json.dumps(record_to_json(record))
    back = record_from_json(json.loads(text))
    assert back == record
    assert type(back) is type(record)


def test_missing_fields_take_their_defaults_and_version_defaults_to_latest() -> None:
    record = record_from_json({"type": "PartitionRecord", "data": {"partitionId": 4}})
    assert record == PartitionRecord(partition_id=4)
    assert record_from_json({"type": "NoOpRecord"}) == NoOpRecord()


def test_hex_uuids_are_accepted_on_input() -> None:
    view = {"type": "TopicRecord", "version": 0, "data": {"topicId": str(TOPIC_ID)}}
    assert record_from_json(view).topic_id == TOPIC_ID


def test_to_json_refuses_a_field_outside_the_version() -> None:
    record = PartitionRecord(topic_id=TOPIC_ID, start_offset=7)
    with pytest.raises(RecordEncodeError, match="start_offset is not in version 2"):
        record_to_json(record, 2)
    assert record_to_json(record, 3)["data"]["startOffset"] == 7


def test_to_json_refuses_an_unknown_version() -> None:
    with pytest.raises(RecordEncodeError, match="no version 1"):
        record_to_json(TopicRecord(), 1)
    with pytest.raises(RecordEncodeError, match="not a metadata record"):
        record_to_json(BrokerEndpoint(), 0)


def _error(view: Any) -> RecordValidationError:
    with pytest.raises(RecordValidationError) as info:
        record_from_json(view)
    return info.value


@pytest.mark.parametrize(
    ("view", "field"),
    [
        ({"type": "NoSuchRecord", "data": {}}, "type"),
        ({"data": {}}, "type"),
        ({"type": 2, "data": {}}, "type"),
        ({"type": "TopicRecord", "version": 1, "data": {}}, "version"),
        ({"type": "TopicRecord", "version": -1, "data": {}}, "version"),
        ({"type": "TopicRecord", "version": "0", "data": {}}, "version"),
        ({"type": "TopicRecord", "version": True, "data": {}}, "version"),
        ({"type": "TopicRecord", "data": []}, "data"),
        ({"type": "TopicRecord", "data": {"nmae": "t"}}, "nmae"),
        ({"type": "TopicRecord", "data": {"name": 5}}, "name"),
        ({"type": "TopicRecord", "data": {"name": None}}, "name"),
        ({"type": "TopicRecord", "data": {"topicId": "nope"}}, "topic_id"),
        ({"type": "TopicRecord", "data": {"topicId": 12}}, "topic_id"),
        ({"type": "TopicRecord", "data": {"topicId": "AAAAAAAAAAAAAAAAAAAAA+"}}, "topic_id"),
        ({"type": "PartitionRecord", "version": 0, "data": {"directories": []}}, "directories"),
        ({"type": "PartitionRecord", "data": {"replicas": [1, "2"]}}, "replicas"),
        ({"type": "PartitionRecord", "data": {"replicas": [1, True]}}, "replicas"),
        ({"type": "PartitionRecord", "data": {"replicas": 1}}, "replicas"),
        ({"type": "PartitionRecord", "data": {"replicas": None}}, "replicas"),
        ({"type": "PartitionRecord", "data": {"leader": 1.0}}, "leader"),
        ({"type": "PartitionRecord", "data": {"leader": False}}, "leader"),
        ({"type": "RegisterBrokerRecord", "data": {"fenced": 1}}, "fenced"),
        ({"type": "RegisterBrokerRecord", "data": {"endPoints": ["x"]}}, "end_points"),
        ({"type": "RegisterBrokerRecord", "data": {"endPoints": [{"port": "1"}]}}, "port"),
        ({"type": "RegisterBrokerRecord", "data": {"endPoints": [{"prot": 1}]}}, "prot"),
    ],
)
def test_from_json_errors_name_the_field(view: Any, field: str) -> None:
    assert _error(view).field == field


def test_nested_errors_name_the_struct() -> None:
    error = _error({"type": "RegisterBrokerRecord", "data": {"endPoints": [{"port": "1"}]}})
    assert error.record_name == "BrokerEndpoint"


def test_nullable_fields_accept_null() -> None:
    view: dict[str, Any] = {"type": "ChunkChangeRecord", "data": {"directories": None}}
    assert record_from_json(view).directories is None
    view = {"type": "PartitionRecord", "version": 2, "data": {"eligibleLeaderReplicas": [1]}}
    assert record_from_json(view).eligible_leader_replicas == (1,)
