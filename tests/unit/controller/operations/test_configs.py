from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pydantic import ValidationError

from chunkraft.configs.resolve import ConfigSource
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.configs import (
    alter_configs,
    describe_configs,
    incremental_alter_configs,
)
from chunkraft.controller.operations.topics import create_topics
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.configs import (
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    DescribeConfigsRequest,
    DescribeConfigsResult,
    IncrementalAlterConfigsRequest,
)
from chunkraft.protocol.topics import CreateTopicsRequest
from chunkraft.records import ConfigRecord, PartitionRecord, TopicRecord
from tests.unit.controller.operations.topic_support import cluster, commit_valid, with_topic

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER = 2, 4


def _image() -> MetadataImage:
    return with_topic(with_topic(cluster((0, 1, 2)), "orders"), "other",
                      topic_id=uuid.UUID(int=0x07E5))


def _incremental(image: MetadataImage, *resources: dict[str, Any], validate_only: bool = False,
                 **options: Any) -> ControllerResult[Any]:
    request = IncrementalAlterConfigsRequest.model_validate(
        {"resources": list(resources), "validate_only": validate_only})
    return incremental_alter_configs(image, request, **options)


def _topic(name: str, *configs: tuple[str, str | None, int]) -> dict[str, Any]:
    return _resource(TOPIC, name, *configs)


def _resource(kind: int, name: str, *configs: tuple[str, str | None, int]) -> dict[str, Any]:
    return {"resource_type": kind, "resource_name": name, "configs": [
        {"name": key, "value": value, "config_operation": op} for key, value, op in configs]}


def _only(result: ControllerResult[Any]) -> AlterConfigsResourceResponse:
    (response,) = result.response.responses
    assert isinstance(response, AlterConfigsResourceResponse)
    return response


def _error(response: AlterConfigsResourceResponse | DescribeConfigsResult
           ) -> tuple[Errors, str | None]:
    return Errors.for_code(response.error_code), response.error_message


def _set(image: MetadataImage, kind: int, name: str, **values: str) -> MetadataImage:
    configs = [(key.replace("_", "."), value, SET) for key, value in values.items()]
    result = _incremental(image, _resource(kind, name, *configs))
    assert _only(result).error_code == 0
    return commit_valid(image, result)


# ------------------------------------------------------------------ incremental SET / DELETE


