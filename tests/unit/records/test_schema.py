"""Record declarations (chunkraft.records.schema): version ranges, names and declaration errors.

Records declared here go into a copy of the registry that the ``registry`` fixture restores, so
no test record ever leaks into ``all_record_schemas()``.
"""

import uuid
from collections.abc import Iterator
from typing import Annotated, NamedTuple

import pytest

from chunkraft.errors import SchemaError
from chunkraft.records import (
    BrokerEndpoint,
    ChunkRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    TopicRecord,
    all_record_schemas,
    schema_of,
)
from chunkraft.records import schema as schema_module
from chunkraft.records.schema import (
    INT32,
    INT32_ARRAY,
    STRING,
    STRUCT_ARRAY,
    UUID,
    ZERO_UUID,
    Check,
    FieldType,
    RecordSchema,
    VersionRange,
    camel_name,
    kafka_name,
    metadata_record,
    record_schema,
    record_struct,
)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    before = [s.api_key for s in all_record_schemas()]
    monkeypatch.setattr(schema_module, "_RECORDS_BY_KEY", dict(schema_module._RECORDS_BY_KEY))
    monkeypatch.setattr(schema_module, "_SCHEMAS_BY_CLASS", dict(schema_module._SCHEMAS_BY_CLASS))
    yield
    monkeypatch.undo()
    assert [s.api_key for s in all_record_schemas()] == before


# ---------------------------------------------------------------- version ranges


@pytest.mark.parametrize(
    ("text", "low", "high", "shown"),
    [("0+", 0, None, "0+"), ("2+", 2, None, "2+"), ("1-3", 1, 3, "1-3"), ("4", 4, 4, "4"),
     (" 0-0 ", 0, 0, "0")],
)
def test_version_range_parse(text: str, low: int, high: int | None, shown: str) -> None:
    parsed = VersionRange.parse(text)
    assert (parsed.low, parsed.high) == (low, high)
    assert str(parsed) == shown


@pytest.mark.parametrize("text", ["", "x", "1-", "-", "a+", "1-b", "+"])
def test_version_range_parse_errors(text: str) -> None:
    with pytest.raises(SchemaError, match="bad version range"):
        VersionRange.parse(text)


def test_version_range_contains() -> None:
    open_ended = VersionRange.parse("2+")
    closed = VersionRange.parse("1-3")
    assert 2 in open_ended and 1000 in open_ended and 1 not in open_ended
    assert [v for v in range(6) if v in closed] == [1, 2, 3]
    assert "2" not in closed
    assert None not in closed


def test_record_versions() -> None:
    partition = schema_of(PartitionRecord)
    assert isinstance(partition, RecordSchema)
    assert partition.versions == range(0, 4)
    assert str(partition.valid_versions) == "0-3"
    topic = schema_of(TopicRecord)
    assert isinstance(topic, RecordSchema)
    assert topic.versions == range(0, 1)


def test_fields_in_a_version() -> None:
    partition = schema_of(PartitionRecord)
    v0 = [f.name for f in partition.fields_in(0)]
    v3 = [f.name for f in partition.fields_in(3)]
    assert "directories" not in v0 and "directories" in v3
    assert "start_offset" not in v0 and v3[-3:] == [
        "start_offset",
        "start_timestamp",
        "prior_partition_epochs",
    ]
    assert len(v3) == len(partition.fields)
    spec = {f.name: f for f in partition.fields}["eligible_leader_replicas"]
    assert not spec.nullable_in(1) and spec.nullable_in(2)
    assert not spec.present_in(1) and spec.present_in(2)
    assert spec.tagged and spec.tag == 1


