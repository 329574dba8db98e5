from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.acls import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
)
from chunkraft.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal
from tests.unit.controller.operations.topic_support import apply

ALICE = Principal("User:alice", "10.0.0.1")
BOB = Principal("User:bob", "10.0.0.2")
_ids = itertools.count(1)

TOPIC = AclResourceType.TOPIC
READ, WRITE, DESCRIBE, ALTER = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE,
                                AclOperation.ALTER)


def acl(name: str = "orders", **fields: Any) -> AccessControlEntryRecord:
    values: dict[str, Any] = {
        "id": uuid.UUID(int=next(_ids)), "resource_type": TOPIC, "resource_name": name,
        "pattern_type": AclPatternType.LITERAL, "principal": "User:alice", "host": "*",
        "operation": READ, "permission_type": AclPermissionType.ALLOW,
    }
    values.update(fields)
    return AccessControlEntryRecord(**values)


def image_with(*acls: AccessControlEntryRecord) -> MetadataImage:
    return apply(MetadataImage.EMPTY, *acls)


def allowed(image: MetadataImage, operation: AclOperation = READ, name: str = "orders",
            principal: Principal = ALICE, authorizer: Authorizer | None = None) -> bool:
    return (authorizer or Authorizer()).authorize(image, principal, operation, TOPIC, name)


def test_no_acl_denies_by_default_and_allows_when_configured() -> None:
    assert not allowed(MetadataImage.EMPTY)
    assert allowed(MetadataImage.EMPTY,
                   authorizer=Authorizer(allow_everyone_if_no_acl_found=True))


def test_allow_everyone_applies_only_when_no_acl_names_the_resource() -> None:
    image = image_with(acl(principal="User:bob"))
    assert not allowed(image, authorizer=Authorizer(allow_everyone_if_no_acl_found=True))


def test_a_literal_allow_grants_its_operation_on_its_name_only() -> None:
    image = image_with(acl())
    assert allowed(image)
    assert not allowed(image, WRITE)
    assert not allowed(image, name="orders2")
    assert not allowed(image, principal=BOB)


def test_super_users_need_no_acl() -> None:
    assert allowed(MetadataImage.EMPTY, AclOperation.DELETE,
                   authorizer=Authorizer(["User:alice"]))


@pytest.mark.parametrize("granted", [READ, WRITE, AclOperation.DELETE, ALTER, DESCRIBE,
                                     AclOperation.ALL])
def test_describe_is_implied_by_read_write_delete_alter_and_all(granted: AclOperation) -> None:
    assert allowed(image_with(acl(operation=granted)), DESCRIBE)


def test_describe_implies_nothing_else() -> None:
    assert not allowed(image_with(acl(operation=DESCRIBE)), READ)


def test_alter_configs_implies_describe_configs() -> None:
    image = image_with(acl(operation=AclOperation.ALTER_CONFIGS))
    assert allowed(image, AclOperation.DESCRIBE_CONFIGS)
    assert not allowed(image, DESCRIBE)


def test_deny_wins_over_allow_whatever_the_order() -> None:
    image = image_with(acl(operation=AclOperation.ALL),
                       acl(name="*", permission_type=AclPermissionType.DENY))
    assert not allowed(image, READ)
    assert allowed(image, WRITE)


def test_a_denied_alter_does_not_deny_the_describe_it_would_imply() -> None:
    image = image_with(acl(operation=ALTER, permission_type=AclPermissionType.DENY),
                       acl(operation=DESCRIBE))
    assert allowed(image, DESCRIBE)
    assert not allowed(image, ALTER)


def test_wildcard_resource_prefix_and_wildcard_principal() -> None:
    image = image_with(acl(name="*", principal="User:*"),
                       acl(name="pay", pattern_type=AclPatternType.PREFIXED, operation=WRITE))
    assert allowed(image, READ, "anything", BOB)
    assert allowed(image, WRITE, "payments")
    assert not allowed(image, WRITE, "pa")
    assert not allowed(image, WRITE, "orders")


def test_host_restricts_an_acl_to_that_client_address() -> None:
    image = image_with(acl(host="10.0.0.1"))
    assert allowed(image)
    assert not allowed(image, principal=Principal("User:alice", "10.0.0.9"))
    assert not allowed(image, principal=Principal("User:alice"))


def test_an_acl_of_another_resource_type_does_not_apply() -> None:
    image = image_with(acl(resource_type=AclResourceType.GROUP))
    assert not allowed(image)


def test_the_index_follows_acl_removal_in_a_newer_image() -> None:
    grant = acl()
    authorizer = Authorizer()
    before = image_with(grant)
    assert allowed(before, authorizer=authorizer)
    after = apply(before, RemoveAccessControlEntryRecord(id=grant.id))
    assert not allowed(after, authorizer=authorizer)
    assert allowed(before, authorizer=authorizer)


def test_cluster_operations_use_the_kafka_cluster_resource() -> None:
    image = image_with(acl(name="kafka-cluster", resource_type=AclResourceType.CLUSTER,
                           operation=AclOperation.CLUSTER_ACTION, principal="User:broker-1"))
    authorizer = Authorizer()
    broker = Principal("User:broker-1")
    assert authorizer.authorize_cluster(image, broker, AclOperation.CLUSTER_ACTION)
    assert not authorizer.authorize_cluster(image, broker, ALTER)


def test_a_broker_may_act_only_as_itself() -> None:
    image = image_with(acl(name="kafka-cluster", resource_type=AclResourceType.CLUSTER,
                           operation=AclOperation.CLUSTER_ACTION, principal="User:*"))
    authorizer = Authorizer(["User:admin"])
    assert authorizer.may_act_as_broker(image, Principal("User:broker-1"), 1)
    assert not authorizer.may_act_as_broker(image, Principal("User:broker-1"), 2)
    assert not authorizer.may_act_as_broker(image, ALICE, 1)
    assert authorizer.may_act_as_broker(image, Principal("User:admin"), 7)


def test_a_broker_principal_without_cluster_action_may_not_act() -> None:
    assert not Authorizer().may_act_as_broker(MetadataImage.EMPTY, Principal("User:broker-1"), 1)


def test_the_broker_principal_template_is_configurable() -> None:
    image = image_with(acl(name="kafka-cluster", resource_type=AclResourceType.CLUSTER,
                           operation=AclOperation.CLUSTER_ACTION, principal="User:CN=b1"))
    authorizer = Authorizer(broker_principal="User:CN=b{id}")
    assert authorizer.may_act_as_broker(image, Principal("User:CN=b1"), 1)
