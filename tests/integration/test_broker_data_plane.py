"""The data plane of real broker agents (3 controllers + 3 brokers on 127.0.0.1): produce and
fetch with replication, acks=all through kill -9 of the leader, recovery of a torn log tail,
the KIP-1114 chunk lifecycle checked on each broker's disk, automatic chunk deletion after
retention, INVALID_PARTITION_COUNT after createPartitions (KIP-253), and malformed batch frames
refused without a trace.

One cluster for the module; every test uses topics of its own and leaves every process running.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient, decode_partition
from chunkraft.client.command_config import CommandConfig
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.protocol.batch_frame import MEDIA_TYPE, frame_bytes
from chunkraft.protocol.data_plane import (
    FetchResponse,
    ProducePartitionData,
    ProduceRequest,
    ProduceTopicData,
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from tests.support.brokers import broker_cluster, run_everything, wait_until

CONTROLLER_PROPERTIES = {
    # A killed broker is fenced (and its leaderships move) within seconds.
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
    # Retention runs often; records produced with timestamps 30 days old are past the default
    # 7-day retention as soon as their segment is closed.
    "log.retention.check.interval.ms": "500",
}
DAY_MS = 24 * 3600 * 1000
MAX_ATTEMPTS = 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("data-plane"),
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


def client(cluster: LocalCluster, broker_id: int) -> BrokerClient:
    return BrokerClient(cluster.broker_url(broker_id), token=cluster.admin_token, timeout=30)


def records(prefix: str, count: int, *, age_ms: int = 0) -> list[tuple[bytes, bytes, int]]:
    now = int(time.time() * 1000) - age_ms
    return [(f"{prefix}-key-{i}".encode(), f"{prefix}-{i}".encode(), now) for i in range(count)]


def local(cluster: LocalCluster, broker_id: int, topic: str, partition: int = 0
          ) -> dict[str, Any] | None:
    """What broker ``broker_id`` holds of the partition on disk, None if nothing."""
    answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/local-replicas",
                       headers=cluster.headers, timeout=10)
    assert answer.status_code == 200, answer.text
    # One form of the cluster id everywhere: Kafka's base64, as /broker/v1/status prints it.
    assert answer.json()["cluster_id"] == cluster.cluster_id, answer.json()["cluster_id"]
    for row in answer.json()["partitions"]:
        if (row["topic"], row["partition"]) == (topic, partition):
            return dict(row)
    return None


def wait_leader(cluster: LocalCluster, admin: AdminClient, topic: str, *,
                not_on: int | None = None, timeout: float = 30.0) -> int:
    """The partition's leader as the brokers see it: one that answers a fetch."""
    found: list[int] = []

    def elected() -> bool:
        for broker_id in cluster.broker_nodes:
            if broker_id == not_on or not cluster.broker_nodes[broker_id].running:
                continue
            with client(cluster, broker_id) as broker:
                part, _ = broker.fetch_records(topic, 0, 0, max_wait_ms=0)
            if part.error_code == 0:
                found[:] = [broker_id]
                return True
        return False

    wait_until(elected, f"a leader of {topic}-0 other than {not_on}", timeout, 0.2)
    return found[0]


def fetch_all(broker: BrokerClient, topic: str, start: int, end: int, **options: Any
              ) -> list[Any]:
    """Every record from ``start`` until offset ``end`` (exclusive), in bounded fetches."""
    out: list[Any] = []
    offset = start
    for _ in range(MAX_ATTEMPTS):
        if offset >= end:
            break
        part, got = broker.fetch_records(topic, 0, offset, max_wait_ms=100, **options)
        assert part.error_code == 0, part
        if got:
            out.extend(got)
            offset = got[-1].offset + 1
        elif part.chunk_stop_offset >= 0 and offset > part.chunk_stop_offset:
            break
    return out


