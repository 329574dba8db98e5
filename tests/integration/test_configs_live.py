"""Configurations applied live by real processes (3 controllers + 3 brokers on 127.0.0.1):
a topic's retention.ms, or its retention.bytes over the partition's chunks, makes the
controller delete an inactive chunk, and every broker drop it from disk; min.insync.replicas
and max.message.bytes refuse produces; all without restarting a broker.

Configurations are set through IncrementalAlterConfigs (``/controller/v1/
incremental-alter-configs``), by the one helper :func:`alter_topic`. One cluster for the module;
every test uses topics of its own and leaves every process running.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records import TOPIC_RESOURCE
from tests.support.brokers import API, broker_cluster, run_everything, wait_until

CHECK_INTERVAL_MS = 500
CONTROLLER_PROPERTIES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    # The leader's retention pass over inactive chunks.
    "log.retention.check.interval.ms": str(CHECK_INTERVAL_MS),
}
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
    # Also how often a broker reports its chunks' sizes (retention.bytes).
    "log.retention.check.interval.ms": str(CHECK_INTERVAL_MS),
}
SET, DELETE = 0, 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("configs-live"),
                        properties=CONTROLLER_PROPERTIES,
                        broker_properties=BROKER_PROPERTIES) as running:
        yield running


@pytest.fixture
def brokers(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """Every controller and broker running, ready and unfenced."""
    yield run_everything(cluster)


@pytest.fixture
def admin(brokers: LocalCluster) -> Iterator[AdminClient]:
    with AdminClient(brokers.urls, CommandConfig(token=brokers.admin_token)) as client:
        yield client


def alter_topic(cluster: LocalCluster, topic: str, configs: dict[str, str | None]) -> None:
    """IncrementalAlterConfigs on ``topic`` as the admin: SET each key with a value, DELETE
    each key whose value is None; asserts the controller accepted it."""
    body = {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic,
        "configs": [{"name": name, "value": value,
                     "config_operation": SET if value is not None else DELETE}
                    for name, value in configs.items()]}],
        "validate_only": False}
    answer = httpx.post(f"{cluster.urls[0]}{API}/incremental-alter-configs", json=body,
                        headers=cluster.headers, timeout=30, follow_redirects=True)
    assert answer.status_code == 200, answer.text
    (response,) = answer.json()["responses"]
    assert response["error_code"] == 0, response


def client(cluster: LocalCluster, broker_id: int) -> BrokerClient:
    return BrokerClient(cluster.broker_url(broker_id), token=cluster.admin_token, timeout=30)


def records(prefix: str, count: int, size: int = 0) -> list[tuple[bytes, bytes, int]]:
    now = int(time.time() * 1000)
    return [(f"{prefix}-{i}".encode(), f"{prefix}-{i}".encode().ljust(size, b"."), now)
            for i in range(count)]


def wait_leader(cluster: LocalCluster, topic: str, broker_id: int) -> None:
    def leads() -> bool:
        with client(cluster, broker_id) as broker:
            part, _ = broker.fetch_records(topic, 0, 0, max_wait_ms=0)
        return part.error_code == 0

    wait_until(leads, f"broker {broker_id} leading {topic}-0", 30, 0.1)


def chunks_held(cluster: LocalCluster, broker_id: int, topic: str
                ) -> list[tuple[int, int, int]] | None:
    """(chunk start, first offset held, last offset held) of every chunk broker ``broker_id``
    holds data of on disk; None when it has no directory for the partition."""
    answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/local-replicas",
                       headers=cluster.headers, timeout=10)
    assert answer.status_code == 200, answer.text
    for row in answer.json()["partitions"]:
        if (row["topic"], row["partition"]) == (topic, 0):
            return [(c["start_offset"], c["first_offset_held"], c["last_offset_held"])
                    for c in row["chunks"] if c["first_offset_held"] >= 0]
    return None


def broker_pids(cluster: LocalCluster) -> dict[int, int]:
    pids = {}
    for broker_id, node in cluster.broker_nodes.items():
        assert node.process is not None and node.process.poll() is None
        pids[broker_id] = node.process.pid
    return pids


def starts(admin: AdminClient, topic: str) -> list[int]:
    return [c["start_offset"] for c in admin.list_chunks(topic, 0)]


def two_chunks(brokers: LocalCluster, admin: AdminClient, topic: str, old: int,
               size: int = 0) -> None:
    """``topic`` on brokers 0 and 1 with ``old`` records, its active chunk cut onto 1 and 2,
    then 5 records more: chunk 0..old-1 (inactive, on 0 and 1) and the active chunk from
    ``old``; returns once broker 1 holds the whole inactive chunk."""
    admin.create_topic(topic, None, None, [[0, 1]])
    wait_leader(brokers, topic, 0)
    with client(brokers, 0) as b0:
        assert b0.produce_records(topic, 0, 1, records("old", old, size)).error_code == 0
    (cut,) = admin.create_chunks([{"topic": topic, "partition": 0, "replicas": [1, 2]}])
    assert cut["error_code"] == 0, cut
    wait_leader(brokers, topic, 1)
    with client(brokers, 1) as b1:
        answer = b1.produce_records(topic, 0, 1, records("new", 5, size))
        assert (answer.error_code, answer.base_offset) == (0, old), answer
    wait_until(lambda: (0, 0, old - 1) in (chunks_held(brokers, 1, topic) or []),
               f"broker 1 holding the inactive chunk 0..{old - 1}", 30, 0.1)


def chunk_zero_left_every_disk(brokers: LocalCluster, topic: str, active_start: int,
                               size: int = 0) -> None:
    """Brokers 0 and 1 have dropped chunk 0 of ``topic``-0, and broker 1 still serves the 5
    records of the active chunk from ``active_start``."""
    wait_until(lambda: chunks_held(brokers, 0, topic) is None,
               "broker 0 deleting its only chunk of the partition", 20, 0.1)
    wait_until(lambda: [c[0] for c in chunks_held(brokers, 1, topic) or []] == [active_start],
               "broker 1 deleting chunk 0 and keeping the active chunk", 20, 0.1)
    with client(brokers, 1) as b1:
        part, got = b1.fetch_records(topic, 0, active_start)
    assert part.error_code == 0, part
    assert [r.value for r in got] == [value for _, value, _ in records("new", 5, size)]


def test_retention_ms_deletes_an_expired_chunk_from_describe_and_every_brokers_disk(
        brokers: LocalCluster, admin: AdminClient) -> None:
    two_chunks(brokers, admin, "expiring", 10)
    wait_until(lambda: chunks_held(brokers, 0, "expiring") == [(0, 0, 9)],
               "broker 0 holding the inactive chunk 0..9", 30, 0.1)
    # The default retention (7 days) keeps it: several retention passes go by.
    time.sleep(3 * CHECK_INTERVAL_MS / 1000)
    assert starts(admin, "expiring") == [0, 10]
    pids = broker_pids(brokers)

    alter_topic(brokers, "expiring", {"retention.ms": "1000"})
    altered = time.monotonic()
    wait_until(lambda: starts(admin, "expiring") == [10],
               "the controller deleting chunk 0 past retention.ms", 20, 0.1)
    # Its records are past 1 s one second after the cut at most; one pass later it is gone.
    assert time.monotonic() - altered < 1.0 + 2 * CHECK_INTERVAL_MS / 1000 + 3.0
    chunk_zero_left_every_disk(brokers, "expiring", 10)
    assert broker_pids(brokers) == pids  # no broker restarted


def test_retention_bytes_deletes_the_oldest_chunk_once_the_rest_reach_the_limit(
        brokers: LocalCluster, admin: AdminClient) -> None:
    two_chunks(brokers, admin, "sized", 20, 1000)
    pids = broker_pids(brokers)
    # About 20 kB in chunk 0 and 5 kB in the active chunk: without chunk 0 the partition
    # would be below 10 kB, so Kafka's rule keeps it through several passes and reports.
    alter_topic(brokers, "sized", {"retention.bytes": "10000", "retention.ms": "-1"})
    time.sleep(4 * CHECK_INTERVAL_MS / 1000)
    assert starts(admin, "sized") == [0, 20]
    # At 4 kB the active chunk alone reaches the limit: chunk 0 goes.
    alter_topic(brokers, "sized", {"retention.bytes": "4000"})
    altered = time.monotonic()
    wait_until(lambda: starts(admin, "sized") == [20],
               "the controller deleting chunk 0 past retention.bytes", 20, 0.1)
    assert time.monotonic() - altered < 3 * CHECK_INTERVAL_MS / 1000 + 3.0
    chunk_zero_left_every_disk(brokers, "sized", 20, 1000)
    assert broker_pids(brokers) == pids  # no broker restarted


def test_min_insync_replicas_2_with_one_of_2_replicas_stopped_refuses_acks_all(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("guarded", None, None, [[0, 1]])
    wait_leader(brokers, "guarded", 0)
    with client(brokers, 0) as b0:
        assert b0.produce_records("guarded", 0, 1, records("both", 3)).error_code == 0
    try:
        brokers.stop_broker(1)
        codes: list[int] = []
        with client(brokers, 0) as b0:
            def accepted_by_one() -> bool:
                answer = b0.produce_records("guarded", 0, 1, records("one", 1),
                                            timeout_ms=2000)
                codes.append(answer.error_code)
                return answer.error_code == 0

            # min.insync.replicas is 1 (nothing set): acks=all passes on the ISR of one.
            wait_until(accepted_by_one, "acks=all accepted with broker 1 stopped", 30, 0.2)
            alter_topic(brokers, "guarded", {"min.insync.replicas": "2"})

            def refused() -> bool:
                answer = b0.produce_records("guarded", 0, 1, records("two", 1),
                                            timeout_ms=2000)
                codes.append(answer.error_code)
                return answer.error_code == Errors.NOT_ENOUGH_REPLICAS.code

            wait_until(refused, "NOT_ENOUGH_REPLICAS once min.insync.replicas=2", 15, 0.1)
            assert set(codes) <= {0, Errors.NOT_ENOUGH_REPLICAS.code,
                                  Errors.REQUEST_TIMED_OUT.code}, codes
            assert b0.produce_records("guarded", 0, 1, records("one", 1),
                                      acks=1).error_code == 0
    finally:
        brokers.start_broker(1)
        brokers.wait_brokers_ready([1], timeout=60)


def test_max_message_bytes_set_low_refuses_a_larger_batch(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("bounded", None, None, [[2]])
    wait_leader(brokers, "bounded", 2)
    with client(brokers, 2) as b2:
        assert b2.produce_records("bounded", 0, 1, records("big", 1, 2000)).error_code == 0
        alter_topic(brokers, "bounded", {"max.message.bytes": "1000"})
        wait_until(lambda: b2.produce_records("bounded", 0, 1, records("big", 1, 2000))
                   .error_code == Errors.MESSAGE_TOO_LARGE.code,
                   "MESSAGE_TOO_LARGE once max.message.bytes=1000", 15, 0.1)
        assert b2.produce_records("bounded", 0, 1, records("small", 1, 100)).error_code == 0
        alter_topic(brokers, "bounded", {"max.message.bytes": None})
        wait_until(lambda: b2.produce_records("bounded", 0, 1, records("big", 1, 2000))
                   .error_code == 0, "the larger batch accepted again once deleted", 15, 0.1)
