"""DescribeConfigs 1-4, AlterConfigs 0-2, IncrementalAlterConfigs 0-1 through the handlers."""

from __future__ import annotations

from typing import Any

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin import configs
from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.protocol.configs import (
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    DescribeConfigsEntry,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
    IncrementalAlterConfigsResponse,
)
from tests.unit.controller.operations.cluster_builders import cluster
from tests.unit.kafka.admin.support import (
    FakeGateway,
    ImageGateway,
    as_client_reads,
    from_kafka_python,
    kp,
    run,
)

DESCRIBE = ROUTES[AdminApi.DESCRIBE_CONFIGS]
ALTER = ROUTES[AdminApi.ALTER_CONFIGS]
INCREMENTAL = ROUTES[AdminApi.INCREMENTAL_ALTER_CONFIGS]


def describe_request(version: int, synonyms: bool, documentation: bool) -> Any:
    cls = kp("DescribeConfigsRequest")
    fields: dict[str, Any] = {"include_synonyms": synonyms}
    if version >= 3:
        fields["include_documentation"] = documentation
    return cls(resources=[
        cls.DescribeConfigsResource(resource_type=2, resource_name="orders",
                                    configuration_keys=None),
        cls.DescribeConfigsResource(resource_type=4, resource_name="1",
                                    configuration_keys=["log.retention.ms"]),
    ], **fields)


DESCRIBED = DescribeConfigsResponse(results=(
    DescribeConfigsResult(resource_type=2, resource_name="orders", configs=(
        DescribeConfigsEntry(
            name="retention.ms", value="1000", config_source=1, config_type=5,
            documentation="How long a record is kept.",
            synonyms=(DescribeConfigsSynonym(name="retention.ms", value="1000", source=1),
                      DescribeConfigsSynonym(name="log.retention.ms", value="604800000",
                                             source=5))),
    )),
    DescribeConfigsResult(resource_type=4, resource_name="1", error_code=42,
                          error_message="not a broker"),
))


@pytest.mark.parametrize(("version", "synonyms", "documentation"),
                         [(1, False, False), (1, True, False), (2, True, False),
                          (3, True, True), (3, False, False), (4, True, True)])
def test_describe_configs(version: int, synonyms: bool, documentation: bool) -> None:
    gateway = FakeGateway({DESCRIBE: DESCRIBED})
    request = from_kafka_python(AdminApi.DESCRIBE_CONFIGS, "DescribeConfigs", version,
                                describe_request(version, synonyms, documentation))
    response = run(configs.describe_configs, request, gateway)
    assert gateway.bodies(DESCRIBE) == [{
        "resources": [
            {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "1",
             "configuration_keys": ["log.retention.ms"]}],
        "include_synonyms": synonyms,
        # v1-2 have no include_documentation: Kafka's default, false.
        "include_documentation": documentation and version >= 3,
        "include_all": True}]

    answer = as_client_reads("DescribeConfigs", version, response)
    topic, broker = answer.results
    assert (topic.resource_type, topic.resource_name, topic.error_code) == (2, "orders", 0)
    assert (broker.error_code, broker.error_message, broker.configs) == (42, "not a broker", [])
    (entry,) = topic.configs
    assert (entry.name, entry.value, entry.config_source) == ("retention.ms", "1000", 1)
    assert [(s.name, s.source) for s in entry.synonyms] == (
        [("retention.ms", 1), ("log.retention.ms", 5)] if synonyms else [])
    fields = entry.to_dict()
    assert ("config_type" in fields) is (version >= 3)
    if version >= 3:
        assert entry.config_type == 5
        assert entry.documentation == ("How long a record is kept." if documentation else None)


def test_describe_configs_whole_request_error() -> None:
    gateway = FakeGateway({DESCRIBE: GatewayError(503, Errors.NOT_CONTROLLER, None)})
    request = from_kafka_python(AdminApi.DESCRIBE_CONFIGS, "DescribeConfigs", 4,
                                describe_request(4, False, False))
    answer = as_client_reads("DescribeConfigs", 4, run(configs.describe_configs, request,
                                                       gateway))
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message, r.configs)
            for r in answer.results] == [
        (2, "orders", 41, Errors.NOT_CONTROLLER.message, []),
        (4, "1", 41, Errors.NOT_CONTROLLER.message, [])]


