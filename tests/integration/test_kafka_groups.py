"""Kafka's classic consumer-group protocol on chunkraft's brokers, proven by the five stock
clients: each produces 10,000 keyed records with acks=all to an RF-3 topic and consumes them
in a group of three members (its own assignor, its own commits), with one member leaving and
one joining midway; every record is seen, each key's records are in the log in the order
they were sent, and after the whole group closed, a new member resumes from the committed
offsets (it sees the records produced after, and none of the 10,000).

Also, with kafka-python's admin client: ListGroups, DescribeGroups (members, the protocol the
coordinator chose, each member's assignment), OffsetFetch of the committed offsets, and
DeleteGroups (refused while the group has members, then done).

Real processes: 3 controllers, 3 brokers with SASL_PLAINTEXT Kafka listeners, on 127.0.0.1.
Every wait is bounded.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterator

import pytest

from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import broker_cluster, wait_until
from tests.support.kafka_group_members import CLIENTS, GroupClient, Seen, group_client
from tests.support.kafka_stock import create_topic, keyed, python_settings

RECORDS = 10_000
AFTER = 100
PARTITIONS = 6
WAIT_S = 120.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-groups")) as running:
        yield running


def describe(cluster: LocalCluster, group: str) -> dict:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(**python_settings(cluster), request_timeout_ms=10_000)
    try:
        described: dict = admin.describe_groups([group])[group]
        return described
    finally:
        admin.close()


def wait_stable(cluster: LocalCluster, group: str, members: int) -> dict:
    """The group's description once it is Stable with ``members`` members (bounded)."""
    seen: dict = {}

    def stable() -> bool:
        nonlocal seen
        seen = describe(cluster, group)
        return seen["group_state"] == "Stable" and len(seen["members"]) == members

    wait_until(stable, f"{group} Stable with {members} members", timeout=60, interval=0.3)
    return seen


class Collected:
    """Everything the members of one client saw, by value (first sighting) and in full."""

    def __init__(self, client: GroupClient) -> None:
        self.client = client
        self.records: list[Seen] = []

    def values(self) -> set[bytes]:
        self.records += self.client.drain()
        return {value for _, _, _, _, value in self.records}

    def wait_for(self, wanted: set[bytes], what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not wanted <= self.values():
            missing = len(wanted - self.values())
            assert time.monotonic() < deadline, f"{what}: {missing} records never seen"
            time.sleep(0.2)


def assert_log_order(records: list[Seen], sent: list[tuple[bytes, bytes]], who: str) -> None:
    """Every offset of every partition was seen, one record per offset, and each key's
    records stand in the log in the order they were sent."""
    at: dict[tuple[int, int], bytes] = {}
    for _, partition, offset, _, value in records:
        assert at.setdefault((partition, offset), value) == value, (
            f"{who}: two records at {partition}/{offset}")
    by_partition: dict[int, list[int]] = defaultdict(list)
    for partition, offset in at:
        by_partition[partition].append(offset)
    for partition, offsets in by_partition.items():
        assert sorted(offsets) == list(range(len(offsets))), f"{who}: gap in {partition}"
    assert len(at) == len(sent), f"{who}: {len(at)} offsets seen, {len(sent)} sent"
    order = {value: i for i, (_, value) in enumerate(sent)}
    key_of = dict((value, key) for key, value in sent)
    per_key: dict[bytes, list[int]] = defaultdict(list)
    for (_, _), value in sorted(at.items()):
        per_key[key_of[value]].append(order[value])
    for key, positions in per_key.items():
        assert positions == sorted(positions), f"{who}: key {key!r} out of order"


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_a_group_of_three_consumes_everything_across_a_leave_and_a_join(
        cluster: LocalCluster, name: str) -> None:
    topic = f"groups-{name}"
    group = f"group-{name}-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, topic, partitions=PARTITIONS)
    sent = keyed(RECORDS, name)
    thirds = [sent[:3334], sent[3334:6667], sent[6667:]]
    client = group_client(name, cluster, topic, group)
    collected = Collected(client)
    try:
        for member in ("m1", "m2", "m3"):
            client.start(member)
        wait_stable(cluster, group, 3)
        client.produce(thirds[0])
        collected.wait_for({v for _, v in thirds[0]}, f"{name}: first third")
        client.stop("m1")  # leaves: m2 and m3 take its partitions over
        client.produce(thirds[1])
        client.start("m4")
        collected.wait_for({v for _, v in thirds[1]}, f"{name}: second third")
        description = wait_stable(cluster, group, 3)
        assert description["protocol_type"] == "consumer"
        assert description["protocol_data"], "the coordinator chose no assignor"
        client.produce(thirds[2])
        collected.wait_for({v for _, v in sent}, f"{name}: all records")
        for member in ("m2", "m3", "m4"):
            client.stop(member)
        everything = list(collected.records)
        members = {member for member, _, _, _, _ in everything}
        assert {"m1", "m4"} <= members, f"{name}: the leaver or the joiner saw nothing"
        assert {value for *_, value in everything} == {value for _, value in sent}
        assert_log_order(everything, sent, name)

        # The group restarts: a new member resumes at the committed offsets.
        after = keyed(AFTER, f"{name}-after")
        client.start("m5")
        wait_stable(cluster, group, 1)
        client.produce(after)
        collected.records = []
        collected.wait_for({v for _, v in after}, f"{name}: records after the restart")
        time.sleep(1.0)  # anything re-read from before the commits would show up by now
        again = {value for *_, value in collected.records + client.drain()}
        assert again == {v for _, v in after}, (
            f"{name}: {len(again - {v for _, v in after})} records from before the "
            "restart were delivered again")
        client.stop("m5")
    finally:
        client.close()


def test_admin_clients_list_describe_fetch_offsets_and_delete_groups(
        cluster: LocalCluster) -> None:
    from kafka import KafkaAdminClient, TopicPartition

    topic = "groups-admin"
    group = f"admin-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, topic, partitions=PARTITIONS)
    client = group_client("kafka-python", cluster, topic, group)
    sent = keyed(300, "admin")
    collected = Collected(client)
    admin = KafkaAdminClient(**python_settings(cluster), request_timeout_ms=10_000)
    try:
        client.start("a1")
        client.start("a2")
        client.produce(sent)
        collected.wait_for({v for _, v in sent}, "admin group")
        description = wait_stable(cluster, group, 2)
        assert description["protocol_data"] == "range"  # kafka-python's first assignor
        assigned = [tp for member in description["members"]
                    for part in member["member_assignment"]["assigned_partitions"]
                    for tp in part["partitions"]]
        assert sorted(assigned) == list(range(PARTITIONS))
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["protocol_type"] == "consumer"
        assert dict(admin.delete_groups([group]))[group] == "NonEmptyGroupError"
        client.stop("a1")
        client.stop("a2")
        offsets = admin.list_group_offsets(group)[group]
        by_partition = defaultdict(int)
        for _, partition, _, _, _ in collected.records:
            by_partition[partition] += 1
        assert {tp.partition: meta.offset for tp, meta in offsets.items()
                if tp.topic == topic} == dict(by_partition)
        assert TopicPartition(topic, 0) in offsets
        assert dict(admin.delete_groups([group]))[group] == "OK"
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert describe(cluster, group)["group_state"] == "Dead"
    finally:
        admin.close()
        client.close()
