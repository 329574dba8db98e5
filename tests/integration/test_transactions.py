"""The transaction coordinator on real broker agents (3 controllers + 3 brokers on 127.0.0.1),
driven with the low-level broker routes: aborted data is never seen by read_committed; a
coordinator killed with kill -9 after PREPARE_COMMIT is durable and before all markers are
written has the commit finished by the new leader of its ``__transaction_state`` partition;
a zombie producer is fenced by the new producer's epoch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import (
    BrokerClient,
    decode_fetch,
    fetch_request,
    produce_request,
)
from chunkraft.client.command_config import CommandConfig
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
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
TOPIC = "payments"
RETRIABLE = {Errors.NOT_COORDINATOR.code, Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
             Errors.COORDINATOR_NOT_AVAILABLE.code, Errors.CONCURRENT_TRANSACTIONS.code}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("txn"), properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        with AdminClient(running.urls, CommandConfig(token=running.admin_token)) as admin:
            admin.create_topic(TOPIC, 2, 3)
        yield running


def _post(cluster: LocalCluster, broker_id: int, route: str, body: dict[str, Any]
          ) -> dict[str, Any]:
    answer = httpx.post(f"{cluster.broker_url(broker_id)}/broker/v1/{route}", json=body,
                        headers=cluster.headers, timeout=60)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _running(cluster: LocalCluster, not_on: int | None = None) -> list[int]:
    return [b for b, node in cluster.broker_nodes.items() if node.running and b != not_on]


def _coordinator(cluster: LocalCluster, tid: str, *, not_on: int | None = None) -> int:
    """The broker FindCoordinator names for ``tid`` (creating ``__transaction_state``)."""
    found: list[int] = []

    def answered() -> bool:
        for broker_id in _running(cluster, not_on):
            try:
                answer = _post(cluster, broker_id, "find-coordinator",
                               {"key_type": 1, "keys": [tid]})
            except httpx.HTTPError:
                continue
            coordinator = answer["coordinators"][0]
            if coordinator["error_code"] == 0 and coordinator["node_id"] != not_on \
                    and coordinator["node_id"] in _running(cluster):
                found[:] = [coordinator["node_id"]]
                return True
        return False

    wait_until(answered, f"the coordinator of {tid}", 60, 0.2)
    return found[0]


def _call(cluster: LocalCluster, tid: str, route: str, body: dict[str, Any], *,
          not_on: int | None = None, timeout: float = 60.0) -> dict[str, Any]:
    """``route`` on ``tid``'s coordinator, found again while the answer is retriable."""
    deadline = time.monotonic() + timeout
    while True:
        coordinator = _coordinator(cluster, tid, not_on=not_on)
        try:
            answer = _post(cluster, coordinator, route, body)
        except httpx.HTTPError:
            answer = {"error_code": Errors.NOT_COORDINATOR.code}
        code = answer.get("error_code", 0)
        if route == "add-partitions-to-txn" and answer.get("results"):
            code = answer["results"][0]["results"][0]["error_code"]
        if code not in RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def _init(cluster: LocalCluster, tid: str, **extra: Any) -> tuple[int, int]:
    answer = _call(cluster, tid, "init-producer-id",
                   {"transactional_id": tid, "transaction_timeout_ms": 60_000}, **extra)
    assert answer["error_code"] == 0, answer
    return answer["producer_id"], answer["producer_epoch"]


def _add(cluster: LocalCluster, tid: str, pid: int, epoch: int,
         partitions: list[tuple[str, int]], **extra: Any) -> int:
    topics: dict[str, list[int]] = {}
    for name, index in partitions:
        topics.setdefault(name, []).append(index)
    answer = _call(cluster, tid, "add-partitions-to-txn", {
        "transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
        "topics": [{"name": n, "partitions": p} for n, p in topics.items()]}, **extra)
    codes: set[int] = {r["error_code"] for t in answer["results"] for r in t["results"]}
    assert len(codes) == 1, answer
    return codes.pop()


