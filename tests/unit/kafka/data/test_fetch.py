"""Kafka's Fetch on a broker for an offset in an inactive chunk the broker does not hold: a
redirect from v11 (once per offset on a connection), the leader's own read below v11 or for a
client that came back. Real ReplicaManagers (``replica_harness``) behind the handler."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkraft.broker_agent.replica_manager import ReplicaManager
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.kafka.codec.messages import RequestHeader
from chunkraft.kafka.data.fetch import FETCH_KEY, fetch_answer
from chunkraft.kafka.server.requests import KafkaRequest, KafkaSession
from chunkraft.protocol.data_plane import FetchPartitionResponse
from chunkraft.records import BrokerEndpoint, RegisterBrokerRecord
from chunkraft.security.principal import Principal
from tests.unit.broker_agent.replica_harness import (
    BROKER_EPOCH_BASE,
    TOPIC,
    Cluster,
    offsets_of,
    produce,
    run_scenario,
)

LISTENER = "SASL_PLAINTEXT"
FIRST = [f"a{i}".encode() for i in range(10)]
SECOND = [f"b{i}".encode() for i in range(10)]


@dataclass
class _Follower:
    manager: ReplicaManager

    @property
    def image(self) -> MetadataImage:
        return self.manager.image


@dataclass
class Runtime:
    """What the handler reads of a broker's runtime: its image, authorizer, ReplicaManager."""

    replica_manager: ReplicaManager
    authorizer: None = None

    @property
    def follower(self) -> _Follower:
        return _Follower(self.replica_manager)


def session() -> KafkaSession:
    return KafkaSession(listener=LISTENER, security_protocol=LISTENER, peer_host="127.0.0.1",
                        principal=Principal("User:admin", "127.0.0.1"))


async def fetch(manager: ReplicaManager, connection: KafkaSession, version: int,
                offset: int) -> dict[str, Any]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
    request = KafkaRequest(RequestHeader(FETCH_KEY, version, 1, "test", 0), body, connection)
    answer = await fetch_answer(Runtime(manager), request)
    (topic,) = answer["responses"]
    (partition,) = topic["partitions"]
    return dict(partition)


async def chunk_on_0_active_on_1(cluster: Cluster) -> None:
    """The brokers registered again with a Kafka listener (the only brokers a client may be
    sent to), FIRST in a chunk on broker 0, SECOND in the active chunk led by broker 1."""
    await cluster.controller.commit([RegisterBrokerRecord(
        broker_id=b, broker_epoch=BROKER_EPOCH_BASE + b, fenced=False,
        end_points=(BrokerEndpoint(LISTENER, "127.0.0.1", 9090 + b, 2),))
        for b in range(cluster.count)])
    b0, b1 = cluster.managers[0], cluster.managers[1]
    assert (await produce(b0, FIRST)).error_code == 0
    assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
    assert (await produce(b1, SECOND)).error_code == 0


def offsets(partition: dict[str, Any]) -> list[int]:
    return offsets_of(FetchPartitionResponse(partition=0, records=partition["records"] or b""))


def test_v11_redirects_once_per_offset_and_a_client_that_comes_back_gets_the_records(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await chunk_on_0_active_on_1(cluster)
        leader = cluster.managers[1]
        try:
            connection = session()
            sent = await fetch(leader, connection, 11, 0)
            assert (sent["error_code"], sent["preferred_read_replica"]) == (0, 0)
            assert not sent["records"]
            # Asked again for offset 0 on the same connection: the client ignores the field
            # (aiokafka without client_rack); the leader reads the chunk for it from now on.
            again = await fetch(leader, connection, 11, 0)
            assert again["preferred_read_replica"] == -1 and offsets(again) == list(range(10))
            later = await fetch(leader, connection, 12, 5)
            assert later["preferred_read_replica"] == -1 and offsets(later) == list(range(10))
            # Another connection (another client) is redirected as ever.
            assert (await fetch(leader, session(), 12, 5))["preferred_read_replica"] == 0
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_below_v11_the_leader_answers_the_records_itself(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await chunk_on_0_active_on_1(cluster)
        leader = cluster.managers[1]
        try:
            for version in (4, 10):
                got = await fetch(leader, session(), version, 0)
                assert got["error_code"] == 0 and offsets(got) == list(range(10))
                assert got["high_watermark"] == 20  # the leader's, not the chunk's
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_holder_past_its_chunk_sends_a_v11_client_to_the_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await chunk_on_0_active_on_1(cluster)
        holder = cluster.managers[0]
        try:
            connection = session()
            got = await fetch(holder, connection, 11, 0)
            assert offsets(got) == list(range(10)) and got["preferred_read_replica"] == -1
            past = await fetch(holder, connection, 11, 10)
            assert (past["error_code"], past["preferred_read_replica"]) == (0, 1)
            # Below v11 the client thinks the holder leads: it must refresh its metadata.
            older = await fetch(holder, session(), 10, 10)
            assert older["error_code"] == Errors.NOT_LEADER_OR_FOLLOWER.code
        finally:
            await cluster.close()

    run_scenario(scenario())