def test_type_names() -> None:
    specs = {f.name: f for f in schema_of(RegisterBrokerRecord).fields}
    assert specs["broker_id"].type_name() == "int32"
    assert specs["incarnation_id"].type_name() == "uuid"
    assert specs["end_points"].type_name() == "[]BrokerEndpoint"
    assert specs["log_dirs"].type_name() == "[]uuid"
    assert specs["rack"].type_name() == "string"
    assert specs["fenced"].type_name() == "bool"
    replicas = {f.name: f for f in schema_of(ChunkRecord).fields}["replicas"]
    assert replicas.type_name() == "[]int32"
    assert replicas.check is Check.BROKER_ID


def test_defaults_and_names_are_read_from_the_named_tuple() -> None:
    specs = {f.name: f for f in schema_of(TopicRecord).fields}
    assert specs["name"].default == ""
    assert specs["topic_id"].default == ZERO_UUID
    assert specs["topic_id"].check is Check.TOPIC_ID
    assert [f.name for f in schema_of(BrokerEndpoint).fields] == [
        "name",
        "host",
        "port",
        "security_protocol",
    ]
    assert schema_of(BrokerEndpoint).fields[2].type is FieldType.UINT16


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("field", "kafka", "camel"),
    [
        ("topic_id", "TopicId", "topicId"),
        ("isr", "Isr", "isr"),
        ("id", "Id", "id"),
        ("last_known_elr", "LastKnownElr", "lastKnownElr"),
        ("in_controlled_shutdown", "InControlledShutdown", "inControlledShutdown"),
    ],
)
def test_kafka_and_camel_names(field: str, kafka: str, camel: str) -> None:
    assert kafka_name(field) == kafka
    assert camel_name(field) == camel


# ---------------------------------------------------------------- the registry


def test_the_records_design_table() -> None:
    declared = {s.api_key: s.name for s in all_record_schemas()}
    assert declared == {
        0: "RegisterBrokerRecord",
        1: "UnregisterBrokerRecord",
        2: "TopicRecord",
        3: "PartitionRecord",
        4: "ConfigRecord",
        5: "PartitionChangeRecord",
        6: "AccessControlEntryRecord",
        7: "RemoveAccessControlEntryRecord",
        9: "RemoveTopicRecord",
        15: "ProducerIdsRecord",
        17: "BrokerRegistrationChangeRecord",
        20: "NoOpRecord",
        27: "ControllerRegistrationRecord",
        28: "ChunkRecord",
        29: "ChunkChangeRecord",
    }
    assert [s.api_key for s in all_record_schemas()] == sorted(declared)
    assert record_schema(3) is schema_of(PartitionRecord)
    assert record_schema(8) is None


def test_schema_of_an_undeclared_class() -> None:
    class Plain(NamedTuple):
        x: int = 0

    with pytest.raises(SchemaError, match="not a declared record"):
        schema_of(Plain)


def test_records_compare_by_type() -> None:
    topic_id = uuid.uuid4()
    remove_topic = RemoveTopicRecord(topic_id=topic_id)
    remove_acl = RemoveAccessControlEntryRecord(id=topic_id)
    assert tuple(remove_topic) == tuple(remove_acl)
    assert remove_topic != remove_acl  # type: ignore[comparison-overlap]
    assert not remove_topic == remove_acl  # type: ignore[comparison-overlap]  # noqa: SIM201
    assert remove_topic == RemoveTopicRecord(topic_id=topic_id)
    assert remove_topic != (topic_id,)
    assert len({remove_topic, remove_acl, RemoveTopicRecord(topic_id=topic_id)}) == 2


def test_a_declared_record_is_registered(registry: None) -> None:
    @record_struct
    class Pair(NamedTuple):
        a: Annotated[int, INT32("0+", "a")] = 0

    @metadata_record(9001, "0-2", "A test record.")
    class TestRecord(NamedTuple):
        x: Annotated[int, INT32("0+", "x")] = 0
        y: Annotated[str | None, STRING("1+", "y", tag=0, nullable="2+")] = None
        pairs: Annotated[tuple[Pair, ...], STRUCT_ARRAY(Pair, "2+", "pairs")] = ()

    schema = record_schema(9001)
    assert schema is not None and schema.cls is TestRecord and schema.about == "A test record."
    assert schema_of(TestRecord) is schema
    assert [f.name for f in schema.fields_in(0)] == ["x"]
    assert [f.name for f in schema.fields_in(2)] == ["x", "y", "pairs"]
    assert schema.fields[2].struct is Pair
    assert TestRecord(1) != (1, None, ())


