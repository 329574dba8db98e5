from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.acls import create_acls, delete_acls, describe_acls
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import (
    AclCreation,
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    CreateAclsRequest,
    DeleteAclsFilter,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from chunkraft.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from tests.support.controller import commit


def counter(start: int = 1) -> Callable[[], uuid.UUID]:
    numbers = itertools.count(start)
    return lambda: uuid.UUID(int=next(numbers))


def acl(**fields: Any) -> AclCreation:
    base: dict[str, Any] = {
        "resource_type": "TOPIC", "resource_name": "orders", "resource_pattern_type": "LITERAL",
        "principal": "User:alice", "host": "*", "operation": "READ", "permission_type": "ALLOW",
    }
    base.update(fields)
    return AclCreation(**base)


def with_acls(*creations: AclCreation, image: MetadataImage = MetadataImage.EMPTY,
              start: int = 1) -> MetadataImage:
    result = create_acls(image, CreateAclsRequest(creations=creations), new_id=counter(start))
    assert all(r.error_code == 0 for r in result.response.results), result.response
    return commit(image, result)


def a_filter(**fields: Any) -> DeleteAclsFilter:
    base: dict[str, Any] = {
        "resource_type_filter": "ANY", "pattern_type_filter": "ANY", "operation": "ANY",
        "permission_type": "ANY",
    }
    base.update(fields)
    return DeleteAclsFilter(**base)


# ------------------------------------------------------------------ create


def test_create_writes_one_record_with_the_drawn_id() -> None:
    result = create_acls(MetadataImage.EMPTY, CreateAclsRequest(creations=(acl(),)),
                         new_id=counter(42))
    assert result.records == (AccessControlEntryRecord(
        id=uuid.UUID(int=42), resource_type=2, resource_name="orders", pattern_type=3,
        principal="User:alice", host="*", operation=3, permission_type=3,
    ),)
    assert [r.error_code for r in result.response.results] == [0]
    image = commit(MetadataImage.EMPTY, result)
    assert list(image.acls.by_id) == [uuid.UUID(int=42)]


def test_types_may_be_given_by_name_or_code() -> None:
    by_code = acl(resource_type=2, resource_pattern_type=4, operation=4, permission_type=2)
    by_name = acl(resource_type="topic", resource_pattern_type="Prefixed", operation="WRITE",
                  permission_type="deny")
    assert by_code == by_name
    assert by_code.resource_pattern_type is AclPatternType.PREFIXED


def test_an_unknown_name_or_code_is_malformed() -> None:
    with pytest.raises(ValueError, match="unknown AclOperation 'READS'"):
        acl(operation="READS")
    with pytest.raises(ValueError):
        acl(resource_type=99)


def test_an_acl_that_exists_succeeds_without_a_record() -> None:
    image = with_acls(acl())
    result = create_acls(image, CreateAclsRequest(creations=(acl(),)), new_id=counter(100))
    assert result.records == ()
    assert [r.error_code for r in result.response.results] == [0]


def test_the_same_acl_twice_in_one_request_is_written_once() -> None:
    result = create_acls(MetadataImage.EMPTY, CreateAclsRequest(creations=(acl(), acl())),
                         new_id=counter())
    assert len(result.records) == 1
    assert [r.error_code for r in result.response.results] == [0, 0]


def test_ids_that_are_zero_or_taken_are_drawn_again() -> None:
    image = with_acls(acl(), start=5)
    draws = iter([uuid.UUID(int=0), uuid.UUID(int=5), uuid.UUID(int=6), uuid.UUID(int=6),
                  uuid.UUID(int=7)])
    result = create_acls(image, CreateAclsRequest(creations=(acl(host="a"), acl(host="b"))),
                         new_id=lambda: next(draws))
    assert [r.id for r in result.records] == [uuid.UUID(int=6), uuid.UUID(int=7)]


def test_an_id_factory_that_never_gives_a_free_id_fails_the_creation() -> None:
    image = with_acls(acl(), start=5)
    result = create_acls(image, CreateAclsRequest(creations=(acl(host="a"),)),
                         new_id=lambda: uuid.UUID(int=5))
    assert result.records == ()
    assert result.response.results[0].error_code == Errors.UNKNOWN_SERVER_ERROR.code


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"resource_type": "ANY"}, "Invalid resourceType ANY"),
        ({"resource_type": "UNKNOWN"}, "Invalid resourceType UNKNOWN"),
        ({"resource_pattern_type": "MATCH"}, "Invalid patternType MATCH"),
        ({"resource_pattern_type": "ANY"}, "Invalid patternType ANY"),
        ({"operation": "ANY"}, "Invalid operation ANY"),
        ({"operation": "UNKNOWN"}, "Invalid operation UNKNOWN"),
        ({"permission_type": "ANY"}, "Invalid permissionType ANY"),
        ({"resource_name": ""}, "Resource name should not be empty"),
        ({"resource_type": "CLUSTER", "resource_name": "mine"},
         "The only valid name for the CLUSTER resource is kafka-cluster"),
        ({"principal": "alice"}, "expected principalType:principalName"),
        ({"principal": "User:"}, "expected principalType:principalName"),
        ({"resource_name": "x" * 40000}, "longer than 32767 bytes"),
    ],
)
def test_invalid_acls_are_invalid_requests(fields: dict[str, Any], message: str) -> None:
    result = create_acls(MetadataImage.EMPTY,
                         CreateAclsRequest(creations=(acl(**fields), acl(host="ok"))),
                         new_id=counter())
    first, second = result.response.results
    assert first.error_code == Errors.INVALID_REQUEST.code
    assert message in (first.error_message or "")
    assert second.error_code == 0
    assert [r.host for r in result.records] == ["ok"]  # the valid one still goes through