def _end(cluster: LocalCluster, tid: str, pid: int, epoch: int, commit: bool,
         **extra: Any) -> int:
    answer = _call(cluster, tid, "end-txn", {"transactional_id": tid, "producer_id": pid,
                                             "producer_epoch": epoch, "committed": commit},
                   **extra)
    code: int = answer["error_code"]
    return code


def _produce(cluster: LocalCluster, topic: str, partition: int, count: int, tid: str,
             pid: int, epoch: int, sequence: int, values: list[bytes]) -> int:
    """Produces one transactional batch on the partition's leader: its error code."""
    request = produce_request(topic, partition, count, [(b"k", v, 1000) for v in values],
                              producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                              transactional_id=tid, transactional=True)
    code = Errors.NOT_LEADER_OR_FOLLOWER.code

    def produced() -> bool:
        nonlocal code
        for broker_id in _running(cluster):
            with BrokerClient(cluster.broker_url(broker_id), token=cluster.admin_token) as client:
                try:
                    code = client.produce(request).topics[0].partitions[0].error_code
                except httpx.HTTPError:
                    continue
            if code != Errors.NOT_LEADER_OR_FOLLOWER.code:
                return True
        return False

    wait_until(produced, f"a leader of {topic}-{partition}", 60, 0.2)
    return code


def _read(cluster: LocalCluster, topic: str, partition: int, isolation_level: int
          ) -> list[bytes] | None:
    """The partition's values read from its leader (None: no leader answered)."""
    for broker_id in _running(cluster):
        with BrokerClient(cluster.broker_url(broker_id), token=cluster.admin_token) as client:
            try:
                response = client.fetch(fetch_request(topic, partition, 0, max_wait_ms=0,
                                                      isolation_level=isolation_level))
            except httpx.HTTPError:
                continue
        if response.responses[0].partitions[0].error_code == 0:
            return [r.value or b"" for r in decode_fetch(response)[(topic, partition)]]
    return None


def test_aborted_data_is_never_seen_by_read_committed(cluster: LocalCluster) -> None:
    tid = "txn-abort"
    pid, epoch = _init(cluster, tid)
    assert _add(cluster, tid, pid, epoch, [(TOPIC, 0)]) == 0
    assert _produce(cluster, TOPIC, 0, 2, tid, pid, epoch, 0, [b"a1", b"a2"]) == 0
    # Open transaction: read_committed sees nothing of it yet.
    assert b"a1" not in (_read(cluster, TOPIC, 0, 1) or [])
    assert _end(cluster, tid, pid, epoch, False) == 0
    assert _add(cluster, tid, pid, epoch, [(TOPIC, 0)]) == 0
    assert _produce(cluster, TOPIC, 0, 2, tid, pid, epoch, 2, [b"c1"]) == 0
    assert _end(cluster, tid, pid, epoch, True) == 0

    def committed_visible() -> bool:
        return b"c1" in (_read(cluster, TOPIC, 0, 1) or [])

    wait_until(committed_visible, "the committed record", 30, 0.2)
    committed = _read(cluster, TOPIC, 0, 1) or []
    assert b"a1" not in committed and b"a2" not in committed
    uncommitted = _read(cluster, TOPIC, 0, 0) or []
    assert {b"a1", b"a2", b"c1"} <= set(uncommitted)