# ---------------------------------------------------------------- declaration errors


def test_missing_field_spec(registry: None) -> None:
    with pytest.raises(SchemaError, match=r"NoSpec\.x needs exactly one FieldSpec"):

        @metadata_record(9002, "0", "missing spec")
        class NoSpec(NamedTuple):
            x: int = 0

    assert record_schema(9002) is None


def test_two_field_specs(registry: None) -> None:
    with pytest.raises(SchemaError, match="exactly one FieldSpec"):

        @record_struct
        class TwoSpecs(NamedTuple):
            x: Annotated[int, INT32("0+", "x"), INT32("0+", "again")] = 0


def test_missing_default(registry: None) -> None:
    with pytest.raises(SchemaError, match="needs a default"):

        @metadata_record(9003, "0", "no default")
        class NoDefault(NamedTuple):
            x: Annotated[int, INT32("0+", "x")]


def test_duplicate_tag(registry: None) -> None:
    with pytest.raises(SchemaError, match="tag 3 used twice"):

        @metadata_record(9004, "0", "duplicate tag")
        class DuplicateTag(NamedTuple):
            a: Annotated[int, INT32("0+", "a", tag=3)] = 0
            b: Annotated[int, INT32("0+", "b", tag=3)] = 0

    assert record_schema(9004) is None


def test_duplicate_api_key(registry: None) -> None:
    with pytest.raises(SchemaError, match="apiKey 2 declared by both TopicRecord and Imposter"):

        @metadata_record(2, "0", "clashes with TopicRecord")
        class Imposter(NamedTuple):
            name: Annotated[str, STRING("0+", "name")] = ""

    assert record_schema(2) is schema_of(TopicRecord)


def test_none_default_without_nullable(registry: None) -> None:
    with pytest.raises(SchemaError, match="default None needs nullable versions"):

        @metadata_record(9005, "0", "None default")
        class NoneDefault(NamedTuple):
            name: Annotated[str | None, STRING("0+", "name")] = None


def test_array_default_must_be_a_tuple(registry: None) -> None:
    with pytest.raises(SchemaError, match="array defaults must be tuples"):

        @metadata_record(9006, "0", "list default")
        class ListDefault(NamedTuple):
            ids: Annotated[list[int], INT32_ARRAY("0+", "ids")] = []  # noqa: RUF012


def test_open_valid_versions(registry: None) -> None:
    with pytest.raises(SchemaError, match="must be closed"):

        @metadata_record(9007, "0+", "open ended")
        class OpenEnded(NamedTuple):
            x: Annotated[int, INT32("0+", "x")] = 0


def test_not_a_named_tuple(registry: None) -> None:
    with pytest.raises(SchemaError, match=r"must be a typing\.NamedTuple"):

        @metadata_record(9008, "0", "a plain class")
        class Plain:
            x: Annotated[int, INT32("0+", "x")] = 0


def test_struct_array_of_an_undeclared_struct() -> None:
    class Loose(NamedTuple):
        x: Annotated[uuid.UUID, UUID("0+", "x")] = ZERO_UUID

    with pytest.raises(SchemaError, match="not declared with @record_struct"):
        STRUCT_ARRAY(Loose, "0+", "loose")


def test_bad_version_text_in_a_spec() -> None:
    with pytest.raises(SchemaError):
        INT32("zero+", "x")
    with pytest.raises(SchemaError):
        INT32("0+", "x", nullable="sometimes")