def test_a_cluster_acl_on_kafka_cluster_is_valid() -> None:
    image = with_acls(acl(resource_type="CLUSTER", resource_name="kafka-cluster",
                          operation="CLUSTER_ACTION", principal="User:broker"))
    assert len(image.acls) == 1


# ------------------------------------------------------------------ delete


def sample() -> MetadataImage:
    return with_acls(
        acl(),                                                             # 1
        acl(principal="User:bob", operation="WRITE"),                      # 2
        acl(resource_name="ord", resource_pattern_type="PREFIXED"),        # 3
        acl(resource_name="*"),                                            # 4
        acl(resource_type="GROUP", resource_name="orders"),                # 5
        acl(resource_name="payments", permission_type="DENY", host="10.0.0.1"),  # 6
    )


def deleted(image: MetadataImage, *filters: DeleteAclsFilter) -> list[int]:
    result = delete_acls(image, DeleteAclsRequest(filters=filters))
    assert all(r.error_code == 0 for r in result.response.filter_results)
    return sorted(r.id.int for r in result.records)


def test_delete_by_literal_name_matches_exactly() -> None:
    image = sample()
    assert deleted(image, a_filter(resource_type_filter="TOPIC", resource_name_filter="orders",
                                   pattern_type_filter="LITERAL")) == [1, 2]


def test_delete_with_any_pattern_matches_the_name_in_any_pattern() -> None:
    image = sample()
    assert deleted(image, a_filter(resource_name_filter="ord")) == [3]
    assert deleted(image, a_filter(resource_name_filter="orders")) == [1, 2, 5]


def test_delete_with_match_finds_every_acl_that_applies_to_a_resource() -> None:
    image = sample()
    assert deleted(image, a_filter(resource_type_filter="TOPIC", resource_name_filter="orders",
                                   pattern_type_filter="MATCH")) == [1, 2, 3, 4]


def test_delete_by_entry_fields() -> None:
    image = sample()
    assert deleted(image, a_filter(principal_filter="User:bob")) == [2]
    assert deleted(image, a_filter(host_filter="10.0.0.1")) == [6]
    assert deleted(image, a_filter(operation="WRITE")) == [2]
    assert deleted(image, a_filter(permission_type="DENY")) == [6]
    assert deleted(image, a_filter(resource_type_filter="GROUP")) == [5]
    assert deleted(image, a_filter()) == [1, 2, 3, 4, 5, 6]


