"""kafka/schema/specs: Kafka's message definitions, read from kafka-python's package data."""

from __future__ import annotations

import pytest

from chunkraft.kafka.schema.specs import VersionRange, load_message, parse_message, snake_case


def test_version_ranges_read_as_kafka_writes_them() -> None:
    assert 3 in VersionRange.parse("0-12") and 13 not in VersionRange.parse("0-12")
    assert 99 in VersionRange.parse("9+") and 8 not in VersionRange.parse("9+")
    assert 5 in VersionRange.parse("5") and 4 not in VersionRange.parse("5")
    assert VersionRange.parse("none").empty and 0 not in VersionRange.parse("none")


def test_field_names_become_snake_case_keys() -> None:
    assert snake_case("TopicId") == "topic_id"
    assert snake_case("IsrNodes") == "isr_nodes"
    assert snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert snake_case("ACLOperation") == "acl_operation"


def test_the_metadata_definitions_are_kafkas() -> None:
    request = load_message("MetadataRequest")
    assert request.api_key == 3 and request.type == "request"
    assert 9 in request.flexible and 8 not in request.flexible
    response = load_message("MetadataResponse")
    topics = next(f for f in response.fields if f.name == "Topics")
    assert topics.is_array and topics.is_struct
    assert [f.name for f in topics.fields][:3] == ["ErrorCode", "Name", "TopicId"]
    header = load_message("RequestHeader")
    client_id = next(f for f in header.fields if f.name == "ClientId")
    assert client_id.flexible is not None and client_id.flexible.empty  # never compact


def test_common_structs_are_resolved_and_unknown_structs_refused() -> None:
    spec = parse_message("""{
      // a comment, as Kafka's files have
      "apiKey": 17001, "type": "request", "name": "XRequest", "validVersions": "0",
      "flexibleVersions": "0+",
      "fields": [{ "name": "Items", "type": "[]Item", "versions": "0+" }],
      "commonStructs": [{ "name": "Item", "versions": "0+", "fields": [
        { "name": "Value", "type": "int32", "versions": "0+" }]}]}""")
    assert spec.fields[0].fields[0].key == "value"
    with pytest.raises(ValueError, match="unknown struct type Nope"):
        parse_message("""{"type": "request", "name": "Y", "validVersions": "0",
          "flexibleVersions": "none",
          "fields": [{ "name": "A", "type": "Nope", "versions": "0+" }]}""")
    with pytest.raises(KeyError, match="NoSuchRequest"):
        load_message("NoSuchRequest")
