"""A stock Kafka consumer's fetch at an offset in a chunk the broker does not hold: the
answer per Fetch version (a redirect with ``preferred_read_replica`` from v11, the leader's own
read below it), the holder past its chunk's end, and never OFFSET_OUT_OF_RANGE for an offset a
chunk serves. Real logs and managers (``replica_harness``)."""

from __future__ import annotations

import time
from pathlib import Path

from chunkraft.broker_agent.read_replica import ConsumerReads
from chunkraft.broker_agent.replica_manager import ReplicaManager
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchTopic,
)
from chunkraft.records import BrokerRegistrationChangeRecord
from tests.unit.broker_agent.replica_harness import (
    BROKER_EPOCH_BASE,
    TOPIC,
    Cluster,
    eventually,
    offsets_of,
    produce,
    run_scenario,
    values_of,
)

FIRST = [f"a{i}".encode() for i in range(10)]
SECOND = [f"b{i}".encode() for i in range(10)]
THIRD = [f"c{i}".encode() for i in range(10)]

V11 = ConsumerReads(preferred_replica=True)
V10 = ConsumerReads(preferred_replica=False)
IGNORING = ConsumerReads(preferred_replica=True, not_redirected=frozenset({(TOPIC, 0)}))
NOT_LEADER = Errors.NOT_LEADER_OR_FOLLOWER.code


async def read(manager: ReplicaManager, offset: int, reads: ConsumerReads | None, *,
               min_bytes: int = 0, max_wait_ms: int = 0, isolation_level: int = 0
               ) -> FetchPartitionResponse:
    response = await manager.fetch(FetchRequest(
        max_wait_ms=max_wait_ms, min_bytes=min_bytes, isolation_level=isolation_level,
        topics=(FetchTopic(topic=TOPIC, partitions=(
            FetchPartition(partition=0, fetch_offset=offset),)),)), reads)
    return response.responses[0].partitions[0]


async def three_chunks(cluster: Cluster) -> None:
    """FIRST on broker 0 (0..9), SECOND on broker 1 (10..19), the active chunk led by broker 2
    with THIRD (20..29)."""
    b0, b1, b2 = (cluster.managers[b] for b in range(3))
    assert (await produce(b0, FIRST)).error_code == 0
    assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
    assert (await produce(b1, SECOND)).error_code == 0
    assert await b1.roll_chunk(TOPIC, 0, (2,), 2) == (0, None)
    assert (await produce(b2, THIRD)).error_code == 0


def test_the_leader_redirects_from_v11_and_reads_for_older_clients(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await three_chunks(cluster)
        leader = cluster.managers[2]
        try:
            # Over HTTP: chunkraft's client goes to a holder itself.
            assert (await read(leader, 0, None)).error_code == NOT_LEADER
            # v11+: no records, the holder named, the leader's own offsets.
            sent = await read(leader, 3, V11)
            assert (sent.error_code, sent.preferred_read_replica, sent.records) == (0, 0, b"")
            assert (sent.high_watermark, sent.log_start_offset) == (30, 20)
            assert (await read(leader, 15, V11)).preferred_read_replica == 1
            # Below v11, or a client that came back for the same offset: the leader's read.
            for reads in (V10, IGNORING):
                for offset, values in ((0, FIRST), (10, SECOND)):
                    got = await read(leader, offset, reads)
                    assert (got.error_code, got.preferred_read_replica) == (0, -1)
                    assert values_of(got) == values and got.high_watermark == 30
            # The active chunk is read as ever, at any version.
            for reads in (None, V10, V11):
                assert values_of(await read(leader, 20, reads)) == THIRD
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_holder_serves_its_chunk_and_sends_the_consumer_on_past_its_end(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await three_chunks(cluster)
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            got = await read(b0, 0, V11)
            assert values_of(got) == FIRST and got.preferred_read_replica == -1
            assert got.high_watermark == 10  # the chunk's end, exclusive
            # Past its end: the next chunk's holder, then the active chunk's leader; no records,
            # no error, never OFFSET_OUT_OF_RANGE (aiokafka would reset on it).
            on = await read(b0, 10, V11)
            assert (on.error_code, on.preferred_read_replica, on.records) == (0, 1, b"")
            assert (await read(b1, 20, V11)).preferred_read_replica == 2
            assert (await read(b0, 25, V11)).preferred_read_replica == 2
            assert (await read(b0, 10_000, V11)).preferred_read_replica == 2  # past the HW
            # A client that cannot be redirected is wrong about the leader: it must ask again.
            for reads in (None, V10, IGNORING):
                assert (await read(b0, 10, reads)).error_code == NOT_LEADER
            assert values_of(await read(b1, 10, V11)) == SECOND
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_redirect_is_answered_at_once_not_after_the_long_poll(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await three_chunks(cluster)
        try:
            started = time.monotonic()
            for manager, offset in ((cluster.managers[2], 0), (cluster.managers[0], 10)):
                answer = await read(manager, offset, V11, min_bytes=1 << 20, max_wait_ms=5000)
                assert answer.preferred_read_replica >= 0
            # The leader's own read returns as soon as it has the records, too.
            got = await read(cluster.managers[2], 0, V10, min_bytes=1 << 20, max_wait_ms=5000)
            assert values_of(got) == FIRST
            assert time.monotonic() - started < 3
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_no_live_holder_is_a_retriable_error_never_out_of_range(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await three_chunks(cluster)
        leader = cluster.managers[2]
        try:
            # Broker 0 unreachable but registered: the redirect still names it (the client
            # retries there and comes back), the leader's own read fails retriably.
            cluster.peers.down.add(0)
            assert (await read(leader, 0, V11)).preferred_read_replica == 0
            assert (await read(leader, 0, V10)).error_code == NOT_LEADER
            cluster.peers.down.clear()
            # Broker 0 fenced: no live holder to name or to read from.
            await cluster.controller.commit([BrokerRegistrationChangeRecord(
                broker_id=0, broker_epoch=BROKER_EPOCH_BASE, fenced=1)])
            for reads in (V11, V10):
                assert (await read(leader, 0, reads)).error_code == NOT_LEADER
            assert (await read(leader, 10, V11)).preferred_read_replica == 1
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_chunk_moved_away_is_found_where_it_went(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        await three_chunks(cluster)
        leader = cluster.managers[2]
        try:
            await cluster.controller.move_chunk(0, (1,))

            def moved() -> bool:
                topic = cluster.controller.image.topics.get_by_name(TOPIC)
                return topic is not None and topic.chunks_of(0)[0].isr == (1,)

            await eventually(moved, "the chunk copied to broker 1")
            assert (await read(leader, 0, V11)).preferred_read_replica == 1
            assert values_of(await read(cluster.managers[1], 0, V11)) == FIRST
            # Broker 0 no longer holds it: it sends the consumer to broker 1.
            assert (await read(cluster.managers[0], 0, V11)).preferred_read_replica == 1
            got = await read(leader, 0, V10)
            assert values_of(got) == FIRST and offsets_of(got) == list(range(10))
        finally:
            await cluster.close()

    run_scenario(scenario())
