"""The fast Metadata JSON is byte for byte ``describe_as(...).model_dump_json()``, and its topic
cache rewrites only what changed."""

from __future__ import annotations

import uuid

import pytest

from chunkraft.api.authorized import describe_as
from chunkraft.api.metadata_json import TopicJsonCache, metadata_json, online_brokers
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclPatternType, AclPermissionType
from chunkraft.protocol.topics import MetadataRequest, MetadataResponse
from chunkraft.records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    UnregisterBrokerRecord,
)
from chunkraft.records.uuids import kafka_uuid_str
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal
from tests.unit.api.metadata_support import (
    ADMIN,
    ALICE,
    AUTHORIZER,
    THIRD_ID,
    acl,
    rich_image,
)
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    OTHER_ID,
    apply,
    broker_epoch,
    chunk,
    with_topic,
)


def same(image: MetadataImage, request: MetadataRequest, principal: Principal = ADMIN,
         authorizer: Authorizer | None = None, cache: TopicJsonCache | None = None,
         cluster_id: str | None = "c-id") -> MetadataResponse:
    """Asserts the fast JSON is exactly the reference's; returns the reference answer."""
    expected = describe_as(image, principal, authorizer, request,
                           cluster_id=cluster_id,  # type: ignore[arg-type]
                           controller_id=2)
    fast = metadata_json(image, principal, authorizer, request, cluster_id=cluster_id,
                         controller_id=2, cache=cache if cache is not None else TopicJsonCache(
                             1 << 24))
    assert fast.decode() == expected.model_dump_json()
    assert MetadataResponse.model_validate_json(fast) == expected
    return expected


def named(*entries: dict[str, str | None], include_chunks: bool = True) -> MetadataRequest:
    return MetadataRequest.model_validate({"topics": list(entries),
                                           "include_chunks": include_chunks})


@pytest.mark.parametrize("include_chunks", [True, False])
def test_every_topic_is_written_as_the_reference_writes_it(include_chunks: bool) -> None:
    response = same(rich_image(), MetadataRequest(include_chunks=include_chunks))
    assert [t.name for t in response.topics] == ["logs", "orders", "payments"]
    logs, orders, payments = response.topics
    # The cases the image was built for are all in the answer.
    assert [p.error_code for p in logs.partitions] == [
        0, 0, Errors.LEADER_NOT_AVAILABLE.code]
    assert logs.partitions[2].offline_replicas == (3,)
    assert len(logs.partitions[1].prior_partition_epochs) == 2
    assert payments.partitions[0].error_code == Errors.LEADER_NOT_AVAILABLE.code  # fenced
    assert payments.partitions[1].error_code == Errors.LEADER_NOT_AVAILABLE.code  # unregistered
    assert payments.partitions[1].offline_replicas == (4,)
    if include_chunks:
        moving = orders.partitions[0].chunks[0]
        assert (moving.adding_replicas, moving.removing_replicas) == ((2,), (0,))
        assert len(orders.partitions[0].chunks) == 2
    else:
        assert all(not p.chunks for t in response.topics for p in t.partitions)


def test_brokers_cluster_id_and_offset_are_the_references() -> None:
    image = apply(rich_image(), RegisterBrokerRecord(
        broker_id=7, incarnation_id=uuid.UUID(int=7), broker_epoch=70,
        end_points=(BrokerEndpoint(name="X", host='h"\\ é\n', port=1),), rack="räck\t"))
    image = apply(image, RegisterBrokerRecord(broker_id=8, incarnation_id=uuid.UUID(int=8),
                                              broker_epoch=80))  # no endpoint at all
    same(image, MetadataRequest())
    same(image, MetadataRequest(), cluster_id=None)
    same(MetadataImage.EMPTY, MetadataRequest())
    same(MetadataImage.EMPTY, named({"name": "x"}))


def test_named_topics_unknown_ids_and_malformed_entries() -> None:
    image = rich_image()
    request = named(
        {"name": "payments"},
        {"topic_id": kafka_uuid_str(ORDERS_ID)},
        {"topic_id": str(THIRD_ID)},  # the hex form of an id
        {"name": "ghost"},
        {"name": "naïve \"quoted\" \\ \u2028"},
        {"topic_id": kafka_uuid_str(uuid.UUID(int=99))},
        {"topic_id": "not an id", "name": "orders"},
        {},
        {"name": "payments"},  # asked twice: answered once
        {"name": "orders", "topic_id": kafka_uuid_str(OTHER_ID)},  # the id wins
    )
    response = same(image, request)
    assert [t.error_code for t in response.topics] == [
        0, 0, 0, Errors.UNKNOWN_TOPIC_OR_PARTITION.code, Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
        Errors.UNKNOWN_TOPIC_ID.code, Errors.INVALID_REQUEST.code, Errors.INVALID_REQUEST.code,
        0]
    same(image, request.model_copy(update={"include_chunks": False}))
    same(image, named())