# ------------------------------------------------------------------ AlterConfigs


def alter_request(validate_only: bool) -> Any:
    cls = kp("AlterConfigsRequest")
    resource = cls.AlterConfigsResource
    return cls(resources=[
        resource(resource_type=2, resource_name="orders", configs=[
            resource.AlterableConfig(name="retention.ms", value="5000")]),
        resource(resource_type=4, resource_name="", configs=[]),
    ], validate_only=validate_only)


ALTERED = (AlterConfigsResourceResponse(resource_type=2, resource_name="orders"),
           AlterConfigsResourceResponse(resource_type=4, resource_name="", error_code=40,
                                        error_message="Invalid value"))


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("validate_only", [False, True])
def test_alter_configs(version: int, validate_only: bool) -> None:
    gateway = FakeGateway({ALTER: AlterConfigsResponse(responses=ALTERED)})
    request = from_kafka_python(AdminApi.ALTER_CONFIGS, "AlterConfigs", version,
                                alter_request(validate_only))
    response = run(configs.alter_configs, request, gateway)
    assert gateway.bodies(ALTER) == [{"resources": [
        {"resource_type": 2, "resource_name": "orders",
         "configs": [{"name": "retention.ms", "value": "5000"}]},
        {"resource_type": 4, "resource_name": "", "configs": []},
    ], "validate_only": validate_only}]
    answer = as_client_reads("AlterConfigs", version, response)
    assert answer.throttle_time_ms == 0
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message)
            for r in answer.responses] == [(2, "orders", 0, None),
                                           (4, "", 40, "Invalid value")]


def test_alter_configs_whole_request_error_answers_each_distinct_resource() -> None:
    cls = kp("AlterConfigsRequest")
    message = cls(resources=[cls.AlterConfigsResource(resource_type=2, resource_name="a",
                                                      configs=[])] * 2, validate_only=False)
    gateway = FakeGateway({ALTER: GatewayError(403, Errors.CLUSTER_AUTHORIZATION_FAILED, "no")})
    request = from_kafka_python(AdminApi.ALTER_CONFIGS, "AlterConfigs", 2, message)
    answer = as_client_reads("AlterConfigs", 2, run(configs.alter_configs, request, gateway))
    assert [(r.resource_name, r.error_code) for r in answer.responses] == [("a", 31)]


# ------------------------------------------------------------------ IncrementalAlterConfigs


def incremental_request(*resources: tuple[int, str, list[tuple[str, int, str | None]]],
                        validate_only: bool = False) -> Any:
    cls = kp("IncrementalAlterConfigsRequest")
    resource = cls.AlterConfigsResource
    return cls(resources=[
        resource(resource_type=kind, resource_name=name, configs=[
            resource.AlterableConfig(name=key, config_operation=op, value=value)
            for key, op, value in changes])
        for kind, name, changes in resources], validate_only=validate_only)


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("validate_only", [False, True])
def test_incremental_alter_configs(version: int, validate_only: bool) -> None:
    gateway = FakeGateway({INCREMENTAL: IncrementalAlterConfigsResponse(responses=ALTERED)})
    message = incremental_request(
        (2, "orders", [("retention.ms", 0, "5000"), ("cleanup.policy", 2, "delete")]),
        (4, "", [("log.retention.ms", 1, None)]), validate_only=validate_only)
    request = from_kafka_python(AdminApi.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs",
                                version, message)
    response = run(configs.incremental_alter_configs, request, gateway)
    assert gateway.bodies(INCREMENTAL) == [{"resources": [
        {"resource_type": 2, "resource_name": "orders", "configs": [
            {"name": "retention.ms", "config_operation": 0, "value": "5000"},
            {"name": "cleanup.policy", "config_operation": 2, "value": "delete"}]},
        {"resource_type": 4, "resource_name": "", "configs": [
            {"name": "log.retention.ms", "config_operation": 1, "value": None}]},
    ], "validate_only": validate_only}]
    answer = as_client_reads("IncrementalAlterConfigs", version, response)
    assert [(r.resource_name, r.error_code, r.error_message) for r in answer.responses] == [
        ("orders", 0, None), ("", 40, "Invalid value")]


