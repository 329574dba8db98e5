"""The leader's read of an inactive chunk from a holder: only what a consumer may read (up to
the stop offset), each holder tried once, bounded in time."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from chunkraft.broker_agent.chunk_proxy import ProxyRead, consumer_part, read_from_holders
from chunkraft.dataplane.record_batch import build_batch, iter_batches
from chunkraft.protocol.data_plane import (
    FetchRequest,
    FetchResponse,
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from chunkraft.records import ChunkRecord
from tests.unit.broker_agent.replica_harness import (
    TOPIC,
    Cluster,
    InMemoryPeers,
    produce,
    run_scenario,
)

FIRST = [f"a{i}".encode() for i in range(10)]
SECOND = [f"b{i}".encode() for i in range(10)]


def batches(*spans: tuple[int, int]) -> bytes:
    return b"".join(build_batch([(b"k", b"v", 1)] * count, base_offset=base)
                    for base, count in spans)


def bases(data: bytes) -> list[int]:
    return [header.base_offset for header, _ in iter_batches(data)]


def test_a_consumer_gets_whole_batches_from_the_offset_to_the_stop_offset() -> None:
    data = batches((0, 5), (5, 5), (10, 5))
    assert bases(consumer_part(data, 0, 14)) == [0, 5, 10]
    assert bases(consumer_part(data, 7, 14)) == [5, 10]  # a batch is never cut
    assert bases(consumer_part(data, 0, 9)) == [0, 5]  # past the stop: the next chunk's
    assert bases(consumer_part(data, 0, 12)) == [0, 5]  # a batch ending past it is dropped
    assert consumer_part(data, 15, 20) == b""
    assert consumer_part(b"", 0, 9) == b""


class SlowPeers(InMemoryPeers):
    """Peers of which ``slow`` never answer in time (a hung broker)."""

    def __init__(self, peers: InMemoryPeers, slow: set[int]) -> None:
        super().__init__(peers.brokers)
        self.slow = slow

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        if broker_id in self.slow:
            await asyncio.sleep(60)
        return await super().fetch(broker_id, request)


async def _cut_with_open_transaction(cluster: Cluster) -> ChunkRecord:
    """FIRST committed at 0..9, SECOND an open transaction at 10..19, cut onto broker 1: the
    chunk stops at 9 and ends at 19, held by broker 0."""
    b0 = cluster.managers[0]
    assert (await produce(b0, FIRST)).error_code == 0
    txn = await produce(b0, SECOND, producer_id=7, producer_epoch=0, base_sequence=0,
                        transactional=True)
    assert txn.error_code == 0
    assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
    topic = cluster.controller.image.topics.get_by_name(TOPIC)
    assert topic is not None
    (chunk,) = topic.chunks_of(0)
    assert (chunk.stop_offset, chunk.end_offset, chunk.isr) == (9, 19, (0,))
    return chunk


def test_the_leader_reads_up_to_the_stop_offset_even_when_the_chunk_holds_more(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        try:
            chunk = await _cut_with_open_transaction(cluster)
            read = ProxyRead(TOPIC, 0, 0, chunk, (0,), 1 << 20, 0)
            got = await read_from_holders(read, cluster.peers, 1, lambda: 101)
            assert got is not None and got.holder == 0 and got.aborted is None
            assert bases(got.records) == [0]  # FIRST's one batch; not the transaction's
            committed = await read_from_holders(
                ProxyRead(TOPIC, 0, 0, chunk, (0,), 1 << 20, 1), cluster.peers, 1, lambda: 101)
            assert committed is not None and committed.aborted == ()
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_read_committed_gets_the_aborted_transactions_of_the_chunk(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0 = cluster.managers[0]
        try:
            await produce(b0, [b"t0", b"t1"], producer_id=9, producer_epoch=0, base_sequence=0,
                          transactional=True)
            await b0.write_txn_markers(WriteTxnMarkersRequest(markers=(WritableTxnMarker(
                producer_id=9, producer_epoch=0, transaction_result=False, topics=(
                    WritableTxnMarkerTopic(name=TOPIC, partition_indexes=(0,)),)),)))
            await produce(b0, FIRST)
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            topic = cluster.controller.image.topics.get_by_name(TOPIC)
            assert topic is not None
            (chunk,) = topic.chunks_of(0)
            got = await read_from_holders(ProxyRead(TOPIC, 0, 0, chunk, (0,), 1 << 20, 1),
                                          cluster.peers, 1, lambda: 101)
            assert got is not None and got.aborted is not None
            assert [(a.producer_id, a.first_offset) for a in got.aborted] == [(9, 0)]
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_each_holder_is_tried_once_and_the_whole_read_is_bounded_in_time(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        try:
            chunk = await _cut_with_open_transaction(cluster)
            # Broker 2 holds nothing (its answer is an error), broker 0 does: the second one
            # tried gives the records.
            read = ProxyRead(TOPIC, 0, 0, chunk, (2, 0), 1 << 20, 0)
            got = await read_from_holders(read, cluster.peers, 1, lambda: 101)
            assert got is not None and got.holder == 0
            cluster.peers.down.add(0)
            assert await read_from_holders(read, cluster.peers, 1, lambda: 101) is None
            cluster.peers.down.clear()
            # A hung holder uses up the time for all: the read gives up within its bound.
            slow = SlowPeers(cluster.peers, {2})
            started = time.monotonic()
            assert await read_from_holders(read, slow, 1, lambda: 101, timeout_s=0.3) is None
            assert time.monotonic() - started < 2
        finally:
            await cluster.close()

    run_scenario(scenario())
