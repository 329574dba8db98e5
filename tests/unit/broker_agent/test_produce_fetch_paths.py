"""Produce, fetch, ListOffsets and OffsetsForLeaderEpoch on one broker with real logs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import build_batch, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    ProducePartitionData,
    ProduceRequest,
    ProduceTopicData,
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from tests.unit.broker_agent.replica_harness import (
    TOPIC,
    Cluster,
    consume,
    eventually,
    produce,
    run_scenario,
    values_of,
)


def _request(records: bytes, *, name: str = TOPIC, count: int = 1, index: int = 0
             ) -> ProduceRequest:
    return ProduceRequest(topics=(ProduceTopicData(name=name, partition_count=count, partitions=(
        ProducePartitionData(index=index, records=records),)),))


def test_produce_refusals(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start()
        b0, b1 = cluster.managers[0], cluster.managers[1]
        data = build_batch([(b"k", b"v", 1)])
        try:
            def code(answer: Any) -> int:
                return int(answer.topics[0].partitions[0].error_code)

            assert code(await b0.produce(_request(data, name="nope"))) == \
                Errors.UNKNOWN_TOPIC_OR_PARTITION.code
            assert code(await b0.produce(_request(data, index=3))) == \
                Errors.UNKNOWN_TOPIC_OR_PARTITION.code
            assert code(await b0.produce(_request(data, count=2))) == \
                Errors.INVALID_PARTITION_COUNT.code
            assert code(await b1.produce(_request(data))) == Errors.NOT_LEADER_OR_FOLLOWER.code
            assert code(await b0.produce(_request(b"not a batch!"))) == \
                Errors.CORRUPT_MESSAGE.code
            assert code(await b0.produce(_request(data))) == 0
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_min_insync_replicas_refuses_acks_all(tmp_path: Path) -> None:
    async def scenario() -> None:
        from dataclasses import replace

        from tests.unit.broker_agent.replica_harness import FAST

        cluster = Cluster(tmp_path, count=1, config=replace(FAST, min_insync_replicas=2))
        await cluster.start()
        try:
            refused = await produce(cluster.managers[0], [b"a"])
            assert refused.error_code == Errors.NOT_ENOUGH_REPLICAS.code
            assert (await produce(cluster.managers[0], [b"a"], acks=1)).error_code == 0
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_idempotent_retry_answers_the_original_offsets(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            kwargs = {"producer_id": 5, "producer_epoch": 0, "base_sequence": 0}
            first = await produce(b0, [b"a", b"b"], **kwargs)
            again = await produce(b0, [b"a", b"b"], **kwargs)
            assert (first.base_offset, again.base_offset, again.error_code) == (0, 0, 0)
            gap = await produce(b0, [b"c"], producer_id=5, producer_epoch=0, base_sequence=7)
            assert gap.error_code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code
            assert values_of(await consume(b0, 0)) == [b"a", b"b"]
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_read_committed_stops_at_the_lso_and_lists_aborted_transactions(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            await produce(b0, [b"t0", b"t1"], producer_id=9, producer_epoch=0, base_sequence=0,
                          transactional=True)
            await produce(b0, [b"plain"])
            assert values_of(await consume(b0, 0, isolation_level=1)) == []
            assert len(values_of(await consume(b0, 0))) == 3
            await b0.write_txn_markers(WriteTxnMarkersRequest(markers=(WritableTxnMarker(
                producer_id=9, producer_epoch=0, transaction_result=False, topics=(
                    WritableTxnMarkerTopic(name=TOPIC, partition_indexes=(0,)),)),)))
            committed = await consume(b0, 0, isolation_level=1)
            assert committed.last_stable_offset == 4
            assert committed.aborted_transactions is not None
            assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] \
                == [(9, 0)]
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_key_range_fetch_keeps_only_keys_hashed_in_range(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            values = [f"v{i}".encode() for i in range(20)]
            await produce(b0, values)
            hashes = {v: positive_hash(b"k" + v) for v in values}
            lo, hi = 0, 2**30
            answer = await b0.fetch(FetchRequest(max_wait_ms=0, topics=(FetchTopic(
                topic=TOPIC, partitions=(FetchPartition(partition=0, fetch_offset=0,
                                                        key_range=(lo, hi)),)),)))
            kept = values_of(answer.responses[0].partitions[0])
            assert kept == [v for v in values if lo <= hashes[v] <= hi]
            assert 0 < len(kept) < 20
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_batch_without_a_key_in_range_comes_back_empty_so_the_reader_moves_on(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            outside, inside = b"a", b"b"
            while positive_hash(b"k" + outside) < 2**30:  # a key hashed above the range
                outside += b"a"
            while positive_hash(b"k" + inside) >= 2**30:  # and one within it
                inside += b"b"
            await produce(b0, [outside] * 3)  # offsets 0..2
            await produce(b0, [inside])  # offset 3
            answer = await b0.fetch(FetchRequest(max_wait_ms=0, topics=(FetchTopic(
                topic=TOPIC, partitions=(FetchPartition(partition=0, fetch_offset=0,
                                                        key_range=(0, 2**30 - 1)),)),)))
            part = answer.responses[0].partitions[0]
            headers = [h for h, _ in iter_batches(part.records)]
            assert [(h.base_offset, h.last_offset, h.record_count) for h in headers] == [
                (0, 2, 0), (3, 3, 1)]
            assert values_of(part) == [inside]
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_only_a_replica_may_read_a_chunk_past_its_stop_offset(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            await produce(b0, [b"x"])
            answer = await b0.fetch(FetchRequest(max_wait_ms=0, topics=(FetchTopic(
                topic=TOPIC, partitions=(FetchPartition(partition=0, fetch_offset=0,
                                                        chunk_start_offset=0),)),)))
            assert answer.responses[0].partitions[0].error_code == Errors.INVALID_REQUEST.code
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_consumer_fetch_long_polls_for_data(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            waiting = asyncio.ensure_future(consume(b0, 0, max_wait_ms=5000))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            await produce(b0, [b"late"])
            answer = await asyncio.wait_for(waiting, 2)
            assert values_of(answer) == [b"late"]
            out_of_range = await consume(b0, 5)
            assert out_of_range.error_code == Errors.OFFSET_OUT_OF_RANGE.code
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_list_offsets_and_offsets_for_leader_epoch(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            await produce(b0, [b"a", b"b"])
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            b1 = cluster.managers[1]
            await produce(b1, [b"c"])

            def listed(manager: Any, timestamp: int) -> tuple[int, int]:
                answer = manager.list_offsets(ListOffsetsRequest(topics=(ListOffsetsTopic(
                    name=TOPIC, partitions=(ListOffsetsPartition(partition_index=0,
                                                                 timestamp=timestamp),)),)))
                result = answer.topics[0].partitions[0]
                return result.error_code, result.offset

            assert listed(b1, -2) == (0, 0)  # the partition's first chunk, held by broker 0
            assert listed(b1, -1) == (0, 3)
            assert listed(b0, -1)[0] == Errors.NOT_LEADER_OR_FOLLOWER.code
            assert listed(b0, 1001) == (0, 1)  # broker 0 answers timestamps in its chunk

            def end_of(manager: Any, epoch: int, replica_id: int = -1) -> tuple[int, int, int]:
                answer = manager.offsets_for_leader_epoch(OffsetForLeaderEpochRequest(
                    replica_id=replica_id, topics=(OffsetForLeaderTopic(topic=TOPIC, partitions=(
                        OffsetForLeaderPartition(partition=0, leader_epoch=epoch),)),)))
                result = answer.topics[0].partitions[0]
                return result.error_code, result.leader_epoch, result.end_offset

            assert end_of(b1, 1) == (0, 1, 3)
            assert end_of(b0, 0) == (0, 0, 2)  # a replica of the inactive chunk answers too
            assert end_of(b0, 0, replica_id=2)[0] == Errors.NOT_LEADER_OR_FOLLOWER.code
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_an_isr_shrinking_below_min_insync_fails_the_waiting_acks_all(tmp_path: Path) -> None:
    async def scenario() -> None:
        from dataclasses import replace

        from tests.unit.broker_agent.replica_harness import FAST

        cluster = Cluster(tmp_path, count=2, config=replace(
            FAST, min_insync_replicas=2, replica_lag_time_max_ms=200))
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            assert (await produce(b0, [b"a"])).error_code == 0
            await cluster.stop_broker(1)
            waiting = await produce(b0, [b"b"], timeout_ms=5000)
            assert waiting.error_code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND.code
            refused = await produce(b0, [b"c"])
            assert refused.error_code == Errors.NOT_ENOUGH_REPLICAS.code
        finally:
            await cluster.close()

    run_scenario(scenario())


def _list_at(manager: Any, timestamp: int) -> tuple[int, int]:
    answer = manager.list_offsets(ListOffsetsRequest(topics=(ListOffsetsTopic(
        name=TOPIC, partitions=(ListOffsetsPartition(partition_index=0,
                                                     timestamp=timestamp),)),)))
    part = answer.topics[0].partitions[0]
    assert part.error_code == 0, part
    return part.offset, part.timestamp


def test_list_offsets_by_timestamp_looks_in_the_chunks_a_broker_holds(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0,))
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            await produce(b0, [f"a{i}".encode() for i in range(10)])  # timestamps 1000..1009
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            later = build_batch([(b"k", b"b%d" % i, 5_000 + i) for i in range(10)])
            answer = await b1.produce(_request(later))
            assert answer.topics[0].partitions[0].base_offset == 10
            # Broker 0 leads nothing now but is in the inactive chunk's ISR: it answers there.
            assert _list_at(b0, 1_005) == (5, 1_005)
            assert _list_at(b0, 5_003) == (-1, -1)
            await cluster.controller.move_chunk(0, (1,))  # into a chunk log of broker 1

            def moved() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and t.chunks_of(0)[0].isr == (1,)

            await eventually(moved, "the move of chunk 0 to broker 1")
            assert _list_at(b1, 0) == (0, 1_000)
            assert _list_at(b1, 1_005) == (5, 1_005)
            assert _list_at(b1, 5_003) == (13, 5_003)
            assert _list_at(b1, 9_999) == (-1, -1)
        finally:
            await cluster.close()

    run_scenario(scenario())