def test_produce_acks_all_then_every_replica_holds_the_records(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("replicated", 1, 3)
    leader = wait_leader(brokers, admin, "replicated")
    with client(brokers, leader) as broker:
        for batch in range(10):
            answer = broker.produce_records("replicated", 0, 1, records(f"b{batch}", 10),
                                            acks=-1)
            assert answer.error_code == 0, answer
            assert answer.base_offset == batch * 10
        part, got = broker.fetch_records("replicated", 0, 0)
    assert part.high_watermark == 100
    assert [r.offset for r in got] == list(range(100))
    assert got[42].value == b"b4-2"

    def replicated() -> bool:
        rows = [local(brokers, b, "replicated") for b in brokers.broker_nodes]
        return all(row is not None and row["log_end_offset"] == 100
                   and row["high_watermark"] == 100 for row in rows)

    wait_until(replicated, "every replica at log end and high watermark 100", 30, 0.2)


def test_acks_all_loses_nothing_acknowledged_through_kill_9_of_the_leader(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("durable", 1, 3)
    leader = wait_leader(brokers, admin, "durable")
    acked: list[bytes] = []
    current = leader
    killed = False
    deadline = time.monotonic() + 60
    for batch in range(60):
        if time.monotonic() > deadline:
            break
        if batch == 20:
            brokers.kill_broker(leader)
            killed = True
        values = records(f"d{batch}", 5)
        for _ in range(MAX_ATTEMPTS):
            if time.monotonic() > deadline:
                break
            try:
                with client(brokers, current) as broker:
                    answer = broker.produce_records("durable", 0, 1, values, acks=-1,
                                                    timeout_ms=5000)
            except httpx.HTTPError:
                answer = None
            if answer is not None and answer.error_code == 0:
                acked.extend(v for _, v, _ in values)
                break
            time.sleep(0.1)
            current = wait_leader(brokers, admin, "durable", not_on=leader if killed else None)
    assert killed and len(acked) >= 150, f"only {len(acked)} records acknowledged"
    new_leader = wait_leader(brokers, admin, "durable", not_on=leader)
    with client(brokers, new_leader) as broker:
        part, _ = broker.fetch_records("durable", 0, 0, max_wait_ms=0)
        stored = {r.value for r in fetch_all(broker, "durable", 0, part.high_watermark)}
    missing = [v for v in acked if v not in stored]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"

    brokers.start_broker(leader)
    brokers.wait_brokers_ready([leader], timeout=60)

    def caught_up() -> bool:
        mine = local(brokers, leader, "durable")
        theirs = local(brokers, new_leader, "durable")
        return (mine is not None and theirs is not None
                and mine["log_end_offset"] == theirs["log_end_offset"])

    wait_until(caught_up, f"restarted broker {leader} caught up with {new_leader}", 60, 0.2)


def _last_segment(cluster: LocalCluster, broker_id: int, topic: str) -> Path:
    directory = cluster.broker_nodes[broker_id].log_dir / f"{topic}-0"
    return sorted(p for p in directory.glob("*.log") if p.stat().st_size > 0)[-1]


def test_a_restarted_broker_cuts_a_torn_tail_keeps_the_rest_and_catches_up(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("torn", 1, 3)
    leader = wait_leader(brokers, admin, "torn")
    follower = next(b for b in brokers.broker_nodes if b != leader)
    with client(brokers, leader) as broker:
        for batch in range(5):
            assert broker.produce_records("torn", 0, 1, records(f"t{batch}", 10),
                                          acks=-1).error_code == 0
    wait_until(lambda: (local(brokers, follower, "torn") or {}).get("log_end_offset") == 50,
               f"broker {follower} holds offsets 0..49", 30, 0.2)
    brokers.kill_broker(follower)
    segment = _last_segment(brokers, follower, "torn")
    whole = segment.read_bytes()
    # Tear the last batch: cut it in the middle, and leave garbage where its end was.
    with segment.open("r+b") as file:
        file.truncate(len(whole) - 40)
        file.seek(0, 2)
        file.write(b"\x00\xff" * 7)
    with client(brokers, leader) as broker:
        for batch in range(5, 8):
            assert broker.produce_records("torn", 0, 1, records(f"t{batch}", 10),
                                          acks=1).error_code == 0
    brokers.start_broker(follower)
    brokers.wait_brokers_ready([follower], timeout=60)
    log_text = brokers.broker_nodes[follower].log_path.read_text(errors="replace")
    assert "recovery of torn-0: cut" in log_text, log_text[-2000:]

    def caught_up() -> bool:
        mine, theirs = local(brokers, follower, "torn"), local(brokers, leader, "torn")
        return (mine is not None and theirs is not None and mine["log_end_offset"] == 80
                and mine["size_bytes"] == theirs["size_bytes"])

    wait_until(caught_up, f"broker {follower} recovered and caught up to 80", 60, 0.2)
    # The batches before the tear were kept as they were: the first segment starts with them.
    assert _last_segment(brokers, follower, "torn").read_bytes()[:len(whole) - 200] \
        == whole[:len(whole) - 200]


def _cut(admin: AdminClient, topic: str, replicas: list[int]) -> None:
    (result,) = admin.create_chunks([{"topic": topic, "partition": 0, "replicas": replicas}])
    assert result["error_code"] == 0, result


def _chunks_held(cluster: LocalCluster, broker_id: int, topic: str
                 ) -> list[tuple[int, int, int]] | None:
    """(chunk start, first offset held, last offset held) of every chunk broker holds data of;
    None when it has no directory for the partition."""
    row = local(cluster, broker_id, topic)
    if row is None:
        return None
    return [(c["start_offset"], c["first_offset_held"], c["last_offset_held"])
            for c in row["chunks"] if c["first_offset_held"] >= 0]


def test_the_kip_1114_chunk_lifecycle_on_each_brokers_disk(
        brokers: LocalCluster, admin: AdminClient) -> None:
    """A topic with one partition on broker 0 only; 10 records; a chunk on broker 1; 10 more;
    the first chunk moved to broker 2 (the KIP's AlterChunkAssignmentsTest)."""
    admin.create_topic("kip", None, None, [[0]])
    wait_leader(brokers, admin, "kip")
    with client(brokers, 0) as b0:
        assert b0.produce_records("kip", 0, 1, records("first", 10)).base_offset == 0
    _cut(admin, "kip", [1])
    wait_until(lambda: _chunks_held(brokers, 1, "kip") is not None,
               "broker 1 created the new active chunk", 30, 0.1)
    with client(brokers, 1) as b1:
        answer = b1.produce_records("kip", 0, 1, records("second", 10))
        assert (answer.error_code, answer.base_offset) == (0, 10), answer
    with client(brokers, 0) as b0:
        refused = b0.produce_records("kip", 0, 1, records("late", 1))
        assert refused.error_code == Errors.NOT_LEADER_OR_FOLLOWER.code
    assert _chunks_held(brokers, 0, "kip") == [(0, 0, 9)]
    assert _chunks_held(brokers, 1, "kip") == [(10, 10, 19)]
    assert _chunks_held(brokers, 2, "kip") is None

    (moved,) = admin.alter_chunk_assignments(
        [{"topic": "kip", "partition": 0, "start_offset": 0, "replicas": [2]}])
    assert moved["error_code"] == 0, moved
    wait_until(lambda: _chunks_held(brokers, 0, "kip") is None,
               "broker 0 deleted the moved chunk's data", 30, 0.2)
    assert _chunks_held(brokers, 2, "kip") == [(0, 0, 9)]
    assert _chunks_held(brokers, 1, "kip") == [(10, 10, 19)]
    (chunk,) = [c for c in admin.list_chunks("kip", 0) if not c["is_active"]]
    assert (chunk["replica_ids"], chunk["isr_ids"]) == ([2], [2])

    with client(brokers, 2) as b2:
        part, got = b2.fetch_records("kip", 0, 0)
    assert part.chunk_stop_offset == 9
    assert [r.value for r in got] == [f"first-{i}".encode() for i in range(10)]
    with client(brokers, 1) as b1:
        part, got = b1.fetch_records("kip", 0, 10)
    assert [r.value for r in got] == [f"second-{i}".encode() for i in range(10)]
    with client(brokers, 0) as b0:
        part, _ = b0.fetch_records("kip", 0, 0)
    assert part.error_code == Errors.NOT_LEADER_OR_FOLLOWER.code


def test_the_transactional_cut_copies_the_overlap_to_the_new_chunk(
        brokers: LocalCluster, admin: AdminClient) -> None:
    """10 plain records; 10 in an open transaction; a chunk on broker 1 (stop 9, end 19, the
    new chunk starts at 10 and copies 10..19); commit; read_committed reads 10 + 10."""
    admin.create_topic("kiptx", None, None, [[0]])
    wait_leader(brokers, admin, "kiptx")
    with client(brokers, 0) as b0:
        assert b0.produce_records("kiptx", 0, 1, records("plain", 10)).error_code == 0
        ids = b0.init_producer_id()
        assert ids.error_code == 0 and ids.producer_id >= 0
        open_txn = b0.produce_records("kiptx", 0, 1, records("txn", 10),
                                      producer_id=ids.producer_id,
                                      producer_epoch=ids.producer_epoch, base_sequence=0,
                                      transactional=True, transactional_id="kip-txn")
        assert (open_txn.error_code, open_txn.base_offset) == (0, 10), open_txn
        part, got = b0.fetch_records("kiptx", 0, 0, isolation_level=1)
        assert part.last_stable_offset == 10 and len(got) == 10
    _cut(admin, "kiptx", [1])
    (inactive,) = [c for c in admin.list_chunks("kiptx", 0) if not c["is_active"]]
    assert (inactive["start_offset"], inactive["stop_offset"], inactive["end_offset"]) == (
        0, 9, 19)
    wait_until(lambda: _chunks_held(brokers, 1, "kiptx") == [(0, 10, 19), (10, 10, 19)],
               "broker 1 copied the overlap 10..19", 30, 0.2)
    with client(brokers, 1) as b1:
        answer = b1.write_txn_markers(WriteTxnMarkersRequest(markers=(WritableTxnMarker(
            producer_id=ids.producer_id, producer_epoch=ids.producer_epoch,
            transaction_result=True,
            topics=(WritableTxnMarkerTopic(name="kiptx", partition_indexes=(0,)),)),)))
        assert answer.markers[0].topics[0].partitions[0].error_code == 0, answer
        part, got = b1.fetch_records("kiptx", 0, 10, isolation_level=1)
    assert part.last_stable_offset == 21
    assert [r.value for r in got] == [f"txn-{i}".encode() for i in range(10)]
    with client(brokers, 0) as b0:
        part, got = b0.fetch_records("kiptx", 0, 0, isolation_level=1)
    assert part.chunk_stop_offset == 9
    assert [r.value for r in got] == [f"plain-{i}".encode() for i in range(10)]


def test_retention_drops_the_replica_and_the_chunk_leaves_the_image(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("retained", None, None, [[0]])
    wait_leader(brokers, admin, "retained")
    with client(brokers, 0) as b0:
        answer = b0.produce_records("retained", 0, 1, records("old", 10, age_ms=30 * DAY_MS))
        assert answer.error_code == 0
    _cut(admin, "retained", [1])
    assert [c["start_offset"] for c in admin.list_chunks("retained", 0)] == [0, 10]

    def chunk_gone() -> bool:
        return [c["start_offset"] for c in admin.list_chunks("retained", 0)] == [10]

    wait_until(chunk_gone, "retention removed chunk 0 from the controller's image", 30, 0.2)
    wait_until(lambda: _chunks_held(brokers, 0, "retained") is None,
               "broker 0 deleted the partition's directory", 30, 0.2)


def test_a_produce_with_the_old_partition_count_is_refused_after_create_partitions(
        brokers: LocalCluster, admin: AdminClient) -> None:
    admin.create_topic("growing", 1, 3)
    leader = wait_leader(brokers, admin, "growing")
    with client(brokers, leader) as broker:
        assert broker.produce_records("growing", 0, 1, records("before", 3)).error_code == 0
        admin.alter_topic_partitions("growing", 2)
        codes: list[int] = []

        def refused() -> bool:
            answer = broker.produce_records("growing", 0, 1, records("stale", 1))
            codes.append(answer.error_code)
            return answer.error_code == Errors.INVALID_PARTITION_COUNT.code

        wait_until(refused, "INVALID_PARTITION_COUNT for a producer still at 1 partition",
                   30, 0.1)
        assert set(codes) <= {0, Errors.INVALID_PARTITION_COUNT.code}
        answer = broker.produce_records("growing", 0, 2, records("after", 3))
        assert answer.error_code == 0, answer


def reframed(frame: bytes, records: object) -> bytes:
    """``frame`` with partition 0's ``records`` in its header replaced by ``records``."""
    (length,) = struct.unpack(">I", frame[4:8])
    header = json.loads(frame[8:8 + length])
    header["topics"][0]["partitions"][0]["records"] = records
    encoded = json.dumps(header).encode()
    return frame[:4] + struct.pack(">I", len(encoded)) + encoded + frame[8 + length:]


def test_a_malformed_batch_frame_is_refused_and_changes_nothing(
        brokers: LocalCluster, admin: AdminClient) -> None:
    # Both partitions led by one broker (the first replica leads), so one frame reaches both.
    admin.create_topic("framed", None, None, [[0, 1, 2], [0, 1, 2]])
    leader = wait_leader(brokers, admin, "framed")
    with client(brokers, leader) as broker:
        wait_until(lambda: broker.fetch_records("framed", 1, 0, max_wait_ms=0)[0].error_code
                   == 0, f"broker {leader} leading framed-1 too", 30, 0.2)
        assert broker.produce_records("framed", 0, 2, records("kept", 5)).error_code == 0
        good = frame_bytes(ProduceRequest(acks=-1, topics=(ProduceTopicData(
            name="framed", partition_count=2, partitions=(
                ProducePartitionData(index=0, records=build_batch(records("lost", 3))),
                ProducePartitionData(index=1, records=build_batch(records("lost", 3))))),)))
        malformed = {
            "shorter than the prefix": (good[:6], Errors.INVALID_REQUEST),
            "another magic": (b"CKB0" + good[4:], Errors.INVALID_REQUEST),
            "header length past the body": (
                good[:4] + struct.pack(">I", len(good)) + good[8:], Errors.INVALID_REQUEST),
            "header not JSON": (good[:8] + b"!" + good[9:], Errors.INVALID_REQUEST),
            # Partition 0's batch is whole; partition 1's reference goes past the payload:
            # the whole request is refused, partition 0 included.
            "last batch cut": (good[:-1], Errors.CORRUPT_MESSAGE),
            "a base64 string in a frame": (reframed(good, "AAAA"), Errors.INVALID_REQUEST),
        }
        url = brokers.broker_url(leader) + "/broker/v1/produce"
        headers = {"authorization": f"Bearer {brokers.admin_token}",
                   "content-type": MEDIA_TYPE}
        for what, (body, error) in malformed.items():
            answer = httpx.post(url, content=body, headers=headers, timeout=10)
            assert answer.status_code == 400, (what, answer.text)
            assert answer.json()["error_code"] == error.code, (what, answer.text)
        for index, end in ((0, 5), (1, 0)):
            part, got = broker.fetch_records("framed", index, 0, max_wait_ms=0)
            assert (part.error_code, part.log_end_offset, len(got)) == (0, end, end), index
        # The same request whole is taken, and the JSON form (base64) still works for curl.
        answer = httpx.post(url, content=good, headers=headers, timeout=10)
        assert answer.status_code == 200, answer.text
        assert [p["base_offset"] for p in answer.json()["topics"][0]["partitions"]] == [5, 0]
        plain = httpx.post(brokers.broker_url(leader) + "/broker/v1/fetch", headers={
            "authorization": f"Bearer {brokers.admin_token}"}, timeout=10, json={
            "topics": [{"topic": "framed", "partitions": [{"partition": 1, "fetch_offset": 0}]}]})
        assert plain.headers["content-type"] == "application/json"
        fetched = FetchResponse.model_validate_json(plain.content).responses[0].partitions[0]
        assert [r.value for r in decode_partition(fetched)] == [b"lost-0", b"lost-1", b"lost-2"]
