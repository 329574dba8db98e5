"""DescribeAcls, CreateAcls and DeleteAcls 1-3 through the handlers."""

from __future__ import annotations

from typing import Any

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin import acls
from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.protocol.acls import (
    AclCreationResult,
    AclDescription,
    CreateAclsResponse,
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsResponse,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from chunkraft.protocol.acls import AclOperation as O
from chunkraft.protocol.acls import AclPatternType as P
from chunkraft.protocol.acls import AclPermissionType as A
from chunkraft.protocol.acls import AclResourceType as T
from tests.unit.controller.operations.cluster_builders import cluster
from tests.unit.kafka.admin.support import (
    FakeGateway,
    ImageGateway,
    as_client_reads,
    from_kafka_python,
    kp,
    run,
)

DESCRIBE = ROUTES[AdminApi.DESCRIBE_ACLS]
CREATE = ROUTES[AdminApi.CREATE_ACLS]
DELETE = ROUTES[AdminApi.DELETE_ACLS]


def creations(*resource_types: int) -> Any:
    cls = kp("CreateAclsRequest")
    return cls(creations=[
        cls.AclCreation(resource_type=kind, resource_name="orders", resource_pattern_type=4,
                        principal="User:bob", host="*", operation=3, permission_type=3)
        for kind in resource_types])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_acls(version: int) -> None:
    gateway = FakeGateway({CREATE: CreateAclsResponse(results=(
        AclCreationResult(), AclCreationResult(error_code=42, error_message="bad type")))})
    request = from_kafka_python(AdminApi.CREATE_ACLS, "CreateAcls", version, creations(2, 99))
    response = run(acls.create_acls, request, gateway)
    creation = {"resource_name": "orders", "resource_pattern_type": 4,
                "principal": "User:bob", "host": "*", "operation": 3, "permission_type": 3}
    # A code Kafka does not define is read as UNKNOWN (0), which the operation refuses alone.
    assert gateway.bodies(CREATE) == [{"creations": [{"resource_type": 2, **creation},
                                                     {"resource_type": 0, **creation}]}]
    answer = as_client_reads("CreateAcls", version, response)
    assert [(r.error_code, r.error_message) for r in answer.results] == [
        (0, None), (42, "bad type")]


@pytest.mark.parametrize("version", [1, 3])
def test_create_acls_refused_for_the_cluster_answers_every_creation(version: int) -> None:
    gateway = FakeGateway({CREATE: GatewayError(403, Errors.CLUSTER_AUTHORIZATION_FAILED,
                                                "User:alice may not ALTER the cluster")})
    request = from_kafka_python(AdminApi.CREATE_ACLS, "CreateAcls", version, creations(2, 3, 4))
    answer = as_client_reads("CreateAcls", version, run(acls.create_acls, request, gateway))
    assert [(r.error_code, r.error_message) for r in answer.results] == [
        (31, "User:alice may not ALTER the cluster")] * 3


def describe_request() -> Any:
    return kp("DescribeAclsRequest")(
        resource_type_filter=2, resource_name_filter=None, pattern_type_filter=1,
        principal_filter="User:bob", host_filter=None, operation=1, permission_type=1)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_describe_acls(version: int) -> None:
    gateway = FakeGateway({DESCRIBE: DescribeAclsResponse(resources=(DescribeAclsResource(
        resource_type=T.TOPIC, resource_name="orders", pattern_type=P.PREFIXED, acls=(
            AclDescription(principal="User:bob", host="*", operation=O.READ,
                           permission_type=A.ALLOW),
            AclDescription(principal="User:bob", host="10.0.0.1", operation=O.WRITE,
                           permission_type=A.DENY))),))})
    request = from_kafka_python(AdminApi.DESCRIBE_ACLS, "DescribeAcls", version,
                                describe_request())
    response = run(acls.describe_acls, request, gateway)
    assert gateway.bodies(DESCRIBE) == [{
        "resource_type_filter": 2, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": "User:bob", "host_filter": None, "operation": 1,
        "permission_type": 1}]
    answer = as_client_reads("DescribeAcls", version, response)
    assert (answer.error_code, answer.error_message) == (0, None)
    (resource,) = answer.resources
    assert (resource.resource_type, resource.resource_name, resource.pattern_type) == (
        2, "orders", 4)
    assert [(a.principal, a.host, a.operation, a.permission_type) for a in resource.acls] == [
        ("User:bob", "*", 3, 3), ("User:bob", "10.0.0.1", 4, 2)]


def test_describe_acls_whole_request_error_is_the_top_level_error() -> None:
    gateway = FakeGateway({DESCRIBE: GatewayError(403, Errors.CLUSTER_AUTHORIZATION_FAILED,
                                                  None)})
    request = from_kafka_python(AdminApi.DESCRIBE_ACLS, "DescribeAcls", 2, describe_request())
    answer = as_client_reads("DescribeAcls", 2, run(acls.describe_acls, request, gateway))
    assert (answer.error_code, answer.resources) == (31, [])
    assert answer.error_message == Errors.CLUSTER_AUTHORIZATION_FAILED.message


def delete_request() -> Any:
    cls = kp("DeleteAclsRequest")
    return cls(filters=[
        cls.DeleteAclsFilter(resource_type_filter=2, resource_name_filter="orders",
                             pattern_type_filter=3, principal_filter=None, host_filter=None,
                             operation=1, permission_type=1),
        cls.DeleteAclsFilter(resource_type_filter=1, resource_name_filter=None,
                             pattern_type_filter=1, principal_filter=None, host_filter=None,
                             operation=42, permission_type=1),
    ])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_delete_acls(version: int) -> None:
    gateway = FakeGateway({DELETE: DeleteAclsResponse(filter_results=(
        DeleteAclsFilterResult(matching_acls=(DeleteAclsMatchingAcl(
            resource_type=T.TOPIC, resource_name="orders", pattern_type=P.LITERAL,
            principal="User:bob", host="*", operation=O.READ, permission_type=A.ALLOW),)),
        DeleteAclsFilterResult(error_code=42, error_message="Unknown operation."),
    ))})
    request = from_kafka_python(AdminApi.DELETE_ACLS, "DeleteAcls", version, delete_request())
    response = run(acls.delete_acls, request, gateway)
    first, second = gateway.bodies(DELETE)[0]["filters"]
    assert first == {"resource_type_filter": 2, "resource_name_filter": "orders",
                     "pattern_type_filter": 3, "principal_filter": None, "host_filter": None,
                     "operation": 1, "permission_type": 1}
    assert second["operation"] == 0  # 42 is no AclOperation: UNKNOWN, as Kafka reads it
    answer = as_client_reads("DeleteAcls", version, response)
    deleted, refused = answer.filter_results
    (acl,) = deleted.matching_acls
    assert (acl.error_code, acl.resource_type, acl.resource_name, acl.pattern_type,
            acl.principal, acl.host, acl.operation, acl.permission_type) == (
        0, 2, "orders", 3, "User:bob", "*", 3, 3)
    assert (refused.error_code, refused.error_message, refused.matching_acls) == (
        42, "Unknown operation.", [])


def test_delete_acls_whole_request_error_answers_every_filter() -> None:
    gateway = FakeGateway({DELETE: GatewayError(503, Errors.NOT_CONTROLLER, "no leader")})
    request = from_kafka_python(AdminApi.DELETE_ACLS, "DeleteAcls", 3, delete_request())
    answer = as_client_reads("DeleteAcls", 3, run(acls.delete_acls, request, gateway))
    assert [(r.error_code, r.error_message, r.matching_acls)
            for r in answer.filter_results] == [(41, "no leader", [])] * 2


def test_the_real_operations_accept_the_bodies() -> None:
    gateway = ImageGateway(cluster(1))
    request = from_kafka_python(AdminApi.CREATE_ACLS, "CreateAcls", 3, creations(2, 99))
    answer = as_client_reads("CreateAcls", 3, run(acls.create_acls, request, gateway))
    assert [r.error_code for r in answer.results] == [0, Errors.INVALID_REQUEST.code]

    request = from_kafka_python(AdminApi.DESCRIBE_ACLS, "DescribeAcls", 3, describe_request())
    (resource,) = as_client_reads("DescribeAcls", 3, run(acls.describe_acls, request,
                                                         gateway)).resources
    assert (resource.resource_name, resource.pattern_type) == ("orders", 4)

    cls = kp("DeleteAclsRequest")
    every = cls(filters=[cls.DeleteAclsFilter(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
        principal_filter=None, host_filter=None, operation=1, permission_type=1)])
    request = from_kafka_python(AdminApi.DELETE_ACLS, "DeleteAcls", 1, every)
    (result,) = as_client_reads("DeleteAcls", 1, run(acls.delete_acls, request,
                                                     gateway)).filter_results
    assert [(m.resource_name, m.principal) for m in result.matching_acls] == [
        ("orders", "User:bob")]
