"""The group coordinator on real broker agents (3 controllers + 3 brokers on 127.0.0.1):
offsets committed (whole partitions and key ranges) are answered by the leader of the group's
``__consumer_offsets`` partition, other brokers answer NOT_COORDINATOR, membership forms a
generation, and after a kill -9 of the coordinator broker the new leader of the offsets
partition answers the same offsets from its replica of the log.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.protocol.data_plane import KEY_HASH_MAX
from tests.support.brokers import broker_cluster, wait_until

CONTROLLER_PROPERTIES = {
    # A killed broker is fenced (and its leaderships move) within seconds.
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
}
OFFSETS_TOPIC = "__consumer_offsets"
HALF = KEY_HASH_MAX // 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("groups"), properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        with AdminClient(running.urls, CommandConfig(token=running.admin_token)) as admin:
            admin.create_topic("orders", 2, 3)
        _offsets_topic(running)
        yield running


def _offsets_topic(cluster: LocalCluster) -> None:
    """``__consumer_offsets`` exists: through FindCoordinator (which creates it) when the
    broker has that route, else created by the admin with the same layout."""
    url = cluster.broker_url(next(iter(cluster.broker_nodes)))
    answer = httpx.post(f"{url}/broker/v1/find-coordinator", json={"key_type": 0,
                                                                   "keys": ["g"]},
                        headers=cluster.headers, timeout=30)
    if answer.status_code == 404:
        with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as admin:
            admin.create_topic(OFFSETS_TOPIC, 3, 3)


def _post(cluster: LocalCluster, broker_id: int, route: str, body: dict[str, Any]
          ) -> dict[str, Any]:
    answer = httpx.post(f"{cluster.broker_url(broker_id)}/broker/v1/{route}", json=body,
                        headers=cluster.headers, timeout=60)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _commit_body(group: str, partitions: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"group_id": group, "topics": [{"name": "orders", "partitions": partitions}],
            **extra}


def _commit_errors(answer: dict[str, Any]) -> list[int]:
    return [p["error_code"] for t in answer["topics"] for p in t["partitions"]]


def _fetch(cluster: LocalCluster, broker_id: int, group: str) -> dict[str, Any]:
    return _post(cluster, broker_id, "offset-fetch", {
        "group_id": group, "topics": [{"name": "orders", "partition_indexes": [0, 1]}]})


def _coordinator(cluster: LocalCluster, group: str, *, not_on: int | None = None,
                 timeout: float = 60.0) -> int:
    """The broker answering the group's OffsetFetch without error (the others answer
    NOT_COORDINATOR, or COORDINATOR_LOAD_IN_PROGRESS while loading)."""
    found: list[int] = []

    def answered() -> bool:
        for broker_id, node in cluster.broker_nodes.items():
            if broker_id == not_on or not node.running:
                continue
            try:
                code = _fetch(cluster, broker_id, group)["error_code"]
            except httpx.HTTPError:
                continue
            if code == 0:
                found[:] = [broker_id]
                return True
            assert code in (Errors.NOT_COORDINATOR.code, Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
                            Errors.COORDINATOR_NOT_AVAILABLE.code), code
        return False

    wait_until(answered, f"the coordinator of group {group}", timeout, 0.2)
    return found[0]


def _offsets(answer: dict[str, Any]) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
    assert answer["error_code"] == 0, answer
    return {p["partition_index"]: (p["committed_offset"],
                                   [(r["lo"], r["hi"], r["offset"]) for r in p["range_offsets"]])
            for t in answer["topics"] for p in t["partitions"]}


def test_offsets_and_range_offsets_survive_a_kill_of_the_coordinator(
        cluster: LocalCluster) -> None:
    group = "survivors"
    coordinator = _coordinator(cluster, group)
    others = [b for b in cluster.broker_nodes if b != coordinator]
    refused = _post(cluster, others[0], "offset-commit", _commit_body(
        group, [{"partition_index": 0, "committed_offset": 1}]))
    assert _commit_errors(refused) == [Errors.NOT_COORDINATOR.code]

    whole = _post(cluster, coordinator, "offset-commit", _commit_body(
        group, [{"partition_index": 0, "committed_offset": 42, "committed_metadata": "m"}]))
    assert _commit_errors(whole) == [0]
    # Two consumers of complementary key ranges of partition 1 commit independently.
    low = _post(cluster, coordinator, "offset-commit", _commit_body(group, [{
        "partition_index": 1, "committed_offset": 10,
        "range_offsets": [{"lo": 0, "hi": HALF, "offset": 10}]}]))
    high = _post(cluster, coordinator, "offset-commit", _commit_body(group, [{
        "partition_index": 1, "committed_offset": 17,
        "range_offsets": [{"lo": HALF + 1, "hi": KEY_HASH_MAX, "offset": 17}]}]))
    assert _commit_errors(low) == _commit_errors(high) == [0]
    expected = {0: (42, []), 1: (10, [(0, HALF, 10), (HALF + 1, KEY_HASH_MAX, 17)])}
    assert _offsets(_fetch(cluster, coordinator, group)) == expected
    assert _fetch(cluster, others[0], group)["error_code"] == Errors.NOT_COORDINATOR.code

    cluster.kill_broker(coordinator)
    try:
        successor = _coordinator(cluster, group, not_on=coordinator)
        assert successor != coordinator
        assert _offsets(_fetch(cluster, successor, group)) == expected
        # The new coordinator takes new commits on top of what it loaded.
        again = _post(cluster, successor, "offset-commit", _commit_body(group, [{
            "partition_index": 1, "committed_offset": 12,
            "range_offsets": [{"lo": 0, "hi": HALF, "offset": 12}]}]))
        assert _commit_errors(again) == [0]
        assert _offsets(_fetch(cluster, successor, group))[1] == (
            12, [(0, HALF, 12), (HALF + 1, KEY_HASH_MAX, 17)])
    finally:
        cluster.start_broker(coordinator)
        cluster.wait_brokers_ready(timeout=60)


def test_a_member_joins_syncs_commits_and_leaves(cluster: LocalCluster) -> None:
    group = "members"
    coordinator = _coordinator(cluster, group)
    joined = _post(cluster, coordinator, "join-group", {
        "group_id": group, "topics": ["orders"], "session_timeout_ms": 6000})
    assert joined["error_code"] == 0 and joined["generation_id"] >= 1
    member, generation = joined["member_id"], joined["generation_id"]
    assert joined["leader"] == member and [m["member_id"] for m in joined["members"]] == [member]
    synced = _post(cluster, coordinator, "sync-group", {
        "group_id": group, "generation_id": generation, "member_id": member,
        "assignments": [{"member_id": member,
                         "partitions": [{"name": "orders", "partitions": [0, 1]}]}]})
    assert synced["error_code"] == 0
    assert synced["partitions"] == [{"name": "orders", "partitions": [0, 1]}]
    beat = _post(cluster, coordinator, "heartbeat", {
        "group_id": group, "generation_id": generation, "member_id": member})
    assert beat["error_code"] == 0
    # Without membership, or with a wrong generation, a commit is refused.
    stranger = _post(cluster, coordinator, "offset-commit", _commit_body(
        group, [{"partition_index": 0, "committed_offset": 3}]))
    assert _commit_errors(stranger) == [Errors.UNKNOWN_MEMBER_ID.code]
    stale = _post(cluster, coordinator, "offset-commit", _commit_body(
        group, [{"partition_index": 0, "committed_offset": 3}], generation_id=generation + 1,
        member_id=member))
    assert _commit_errors(stale) == [Errors.ILLEGAL_GENERATION.code]
    member_commit = _post(cluster, coordinator, "offset-commit", _commit_body(
        group, [{"partition_index": 0, "committed_offset": 3}], generation_id=generation,
        member_id=member))
    assert _commit_errors(member_commit) == [0]
    assert _offsets(_fetch(cluster, coordinator, group))[0] == (3, [])
    left = _post(cluster, coordinator, "leave-group", {"group_id": group, "member_id": member})
    assert left["error_code"] == 0
    gone = _post(cluster, coordinator, "heartbeat", {
        "group_id": group, "generation_id": generation, "member_id": member})
    assert gone["error_code"] == Errors.UNKNOWN_MEMBER_ID.code


def test_transactional_offsets_show_only_after_the_commit_marker(cluster: LocalCluster) -> None:
    group = "transactional"
    coordinator = _coordinator(cluster, group)
    producer = _post(cluster, coordinator, "init-producer-id", {})
    assert producer["error_code"] == 0
    pid, epoch = producer["producer_id"], producer["producer_epoch"]
    index = positive_hash(group.encode()) % 3

    def txn_commit(offset: int) -> None:
        answer = _post(cluster, coordinator, "txn-offset-commit", _commit_body(
            group, [{"partition_index": 0, "committed_offset": offset}],
            transactional_id="txn-groups", producer_id=pid, producer_epoch=epoch))
        assert _commit_errors(answer) == [0]

    def marker(commit: bool) -> None:
        answer = _post(cluster, coordinator, "write-txn-markers", {"markers": [{
            "producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
            "topics": [{"name": OFFSETS_TOPIC, "partition_indexes": [index]}]}]})
        assert answer["markers"][0]["topics"][0]["partitions"][0]["error_code"] == 0

    txn_commit(7)
    assert _offsets(_fetch(cluster, coordinator, group))[0] == (-1, [])
    stable = _post(cluster, coordinator, "offset-fetch", {
        "group_id": group, "require_stable": True,
        "topics": [{"name": "orders", "partition_indexes": [0]}]})
    assert stable["topics"][0]["partitions"][0]["error_code"] == \
        Errors.UNSTABLE_OFFSET_COMMIT.code
    marker(True)
    assert _offsets(_fetch(cluster, coordinator, group))[0] == (7, [])
    txn_commit(9)
    marker(False)
    assert _offsets(_fetch(cluster, coordinator, group))[0] == (7, [])


def test_two_members_share_a_generation_and_the_first_leads(cluster: LocalCluster) -> None:
    group = "pair"
    coordinator = _coordinator(cluster, group)
    join = {"group_id": group, "topics": ["orders"], "session_timeout_ms": 6000,
            "rebalance_timeout_ms": 10000}
    first = _post(cluster, coordinator, "join-group", join)
    assert first["error_code"] == 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        # The second join waits until the first member rejoins (it learns of the rebalance
        # from its heartbeat, as a consumer would).
        second_join = pool.submit(_post, cluster, coordinator, "join-group", join)
        beat = {"group_id": group, "generation_id": first["generation_id"],
                "member_id": first["member_id"]}
        wait_until(lambda: _post(cluster, coordinator, "heartbeat", beat)["error_code"]
                   == Errors.REBALANCE_IN_PROGRESS.code, "the rebalance", 10, 0.1)
        rejoined = _post(cluster, coordinator, "join-group",
                         {**join, "member_id": first["member_id"]})
        second = second_join.result(timeout=30)
    assert rejoined["generation_id"] == second["generation_id"] == first["generation_id"] + 1
    assert rejoined["leader"] == second["leader"] == first["member_id"]
    assert {m["member_id"] for m in rejoined["members"]} == {first["member_id"],
                                                            second["member_id"]}
    generation = second["generation_id"]
    plan = [{"member_id": first["member_id"],
             "partitions": [{"name": "orders", "partitions": [0]}]},
            {"member_id": second["member_id"],
             "partitions": [{"name": "orders", "partitions": [1]}]}]
    with ThreadPoolExecutor(max_workers=1) as pool:
        follower_sync = pool.submit(_post, cluster, coordinator, "sync-group", {
            "group_id": group, "generation_id": generation, "member_id": second["member_id"]})
        leader_sync = _post(cluster, coordinator, "sync-group", {
            "group_id": group, "generation_id": generation, "member_id": first["member_id"],
            "assignments": plan})
        followed = follower_sync.result(timeout=30)
    assert leader_sync["partitions"] == [{"name": "orders", "partitions": [0]}]
    assert followed["partitions"] == [{"name": "orders", "partitions": [1]}]
    for member in (first["member_id"], second["member_id"]):
        _post(cluster, coordinator, "leave-group", {"group_id": group, "member_id": member})


def test_a_stable_generation_survives_a_kill_of_the_coordinator(cluster: LocalCluster) -> None:
    group = "steady"
    coordinator = _coordinator(cluster, group)
    joined = _post(cluster, coordinator, "join-group", {
        "group_id": group, "topics": ["orders"], "session_timeout_ms": 60000})
    member, generation = joined["member_id"], joined["generation_id"]
    mine = [{"name": "orders", "partitions": [0, 1]}]
    synced = _post(cluster, coordinator, "sync-group", {
        "group_id": group, "generation_id": generation, "member_id": member,
        "assignments": [{"member_id": member, "partitions": mine}]})
    assert synced["error_code"] == 0
    cluster.kill_broker(coordinator)
    try:
        successor = _coordinator(cluster, group, not_on=coordinator)
        beat = _post(cluster, successor, "heartbeat", {
            "group_id": group, "generation_id": generation, "member_id": member})
        assert beat["error_code"] == 0
        committed = _post(cluster, successor, "offset-commit", _commit_body(
            group, [{"partition_index": 1, "committed_offset": 4}], generation_id=generation,
            member_id=member))
        assert _commit_errors(committed) == [0]
        again = _post(cluster, successor, "sync-group", {
            "group_id": group, "generation_id": generation, "member_id": member})
        assert again["partitions"] == mine
        _post(cluster, successor, "leave-group", {"group_id": group, "member_id": member})
    finally:
        cluster.start_broker(coordinator)
        cluster.wait_brokers_ready(timeout=60)