def test_authorization_is_describe_as_authorization() -> None:
    image = apply(
        rich_image(),
        acl(AclOperation.READ, "orders"),  # READ implies DESCRIBE
        acl(AclOperation.DESCRIBE, "pay", pattern=AclPatternType.PREFIXED),
        acl(AclOperation.ALL, "payments", permission=AclPermissionType.DENY,
            host="10.0.0.8"),  # another host: does not apply to alice
        acl(AclOperation.DESCRIBE, "logs", principal="User:bob"),
    )
    every = named({"name": "orders"}, {"name": "payments"}, {"name": "logs"},
                  {"name": "ghost"}, {"topic_id": kafka_uuid_str(THIRD_ID)},
                  {"topic_id": kafka_uuid_str(uuid.UUID(int=5))}, {"topic_id": "bad"},
                  {"topic_id": "bad", "name": "secret"})
    for request in (MetadataRequest(), MetadataRequest(include_chunks=False), every):
        for principal in (ALICE, ADMIN, Principal("User:bob"), Principal("User:eve")):
            same(image, request, principal, AUTHORIZER)
        same(image, request, ALICE, None)
        same(image, request, ALICE, Authorizer(allow_everyone_if_no_acl_found=True))
    shown = same(image, MetadataRequest(), ALICE, AUTHORIZER)
    assert [t.name for t in shown.topics] == ["orders", "payments"]
    refused = same(image, every, ALICE, AUTHORIZER)
    assert [(t.name, t.error_code) for t in refused.topics][2:5] == [
        ("logs", Errors.TOPIC_AUTHORIZATION_FAILED.code),
        ("ghost", Errors.TOPIC_AUTHORIZATION_FAILED.code),
        ("logs", Errors.TOPIC_AUTHORIZATION_FAILED.code)]
    # Alice denied on her host: payments disappears.
    denied = apply(image, acl(AclOperation.DESCRIBE, "payments",
                              permission=AclPermissionType.DENY, host="10.0.0.7"))
    assert [t.name for t in same(denied, MetadataRequest(), ALICE, AUTHORIZER).topics] == [
        "orders"]


# ------------------------------------------------------------------ the topic cache


def test_an_unchanged_topic_is_not_rewritten_across_images() -> None:
    cache = TopicJsonCache(1 << 24)
    image = rich_image()
    same(image, MetadataRequest(), cache=cache)
    assert (cache.misses, cache.hits, len(cache)) == (3, 0, 3)
    written = cache.partitions_written
    # A leader change of orders-1: one new topic image, one partition rewritten.
    changed = apply(image, PartitionChangeRecord(partition_id=1, topic_id=ORDERS_ID, leader=2))
    same(changed, MetadataRequest(), cache=cache)
    assert (cache.misses, cache.hits) == (4, 2)
    assert (cache.partitions_written, cache.partitions_copied) == (written + 1, 2)
    # Asking without chunks is another text, kept apart.
    same(changed, MetadataRequest(include_chunks=False), cache=cache)
    assert len(cache) == 6
    same(changed, MetadataRequest(), cache=cache)
    assert cache.hits == 5


def test_a_new_chunk_rewrites_its_partition_only_when_chunks_are_asked_for() -> None:
    cache = TopicJsonCache(1 << 24)
    image = rich_image()
    for include_chunks in (True, False):
        same(image, MetadataRequest(include_chunks=include_chunks), cache=cache)
    written = cache.partitions_written
    cut = apply(image, chunk(22, 30, 30, (1, 2), partition_id=0))
    same(cut, MetadataRequest(include_chunks=False), cache=cache)
    assert cache.partitions_written == written  # orders copied whole: no partition changed
    same(cut, MetadataRequest(), cache=cache)
    assert cache.partitions_written == written + 1


def test_fencing_a_broker_rewrites_only_the_partitions_on_it() -> None:
    cache = TopicJsonCache(1 << 24)
    image = rich_image()
    same(image, MetadataRequest(), cache=cache)
    written, copied = cache.partitions_written, cache.partitions_copied
    fenced = apply(image, BrokerRegistrationChangeRecord(
        broker_id=0, broker_epoch=broker_epoch(0), fenced=1))
    response = same(fenced, MetadataRequest(), cache=cache)
    on_0 = sum(0 in p.replica_nodes for t in response.topics for p in t.partitions)
    assert cache.partitions_written == written + on_0
    assert cache.partitions_copied == copied + 8 - on_0
    orders = response.topics[1]
    assert orders.partitions[2].offline_replicas == (0,)
    # Unfenced again, and broker 2 unregistered: the answer follows the brokers both ways.
    back = apply(fenced, BrokerRegistrationChangeRecord(
        broker_id=0, broker_epoch=broker_epoch(0), fenced=-1))
    same(back, MetadataRequest(), cache=cache)
    gone = apply(back, UnregisterBrokerRecord(broker_id=2, broker_epoch=broker_epoch(2)))
    assert online_brokers(gone.brokers) == {0, 1}
    same(gone, MetadataRequest(), cache=cache)
    same(gone, MetadataRequest(include_chunks=False), cache=cache)


def test_a_deleted_and_recreated_topic_is_written_afresh() -> None:
    cache = TopicJsonCache(1 << 24)
    image = rich_image()
    same(image, MetadataRequest(), cache=cache)
    removed = apply(image, RemoveTopicRecord(topic_id=ORDERS_ID))
    same(removed, MetadataRequest(), cache=cache)
    again = with_topic(removed, "orders", ((2,), (0,), (1,), (1,)))
    response = same(again, MetadataRequest(), cache=cache)
    assert len(response.topics[1].partitions) == 4


def test_the_cache_is_bounded_in_bytes() -> None:
    image = rich_image()
    cache = TopicJsonCache(1 << 24)
    same(image, MetadataRequest(), cache=cache)
    whole = cache.size
    small = TopicJsonCache(whole - 1)
    same(image, MetadataRequest(), cache=small)
    assert 0 < small.size <= whole - 1 and len(small) == 2  # the first written was evicted
    tiny = TopicJsonCache(10)
    same(image, MetadataRequest(), cache=tiny)
    assert (tiny.size, len(tiny)) == (0, 0)  # each text is larger than the whole cache
    tiny.clear()
    cache.clear()
    assert (cache.size, len(cache)) == (0, 0)