def test_set_writes_one_record_per_changed_key_and_answers_the_contract_shape() -> None:
    image = _image()
    result = _incremental(image, _topic("orders", ("retention.ms", "1000", SET),
                                        ("cleanup.policy", "delete", SET)))
    assert json.loads(result.response.model_dump_json()) == {"responses": [
        {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders"}]}
    assert result.records == (
        ConfigRecord(TOPIC, "orders", "cleanup.policy", "delete"),
        ConfigRecord(TOPIC, "orders", "retention.ms", "1000"))
    after = commit_valid(image, result)
    assert dict(after.configs.topic("orders")) == {"retention.ms": "1000",
                                                   "cleanup.policy": "delete"}


def test_setting_the_current_value_or_deleting_an_unset_key_writes_nothing() -> None:
    image = _set(_image(), TOPIC, "orders", retention_ms="1000")
    result = _incremental(image, _topic("orders", ("retention.ms", "1000", SET),
                                        ("segment.ms", None, DELETE)))
    assert _only(result).error_code == 0
    assert result.records == ()


def test_delete_removes_the_key_so_the_value_is_inherited_again() -> None:
    image = _set(_image(), TOPIC, "orders", retention_ms="1000")
    result = _incremental(image, _topic("orders", ("retention.ms", None, DELETE)))
    assert result.records == (ConfigRecord(TOPIC, "orders", "retention.ms", None),)
    assert dict(commit_valid(image, result).configs.topic("orders")) == {}


def test_broker_and_cluster_default_resources() -> None:
    image = _image()
    result = _incremental(
        image, _resource(BROKER, "1", ("log.retention.ms", "5000", SET)),
        _resource(BROKER, "", ("chunk.copy.throttle.bytes.per.second", "1048576", SET)))
    assert [r.error_code for r in result.response.responses] == [0, 0]
    after = commit_valid(image, result)
    assert dict(after.configs.broker(1)) == {"log.retention.ms": "5000"}
    assert dict(after.configs.cluster_default()) == {
        "chunk.copy.throttle.bytes.per.second": "1048576"}


def test_validate_only_answers_the_same_and_writes_nothing() -> None:
    image = _image()
    good = _incremental(image, _topic("orders", ("retention.ms", "1000", SET)),
                        validate_only=True)
    assert (_only(good).error_code, good.records) == (0, ())
    bad = _incremental(image, _topic("orders", ("retention.ms", "x", SET)), validate_only=True)
    assert _only(bad).error_code == Errors.INVALID_CONFIG.code


# ------------------------------------------------------------------ APPEND / SUBTRACT


def test_append_and_subtract_start_from_the_effective_value_of_a_list_key() -> None:
    image = _image()
    # Appending to the inherited default "delete" keeps it (no duplicates).
    result = _incremental(image, _topic("orders", ("cleanup.policy", "delete", APPEND)))
    assert result.records == (ConfigRecord(TOPIC, "orders", "cleanup.policy", "delete"),)
    image = commit_valid(image, result)
    result = _incremental(image, _topic("orders", ("cleanup.policy", "delete", SUBTRACT)))
    assert result.records == (ConfigRecord(TOPIC, "orders", "cleanup.policy", ""),)


def test_append_of_compact_is_refused_with_the_keys_message() -> None:
    result = _incremental(_image(), _topic("orders", ("cleanup.policy", "compact", APPEND)))
    error, message = _error(_only(result))
    assert error is Errors.INVALID_CONFIG
    assert message is not None and message.startswith(
        "Invalid value delete,compact for configuration cleanup.policy: compact is not "
        "supported")
    assert result.records == ()


@pytest.mark.parametrize(("op", "verb"), [(APPEND, "append"), (SUBTRACT, "subtract")])
def test_append_or_subtract_on_a_key_that_is_not_a_list_is_invalid_config(
        op: int, verb: str) -> None:
    result = _incremental(_image(), _topic("orders", ("retention.ms", "5", op)))
    assert _error(_only(result)) == (
        Errors.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: retention.ms")
    assert result.records == ()


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(("resource", "error", "message"), [
    (_topic("orders", ("retention.ms", "abc", SET)), Errors.INVALID_CONFIG,
     "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    (_topic("orders", ("retention.ms", "-2", SET)), Errors.INVALID_CONFIG,
     "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    (_topic("orders", ("no.such.key", "1", SET)), Errors.INVALID_CONFIG,
     "Unknown topic config name: no.such.key"),
    (_topic("orders", ("log.retention.ms", "1", SET)), Errors.INVALID_CONFIG,
     "Unknown topic config name: log.retention.ms"),
    (_topic("orders", ("retention.ms", None, SET)), Errors.INVALID_CONFIG,
     "Null value not supported for topic configs: retention.ms"),
    (_topic("orders", ("retention.ms", "1", SET), ("retention.ms", "2", SET)),
     Errors.INVALID_REQUEST, "Error due to duplicate config keys"),
    (_topic("missing", ("retention.ms", "1", SET)), Errors.UNKNOWN_TOPIC_OR_PARTITION,
     "The topic 'missing' does not exist."),
    (_topic("", ("retention.ms", "1", SET)), Errors.INVALID_REQUEST,
     "Default topic resources are not allowed."),
    (_resource(BROKER, "-1", ("log.retention.ms", "1", SET)), Errors.INVALID_REQUEST, None),
    (_resource(BROKER, "01", ("log.retention.ms", "1", SET)), Errors.INVALID_REQUEST, None),
    (_resource(BROKER, "x", ("log.retention.ms", "1", SET)), Errors.INVALID_REQUEST, None),
    (_resource(BROKER, "1", ("retention.ms", "1", SET)), Errors.INVALID_CONFIG, None),
    (_resource(8, "1", ("log.retention.ms", "1", SET)), Errors.INVALID_REQUEST,
     "Unsupported resource type 8: configurations are set on topics (2) and brokers (4)."),
])
def test_a_bad_resource_fails_alone_and_changes_nothing(
        resource: dict[str, Any], error: Errors, message: str | None) -> None:
    image = _image()
    result = _incremental(image, resource, _topic("other", ("segment.ms", "60000", SET)))
    bad, good = result.response.responses
    assert Errors.for_code(bad.error_code) is error
    assert bad.error_message is not None
    if message is not None:
        assert bad.error_message == message
    assert good.error_code == 0
    # Only the good resource's record; a bad resource writes none of its keys.
    assert result.records == (ConfigRecord(TOPIC, "other", "segment.ms", "60000"),)


def test_cleanup_policy_compact_is_refused_with_a_clear_message() -> None:
    result = _incremental(_image(), _topic("orders", ("cleanup.policy", "compact", SET),
                                           ("retention.ms", "1000", SET)))
    error, message = _error(_only(result))
    assert error is Errors.INVALID_CONFIG
    assert message is not None and "compact is not supported by chunkraft" in message
    assert result.records == ()


def test_a_resource_named_twice_is_answered_once_invalid_request() -> None:
    result = _incremental(_image(), _topic("orders", ("retention.ms", "1", SET)),
                          _topic("orders", ("retention.ms", "2", SET)))
    assert _error(_only(result)) == (Errors.INVALID_REQUEST, "Duplicate resource.")
    assert result.records == ()


def test_a_refused_resource_is_answered_with_the_refusal_before_it_is_looked_at() -> None:
    def refusal(resource_type: int, name: str) -> ApiException | None:
        if resource_type == TOPIC:
            return Errors.TOPIC_AUTHORIZATION_FAILED.exception(f"no {name}")
        return None

    result = _incremental(_image(), _topic("missing", ("retention.ms", "1", SET)),
                          _resource(BROKER, "", ("log.retention.ms", "1", SET)),
                          refusal=refusal)
    denied, allowed = result.response.responses
    assert _error(denied) == (Errors.TOPIC_AUTHORIZATION_FAILED, "no missing")
    assert allowed.error_code == 0
    assert result.records == (ConfigRecord(BROKER, "", "log.retention.ms", "1"),)


@pytest.mark.parametrize("body", [
    {"resources": [{"resource_type": 2, "resource_name": "o",
                    "configs": [{"name": "retention.ms", "value": "1",
                                 "config_operation": 4}]}]},
    {"resources": [{"resource_type": 2, "resource_name": "o",
                    "configs": [{"name": "", "value": "1"}]}]},
    {"resources": [{"resource_type": "2", "resource_name": "o"}]},
    {"resources": [{"resource_type": 2, "resource_name": "o" * 256}]},
    {"resources": [{"resource_type": 2, "resource_name": "o"}] * 1001},
    {"resources": [], "validate_only": "false"},
])
def test_malformed_requests_fail_validation(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        IncrementalAlterConfigsRequest.model_validate(body)


# ------------------------------------------------------------------ legacy AlterConfigs


def test_legacy_alter_configs_makes_the_given_keys_the_only_ones() -> None:
    image = _set(_image(), TOPIC, "orders", retention_ms="1000", segment_ms="5000")
    request = AlterConfigsRequest.model_validate({"resources": [
        {"resource_type": 2, "resource_name": "orders",
         "configs": [{"name": "retention.ms", "value": "2000"},
                     {"name": "segment.ms", "value": "5000"},
                     {"name": "max.message.bytes", "value": "100"}]}]})
    result = alter_configs(image, request)
    assert _only(result).error_code == 0
    assert result.records == (
        ConfigRecord(TOPIC, "orders", "max.message.bytes", "100"),
        ConfigRecord(TOPIC, "orders", "retention.ms", "2000"))
    cleared = alter_configs(image, AlterConfigsRequest.model_validate({"resources": [
        {"resource_type": 2, "resource_name": "orders", "configs": []}]}))
    assert cleared.records == (ConfigRecord(TOPIC, "orders", "retention.ms", None),
                               ConfigRecord(TOPIC, "orders", "segment.ms", None))


def test_legacy_alter_configs_refuses_a_bad_value_and_changes_nothing() -> None:
    image = _set(_image(), TOPIC, "orders", retention_ms="1000")
    result = alter_configs(image, AlterConfigsRequest.model_validate({"resources": [
        {"resource_type": 2, "resource_name": "orders",
         "configs": [{"name": "segment.bytes", "value": "3"}]}]}))
    assert _error(_only(result)) == (
        Errors.INVALID_CONFIG,
        "Invalid value 3 for configuration segment.bytes: Value must be at least 14")
    assert result.records == ()


# ------------------------------------------------------------------ describe_configs


def _describe(image: MetadataImage, *resources: dict[str, Any], **options: Any
              ) -> tuple[DescribeConfigsResult, ...]:
    request = DescribeConfigsRequest.model_validate({"resources": list(resources), **options})
    result = describe_configs(image, request)
    assert result.records == ()
    return result.response.results


def test_describe_shows_only_the_resources_own_keys_unless_all_is_asked() -> None:
    image = _set(_set(_image(), TOPIC, "orders", retention_ms="1000"), BROKER, "",
                 log_retention_bytes="100")
    (only_own,) = _describe(image, {"resource_type": 2, "resource_name": "orders"},
                            include_synonyms=True)
    (entry,) = only_own.configs
    assert (entry.name, entry.value, entry.config_source, entry.is_default) == (
        "retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False)
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("retention.ms", "1000", 1), ("log.retention.ms", "604800000", 5)]
    assert (entry.read_only, entry.is_sensitive, entry.config_type) == (False, False, 5)

    (everything,) = _describe(image, {"resource_type": 2, "resource_name": "orders"},
                              include_all=True)
    by_name = {e.name: e for e in everything.configs}
    assert sorted(by_name) == sorted(["retention.ms", "retention.bytes", "segment.bytes",
                                      "segment.ms", "min.insync.replicas", "max.message.bytes",
                                      "cleanup.policy", "message.timestamp.type",
                                      "compression.type"])
    inherited = by_name["retention.bytes"]
    assert (inherited.value, inherited.config_source) == (
        "100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert by_name["segment.ms"].is_default
    assert by_name["segment.ms"].synonyms == ()


def test_describe_brokers_and_the_cluster_default() -> None:
    image = _set(_set(_image(), BROKER, "", log_retention_ms="7"), BROKER, "1",
                 log_retention_ms="9")
    broker, default = _describe(image, {"resource_type": 4, "resource_name": "1"},
                                {"resource_type": 4, "resource_name": ""},
                                include_synonyms=True)
    (own,) = broker.configs
    assert (own.name, own.value, own.config_source) == ("log.retention.ms", "9", 2)
    assert [s.source for s in own.synonyms] == [2, 3, 5]
    (shared,) = default.configs
    assert (shared.value, shared.config_source) == ("7", 3)
    (other,) = _describe(image, {"resource_type": 4, "resource_name": "2"})
    assert other.error_code == 0 and other.configs == ()


def test_describe_asked_keys_with_documentation() -> None:
    (result,) = _describe(_image(), {"resource_type": 2, "resource_name": "orders",
                                     "configuration_keys": ["min.insync.replicas"]},
                          include_documentation=True)
    (entry,) = result.configs
    assert (entry.name, entry.value, entry.config_source) == ("min.insync.replicas", "1", 5)
    assert entry.documentation is not None and "NOT_ENOUGH_REPLICAS" in entry.documentation


@pytest.mark.parametrize(("resource", "error"), [
    ({"resource_type": 2, "resource_name": "missing"}, Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ({"resource_type": 4, "resource_name": "b1"}, Errors.INVALID_REQUEST),
    ({"resource_type": 2, "resource_name": "orders", "configuration_keys": ["nope"]},
     Errors.INVALID_CONFIG),
    ({"resource_type": 16, "resource_name": "x"}, Errors.INVALID_REQUEST),
])
def test_describe_refusals(resource: dict[str, Any], error: Errors) -> None:
    (result,) = _describe(_image(), resource)
    assert Errors.for_code(result.error_code) is error
    assert result.error_message and result.configs == ()


def test_describe_refused_resource() -> None:
    request = DescribeConfigsRequest.model_validate(
        {"resources": [{"resource_type": 4, "resource_name": ""}]})
    result = describe_configs(
        _image(), request,
        refusal=lambda kind, name: Errors.CLUSTER_AUTHORIZATION_FAILED.exception("no"))
    (answer,) = result.response.results
    assert _error(answer) == (Errors.CLUSTER_AUTHORIZATION_FAILED, "no")


# ------------------------------------------------------------------ create_topics with configs


def _create(image: MetadataImage, *topics: dict[str, Any], validate_only: bool = False
            ) -> ControllerResult[Any]:
    return create_topics(image, CreateTopicsRequest.model_validate(
        {"topics": list(topics), "validate_only": validate_only}))


def test_create_topic_with_configs_writes_them_in_the_topics_batch() -> None:
    image = cluster((0, 1, 2))
    result = _create(image, {"name": "events", "num_partitions": 2, "replication_factor": 2,
                             "configs": [{"name": "retention.ms", "value": " 1000 "}]})
    assert result.response.topics[0].error_code == 0
    assert [type(r) for r in result.records] == [TopicRecord, ConfigRecord, PartitionRecord,
                                                  PartitionRecord]
    assert result.records[1] == ConfigRecord(TOPIC, "events", "retention.ms", "1000")
    after = commit_valid(image, result)
    assert dict(after.configs.topic("events")) == {"retention.ms": "1000"}


@pytest.mark.parametrize(("configs", "error", "message"), [
    ([{"name": "cleanup.policy", "value": "compact"}], Errors.INVALID_CONFIG, None),
    ([{"name": "nope", "value": "1"}], Errors.INVALID_CONFIG, "Unknown topic config name: nope"),
    ([{"name": "retention.ms", "value": None}], Errors.INVALID_CONFIG,
     "Null value not supported for topic configs: retention.ms"),
    ([{"name": "retention.ms", "value": "1"}, {"name": "retention.ms", "value": "2"}],
     Errors.INVALID_REQUEST, "Error due to duplicate config keys"),
])
def test_create_topic_with_a_bad_config_fails_that_topic_only(
        configs: list[dict[str, Any]], error: Errors, message: str | None) -> None:
    image = cluster((0, 1, 2))
    result = _create(image, {"name": "bad", "configs": configs}, {"name": "good"})
    bad, good = result.response.topics
    assert Errors.for_code(bad.error_code) is error
    assert bad.topic_id is None and bad.num_partitions == -1
    if message is not None:
        assert bad.error_message == message
    assert good.error_code == 0
    assert all(getattr(r, "name", "good") == "good" and getattr(r, "resource_name", "good")
               == "good" for r in result.records if not isinstance(r, PartitionRecord))
    assert commit_valid(image, result).topics.get_by_name("bad") is None