def test_a_zombie_producer_is_fenced_by_its_epoch(cluster: LocalCluster) -> None:
    tid = "txn-zombie"
    pid, epoch = _init(cluster, tid)
    assert _add(cluster, tid, pid, epoch, [(TOPIC, 1)]) == 0
    assert _produce(cluster, TOPIC, 1, 2, tid, pid, epoch, 0, [b"zombie"]) == 0
    # A new instance with the same transactional id: the open transaction is aborted.
    new_pid, new_epoch = _init(cluster, tid)
    assert new_pid == pid and new_epoch > epoch
    assert _produce(cluster, TOPIC, 1, 2, tid, pid, epoch, 1, [b"late"]) == \
        Errors.INVALID_PRODUCER_EPOCH.code
    assert _end(cluster, tid, pid, epoch, True) == Errors.PRODUCER_FENCED.code
    assert _add(cluster, tid, pid, epoch, [(TOPIC, 1)]) == Errors.PRODUCER_FENCED.code
    # The new producer works; the zombie's record is never committed.
    assert _add(cluster, tid, new_pid, new_epoch, [(TOPIC, 1)]) == 0
    assert _produce(cluster, TOPIC, 1, 2, tid, new_pid, new_epoch, 0, [b"fresh"]) == 0
    assert _end(cluster, tid, new_pid, new_epoch, True) == 0
    wait_until(lambda: b"fresh" in (_read(cluster, TOPIC, 1, 1) or []), "fresh", 30, 0.2)
    assert b"zombie" not in (_read(cluster, TOPIC, 1, 1) or [])


def test_a_coordinator_killed_mid_commit_is_finished_by_the_next_one(
        cluster: LocalCluster) -> None:
    tid = "txn-crash"
    coordinator = _coordinator(cluster, tid)
    # A partition on one broker only, which we stop: its marker cannot be written, so the
    # coordinator is stuck between PREPARE_COMMIT (durable) and COMPLETE_COMMIT when killed.
    lonely = next(b for b in _running(cluster) if b != coordinator)
    with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as admin:
        admin.create_topic("lonely", None, None, [[lonely]])
    pid, epoch = _init(cluster, tid)
    assert _add(cluster, tid, pid, epoch, [(TOPIC, 0), ("lonely", 0)]) == 0
    assert _produce(cluster, TOPIC, 0, 2, tid, pid, epoch, 0, [b"both-0"]) == 0
    assert _produce(cluster, "lonely", 0, 1, tid, pid, epoch, 0, [b"both-lonely"]) == 0
    cluster.kill_broker(lonely)
    try:
        assert _end(cluster, tid, pid, epoch, True) == 0  # PREPARE_COMMIT is durable
        time.sleep(1.0)  # markers are being retried towards the dead broker
        cluster.kill_broker(coordinator)
        try:
            cluster.start_broker(lonely)
            # The new leader of the state partition loads PREPARE_COMMIT and sends the markers.
            wait_until(lambda: _read(cluster, "lonely", 0, 1) == [b"both-lonely"],
                       "the commit marker on the lonely partition", 90, 0.5)
            successor = _coordinator(cluster, tid, not_on=coordinator)
            assert successor != coordinator
            # The transaction completed: the next producer of the id gets the next epoch.
            again_pid, again_epoch = _init(cluster, tid, not_on=coordinator)
            assert (again_pid, again_epoch) == (pid, epoch + 1)
        finally:
            cluster.start_broker(coordinator)
    finally:
        cluster.start_broker(lonely)
        cluster.wait_brokers_ready(timeout=60)


def test_the_producer_carries_on_after_a_kill_of_its_coordinator(
        cluster: LocalCluster) -> None:
    from chunkraft.client.producer import Producer

    tid = "txn-producer"
    coordinator = _coordinator(cluster, tid)
    bootstrap = [cluster.broker_url(b) for b in cluster.broker_nodes]
    with Producer(bootstrap, token=cluster.admin_token, verify=cluster.verify,
                  transactional_id=tid) as sender:
        sender.init_transactions()
        sender.begin_transaction()
        sender.send(TOPIC, b"before-kill", partition=0)
        sender.commit_transaction()
        cluster.kill_broker(coordinator)
        try:
            # The next transaction finds the new coordinator (the new leader of the state
            # partition, which loaded the id's state) and commits there.
            sender.begin_transaction()
            sender.send(TOPIC, b"after-kill", partition=1)
            sender.commit_transaction()
            wait_until(lambda: b"after-kill" in (_read(cluster, TOPIC, 1, 1) or []),
                       "the transaction committed by the new coordinator", 60, 0.5)
            assert b"before-kill" in (_read(cluster, TOPIC, 0, 1) or [])
        finally:
            cluster.start_broker(coordinator)
    cluster.wait_brokers_ready(timeout=60)