def test_an_unknown_operation_refuses_its_resource_only() -> None:
    gateway = FakeGateway({INCREMENTAL: IncrementalAlterConfigsResponse(responses=(
        AlterConfigsResourceResponse(resource_type=2, resource_name="orders"),))})
    message = incremental_request((2, "bad", [("retention.ms", 9, "1")]),
                                  (2, "orders", [("retention.ms", 0, "1")]),
                                  (2, "twice", [("retention.ms", 7, "1")]),
                                  (2, "twice", [("retention.ms", 0, "1")]))
    request = from_kafka_python(AdminApi.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs",
                                1, message)
    answer = as_client_reads("IncrementalAlterConfigs", 1,
                             run(configs.incremental_alter_configs, request, gateway))
    assert [r["resource_name"] for r in gateway.bodies(INCREMENTAL)[0]["resources"]] == [
        "orders"]
    assert [(r.resource_name, r.error_code, r.error_message) for r in answer.responses] == [
        ("bad", 42, "Unknown alter config operation 9."), ("orders", 0, None),
        ("twice", 42, "Duplicate resource.")]


def test_only_unknown_operations_send_nothing() -> None:
    gateway = FakeGateway({})
    request = from_kafka_python(AdminApi.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs",
                                0, incremental_request((2, "bad", [("retention.ms", -1, "1")])))
    answer = as_client_reads("IncrementalAlterConfigs", 0,
                             run(configs.incremental_alter_configs, request, gateway))
    assert gateway.calls == []
    assert [r.error_code for r in answer.responses] == [42]


def test_incremental_alter_configs_whole_request_error() -> None:
    gateway = FakeGateway({INCREMENTAL: GatewayError(400, Errors.INVALID_REQUEST, "limit")})
    request = from_kafka_python(AdminApi.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs",
                                1, incremental_request((2, "a", []), (4, "1", [])))
    answer = as_client_reads("IncrementalAlterConfigs", 1,
                             run(configs.incremental_alter_configs, request, gateway))
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message)
            for r in answer.responses] == [(2, "a", 42, "limit"), (4, "1", 42, "limit")]


# ------------------------------------------------------------------ the real operations


def test_the_real_operations_accept_the_bodies() -> None:
    gateway = ImageGateway(cluster(1))
    request = from_kafka_python(AdminApi.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs",
                                1, incremental_request((4, "", [("log.retention.ms", 0, "77")])))
    answer = as_client_reads("IncrementalAlterConfigs", 1,
                             run(configs.incremental_alter_configs, request, gateway))
    assert [r.error_code for r in answer.responses] == [0]

    cls = kp("DescribeConfigsRequest")
    message = cls(resources=[cls.DescribeConfigsResource(
        resource_type=4, resource_name="", configuration_keys=None)],
        include_synonyms=True, include_documentation=True)
    request = from_kafka_python(AdminApi.DESCRIBE_CONFIGS, "DescribeConfigs", 4, message)
    (result,) = as_client_reads("DescribeConfigs", 4, run(configs.describe_configs, request,
                                                          gateway)).results
    entries = {entry.name: entry for entry in result.configs}
    # Kafka's DescribeConfigs answers every key, not only those set (the route's include_all).
    assert len(entries) > 1
    assert (entries["log.retention.ms"].value, entries["log.retention.ms"].config_source) == (
        "77", 3)
    assert entries["log.retention.ms"].documentation

    request = from_kafka_python(AdminApi.ALTER_CONFIGS, "AlterConfigs", 0, alter_request(True))
    answer = as_client_reads("AlterConfigs", 0, run(configs.alter_configs, request, gateway))
    assert answer.responses[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