def test_an_acl_two_filters_match_is_removed_once_and_listed_twice() -> None:
    image = sample()
    result = delete_acls(image, DeleteAclsRequest(filters=(
        a_filter(principal_filter="User:bob"), a_filter(operation="WRITE"))))
    assert result.records == (RemoveAccessControlEntryRecord(id=uuid.UUID(int=2)),)
    assert [len(r.matching_acls) for r in result.response.filter_results] == [1, 1]
    matched = result.response.filter_results[0].matching_acls[0]
    assert (matched.principal, matched.operation, matched.resource_type) == (
        "User:bob", AclOperation.WRITE, AclResourceType.TOPIC)
    after = commit(image, result)
    assert len(after.acls) == 5 and uuid.UUID(int=2) not in after.acls.by_id


def test_a_filter_that_matches_nothing_succeeds() -> None:
    result = delete_acls(sample(), DeleteAclsRequest(filters=(
        a_filter(principal_filter="User:nobody"),)))
    assert result.records == ()
    assert result.response.filter_results[0].error_code == 0
    assert result.response.filter_results[0].matching_acls == ()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"resource_type_filter": "UNKNOWN"}, "Unknown patternFilter."),
        ({"pattern_type_filter": "UNKNOWN"}, "Unknown patternFilter."),
        ({"operation": "UNKNOWN"}, "Unknown entryFilter."),
        ({"permission_type": "UNKNOWN"}, "Unknown entryFilter."),
    ],
)
def test_unknown_in_a_filter_is_an_invalid_request(fields: dict[str, Any], message: str) -> None:
    result = delete_acls(sample(), DeleteAclsRequest(filters=(a_filter(**fields), a_filter(
        principal_filter="User:bob"))))
    bad, good = result.response.filter_results
    assert (bad.error_code, bad.error_message) == (Errors.INVALID_REQUEST.code, message)
    assert good.error_code == 0
    assert [r.id.int for r in result.records] == [2]


# ------------------------------------------------------------------ describe


def test_describe_groups_by_resource_in_a_stable_order() -> None:
    request = DescribeAclsRequest(resource_type_filter=AclResourceType.TOPIC)
    result = describe_acls(sample(), request)
    assert result.records == ()
    assert result.response.error_code == 0
    resources = [(r.resource_type, r.resource_name, r.pattern_type)
                 for r in result.response.resources]
    assert resources == [
        (AclResourceType.TOPIC, "*", AclPatternType.LITERAL),
        (AclResourceType.TOPIC, "ord", AclPatternType.PREFIXED),
        (AclResourceType.TOPIC, "orders", AclPatternType.LITERAL),
        (AclResourceType.TOPIC, "payments", AclPatternType.LITERAL),
    ]
    orders = result.response.resources[2]
    assert [(a.principal, a.operation, a.permission_type) for a in orders.acls] == [
        ("User:alice", AclOperation.READ, AclPermissionType.ALLOW),
        ("User:bob", AclOperation.WRITE, AclPermissionType.ALLOW),
    ]


def test_describe_with_match_and_defaults() -> None:
    image = sample()
    everything = describe_acls(image, DescribeAclsRequest())
    assert sum(len(r.acls) for r in everything.response.resources) == 6
    applying = describe_acls(image, DescribeAclsRequest(
        resource_type_filter=AclResourceType.TOPIC, resource_name_filter="orders",
        pattern_type_filter=AclPatternType.MATCH))
    assert sum(len(r.acls) for r in applying.response.resources) == 4


def test_describe_refuses_an_unknown_filter() -> None:
    result = describe_acls(sample(), DescribeAclsRequest(operation=AclOperation.UNKNOWN))
    assert result.response.error_code == Errors.INVALID_REQUEST.code
    assert result.response.resources == ()
