"""The console's read models on an image built from records: the topic list's pages and
search, a topic's partition rows, the brokers' counts, each filtered by ACLs."""

from __future__ import annotations

import uuid

from chunkraft.console.access import ConsoleAccess
from chunkraft.console.views import (
    PRIOR_EPOCHS_SHOWN,
    brokers_view,
    decode_page_token,
    encode_page_token,
    topic_view,
    topics_page,
)
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.protocol.acls import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
)
from chunkraft.records import (
    AccessControlEntryRecord,
    ChunkRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    RegisterBrokerRecord,
    TopicRecord,
)
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal

ADMIN = Principal("User:admin")
ALICE = Principal("User:alice")
AUTHORIZER = Authorizer(["User:admin"])


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


def image() -> MetadataImage:
    records: list[object] = [RegisterBrokerRecord(broker_id=b, fenced=b == 3, rack=f"r{b}")
                             for b in (1, 2, 3)]
    for index in range(120):
        name = f"t{index:03d}"
        records.append(TopicRecord(name=name, topic_id=topic_id(name)))
        records.append(PartitionRecord(partition_id=0, topic_id=topic_id(name), replicas=(1, 2),
                                       isr=(1, 2), leader=1, start_offset=0))
    big = topic_id("big")
    records.append(TopicRecord(name="big", topic_id=big))
    priors = tuple(PriorPartitionEpoch(p, 3) for p in range(12))
    for p in range(13):
        records.append(PartitionRecord(
            partition_id=p, topic_id=big, replicas=(2, 3), isr=(2, 3), leader=2,
            leader_epoch=4, partition_epoch=5, start_offset=100 if p == 0 else 0,
            adding_replicas=(3,) if p == 1 else (),
            prior_partition_epochs=priors if p == 12 else ()))
    records.append(ChunkRecord(partition_id=0, topic_id=big, start_offset=0, stop_offset=99,
                               end_offset=99, replicas=(1, 2), isr=(1, 2), epoch=1))
    records.append(AccessControlEntryRecord(
        id=uuid.uuid4(), resource_type=AclResourceType.TOPIC, resource_name="t00",
        pattern_type=AclPatternType.PREFIXED, principal=ALICE.name, host="*",
        operation=AclOperation.DESCRIBE, permission_type=AclPermissionType.ALLOW))
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay_all(records)
    return delta.apply()


def test_pages_of_topics_follow_their_tokens_to_the_end() -> None:
    access = ConsoleAccess(image(), ADMIN, AUTHORIZER)
    seen: list[str] = []
    after = None
    for _ in range(10):
        page = topics_page(access, "", after, 50)
        seen += [t["name"] for t in page["topics"]]
        assert page["total"] == 121 and page["may_create"]
        if page["next"] is None:
            break
        after = decode_page_token(page["next"])
    assert seen == sorted(["big", *(f"t{i:03d}" for i in range(120))])


def test_search_is_a_case_insensitive_substring() -> None:
    access = ConsoleAccess(image(), ADMIN, AUTHORIZER)
    page = topics_page(access, "T11", None, 50)
    assert [t["name"] for t in page["topics"]] == [f"t11{i}" for i in range(10)]
    assert page["total"] == 10 and page["next"] is None
    assert topics_page(access, "nothing", None, 50)["topics"] == []


def test_a_restricted_principal_sees_only_what_it_may_describe_and_no_total() -> None:
    # A PREFIXED ACL on "t00": t000..t009 only.
    access = ConsoleAccess(image(), ALICE, AUTHORIZER)
    first = topics_page(access, "", None, 4)
    assert [t["name"] for t in first["topics"]] == ["t000", "t001", "t002", "t003"]
    assert first["total"] is None and not first["may_create"]
    rest = topics_page(access, "", decode_page_token(first["next"]), 50)
    assert [t["name"] for t in rest["topics"]] == [f"t00{i}" for i in range(4, 10)]
    assert rest["next"] is None
    counts = {b["broker_id"]: b["partitions"] for b in brokers_view(access)}
    assert counts == {1: 10, 2: 10, 3: 0}  # "big" is not hers to count


def test_a_topic_view_lists_its_partitions_and_the_allowed_actions() -> None:
    snapshot = image()
    big = snapshot.topics.get_by_name("big")
    assert big is not None
    view = topic_view(ConsoleAccess(snapshot, ADMIN, AUTHORIZER), big)
    assert view["partitions"] == 13 and view["chunks"] == 14 and view["replication_factor"] == 2
    assert view["may_alter"] and [b["broker_id"] for b in view["brokers"]] == [1, 2, 3]
    rows = {row[0]: row for row in view["rows"]}
    assert rows[0][8] == 100 and rows[0][10] == 2  # active start; two chunks
    assert rows[1][4] == [3]  # adding
    assert rows[12][11] == 12 and len(rows[12][12]) == PRIOR_EPOCHS_SHOWN
    assert topic_view(ConsoleAccess(snapshot, ALICE, AUTHORIZER), big)["may_alter"] is False


def test_brokers_count_partitions_leaders_and_chunks() -> None:
    view = {b["broker_id"]: b for b in brokers_view(ConsoleAccess(image(), ADMIN, AUTHORIZER))}
    assert view[3]["fenced"] and view[1]["rack"] == "r1"
    assert view[1]["partitions"] == 120 and view[1]["leaders"] == 120
    assert view[2]["partitions"] == 133 and view[2]["leaders"] == 13
    assert view[1]["chunks"] == 121  # 120 active chunks and the inactive one of big-0
    assert view[3]["chunks"] == 13


def test_page_tokens_round_trip_and_refuse_what_they_did_not_make() -> None:
    assert decode_page_token(encode_page_token("a.b_c-1")) == "a.b_c-1"
    assert decode_page_token("%%%") is None
