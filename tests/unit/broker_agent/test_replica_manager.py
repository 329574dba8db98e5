"""The KIP-1114 test plan at the log level: brokers 0, 1, 2 in one process, real logs, the real
controller operations, MetadataDeltas as the metadata stream delivers them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from chunkraft.broker_agent.storage import LogConfig
from chunkraft.controller.image import MetadataDelta
from chunkraft.controller.operations.create_partitions import create_partitions
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from chunkraft.protocol.topics import CreatePartitionsRequest, CreatePartitionsTopic
from tests.unit.broker_agent.replica_harness import (
    TOPIC,
    Cluster,
    consume,
    eventually,
    offsets_of,
    produce,
    run_scenario,
    values_of,
)

FIRST = [f"a{i}".encode() for i in range(10)]
SECOND = [f"b{i}".encode() for i in range(10)]



def test_chunk_lifecycle_of_the_kip_test_plan(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0, b1, b2 = (cluster.managers[b] for b in range(3))
        try:
            first = await produce(b0, FIRST)
            assert (first.error_code, first.base_offset) == (0, 0)
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            image = cluster.controller.image
            topic = image.topics.get_by_name(TOPIC)
            assert topic is not None
            chunk = topic.chunks_of(0)[0]
            assert (chunk.start_offset, chunk.stop_offset, chunk.end_offset) == (0, 9, 9)
            assert topic.partition(0) is not None and topic.partition(0).start_offset == 10  # type: ignore[union-attr]

            refused = await produce(b0, SECOND, timeout_ms=200)
            assert refused.error_code == Errors.NOT_LEADER_OR_FOLLOWER.code
            second = await produce(b1, SECOND)
            assert (second.error_code, second.base_offset) == (0, 10)

            # A consumer reads the first chunk on broker 0, then the active chunk on broker 1.
            old = await consume(b0, 0)
            assert old.error_code == 0 and values_of(old) == FIRST
            assert old.chunk_stop_offset == 9
            new = await consume(b1, 10)
            assert new.error_code == 0 and values_of(new) == SECOND
            assert (await consume(b1, 0)).error_code == Errors.NOT_LEADER_OR_FOLLOWER.code
            assert (await consume(b0, 10)).error_code == Errors.NOT_LEADER_OR_FOLLOWER.code

            log0, log1 = b0.logs.get(TOPIC, 0), b1.logs.get(TOPIC, 0)
            assert log0 is not None and log1 is not None
            assert (log0.log_start_offset, log0.log_end_offset) == (0, 10)
            assert (log1.log_start_offset, log1.log_end_offset) == (10, 20)
            assert b2.logs.get(TOPIC, 0) is None

            # Move the first chunk to broker 2: it copies, reports IN_SYNC, broker 0 lets go.
            await cluster.controller.move_chunk(0, (2,))

            def moved() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and t.chunks_of(0)[0].replicas == (2,)

            await eventually(moved, "the move of chunk 0 to broker 2")
            assert b0.logs.get(TOPIC, 0) is None
            assert not (tmp_path / "broker-0" / f"{TOPIC}-0").exists()
            log2 = b2.logs.get(TOPIC, 0)
            assert log2 is not None
            assert (log2.log_start_offset, log2.log_end_offset) == (0, 10)
            moved_chunk = await consume(b2, 0)
            assert values_of(moved_chunk) == FIRST and moved_chunk.chunk_stop_offset == 9
            assert values_of(await consume(b1, 10)) == SECOND
            assert b0.status_counts() == (0, 0, 0)
            assert b1.status_counts() == (1, 0, 0)
            assert b2.status_counts() == (0, 0, 1)
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_transactional_cut_copies_the_overlap_before_appends(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            assert (await produce(b0, FIRST)).base_offset == 0
            txn = await produce(b0, SECOND, producer_id=7, producer_epoch=0, base_sequence=0,
                                transactional=True)
            assert (txn.error_code, txn.base_offset) == (0, 10)
            log0 = b0.logs.get(TOPIC, 0)
            assert log0 is not None
            assert (log0.last_stable_offset, log0.high_watermark) == (10, 20)

            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            topic = cluster.controller.image.topics.get_by_name(TOPIC)
            assert topic is not None
            chunk = topic.chunks_of(0)[0]
            assert (chunk.start_offset, chunk.stop_offset, chunk.end_offset) == (0, 9, 19)

            # Broker 1 copies 10..19 from broker 0 before it takes appends at 20.
            after = await produce(b1, [b"c0"])
            assert (after.error_code, after.base_offset) == (0, 20)
            log1 = b1.logs.get(TOPIC, 0)
            assert log1 is not None
            assert log1.log_start_offset == 10
            assert log1.last_stable_offset == 10  # the copied transaction is still open

            markers = await b1.write_txn_markers(WriteTxnMarkersRequest(markers=(
                WritableTxnMarker(producer_id=7, producer_epoch=0, transaction_result=True,
                                  topics=(WritableTxnMarkerTopic(name=TOPIC,
                                                                 partition_indexes=(0,)),)),)))
            assert markers.markers[0].topics[0].partitions[0].error_code == 0
            assert log1.last_stable_offset == log1.log_end_offset == 22

            old = await consume(b0, 0, isolation_level=1)
            assert values_of(old) == FIRST and old.chunk_stop_offset == 9
            new = await consume(b1, 10, isolation_level=1)
            assert values_of(new) == [*SECOND, b"c0"]
            assert offsets_of(new)[:10] == list(range(10, 20))
            assert not new.aborted_transactions
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_same_delta_again_and_restart_keep_the_state(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0 = cluster.managers[0]
        try:
            await produce(b0, FIRST)
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            await produce(cluster.managers[1], SECOND)
            await cluster.controller.move_chunk(0, (2,))

            def moved() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and t.chunks_of(0)[0].isr == (2,)

            await eventually(moved, "the move to broker 2")
            image = cluster.controller.image
            # Re-applying a delta that rebuilds everything changes nothing on any broker.
            for manager in cluster.managers.values():
                again = MetadataDelta(type(image).EMPTY)
                again.replay_all(image.to_records())
                await manager.apply_delta(again, image)
            for broker_id in (1, 2):
                await cluster.stop_broker(broker_id)
                await cluster.start_broker(broker_id)
            b1, b2 = cluster.managers[1], cluster.managers[2]
            log1, log2 = b1.logs.get(TOPIC, 0), b2.logs.get(TOPIC, 0)
            assert log1 is not None and log2 is not None
            assert (log1.log_start_offset, log1.log_end_offset) == (10, 20)
            assert (log2.log_start_offset, log2.log_end_offset) == (0, 10)
            assert values_of(await consume(b2, 0)) == FIRST
            assert values_of(await consume(b1, 10)) == SECOND
            assert b2.partitions[(TOPIC, 0)].copies == {}
            assert "/controller/v1/chunk-replica-state" in cluster.controller.calls
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_restart_removes_a_partition_moved_away_while_down(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        try:
            await produce(cluster.managers[0], FIRST)
            assert await cluster.managers[0].roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            # Broker 2 holds a stale copy of the partition while the image gives it nothing.
            await cluster.stop_broker(2)
            stale = cluster.log_manager(2)
            log_ = stale.get_or_create(TOPIC, 0, cluster.controller.image.topics
                                       .get_by_name(TOPIC).topic_id)  # type: ignore[union-attr]
            assert log_.log_end_offset == 0
            stale.close_all()
            assert (tmp_path / "broker-2" / f"{TOPIC}-0").exists()
            await cluster.start_broker(2)
            assert cluster.managers[2].logs.get(TOPIC, 0) is None
            assert not (tmp_path / "broker-2" / f"{TOPIC}-0").exists()
            # Brokers 0 and 1 keep theirs.
            assert cluster.managers[0].logs.get(TOPIC, 0) is not None
            assert cluster.managers[1].logs.get(TOPIC, 0) is not None
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_acks_all_waits_for_every_isr_member(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0, 1, 2))
        b0 = cluster.managers[0]
        try:
            answer = await produce(b0, FIRST)
            assert (answer.error_code, answer.base_offset) == (0, 0)
            for broker_id in (1, 2):
                follower = cluster.managers[broker_id].logs.get(TOPIC, 0)
                assert follower is not None and follower.log_end_offset >= 10
            log0 = b0.logs.get(TOPIC, 0)
            assert log0 is not None and log0.high_watermark == 10

            # Broker 2 stops: acks=all times out until the ISR shrinks without it.
            await cluster.stop_broker(2)
            slow = await produce(b0, SECOND, timeout_ms=300)
            assert slow.error_code == Errors.REQUEST_TIMED_OUT.code
            assert log0.high_watermark == 10  # not on broker 2: not committed

            def shrunk() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                p = t.partition(0) if t is not None else None
                return p is not None and p.isr == (0, 1)

            await eventually(shrunk, "the ISR to shrink to (0, 1)", timeout_s=10)
            await eventually(lambda: log0.high_watermark == 20, "HW 20 with the smaller ISR")
            third = await produce(b0, [b"x"])
            assert (third.error_code, third.base_offset) == (0, 20)
            log1 = cluster.managers[1].logs.get(TOPIC, 0)
            assert log1 is not None and log1.log_end_offset == 21
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_an_acks_all_wait_survives_the_epoch_bump_of_an_expansion(tmp_path: Path) -> None:
    """KIP-253's createPartitions bumps the leader epoch of every existing partition while
    its leader stays: a produce waiting for the ISR across the bump is answered 0, not
    NOT_LEADER_OR_FOLLOWER (a data-plane test once failed so under load)."""
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0, 1, 2))
        b0 = cluster.managers[0]
        try:
            await cluster.stop_broker(2)  # the HW waits for broker 2 until the ISR shrinks
            waiting = asyncio.create_task(produce(b0, FIRST, timeout_ms=10_000))
            await asyncio.sleep(0.1)
            assert not waiting.done()
            partition = b0.partitions[(TOPIC, 0)]
            epoch, leadership = partition.leader_epoch, partition.leadership
            result = create_partitions(cluster.controller.image, CreatePartitionsRequest(
                topics=(CreatePartitionsTopic(name=TOPIC, count=2),)))
            assert result.response.results[0].error_code == 0, result.response
            await cluster.controller.commit(list(result.records))
            assert partition.leader_epoch > epoch and partition.is_leader
            assert partition.leadership == leadership
            answer = await waiting
            assert (answer.error_code, answer.base_offset) == (0, 0)
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_new_leader_followers_truncate_what_the_leader_lacks(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0, 1))
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            assert (await produce(b0, FIRST)).base_offset == 0
            # Broker 1 stops replicating; broker 0 appends 10 more with acks=1 (uncommitted).
            fetcher = b1.partitions[(TOPIC, 0)].fetcher
            assert fetcher is not None
            fetcher.cancel()
            await asyncio.sleep(0)
            assert (await produce(b0, SECOND, acks=1)).base_offset == 10
            log0, log1 = b0.logs.get(TOPIC, 0), b1.logs.get(TOPIC, 0)
            assert log0 is not None and log1 is not None
            assert log0.log_end_offset == 20 and log1.log_end_offset == 10
            # Broker 1 becomes leader (epoch 1); broker 0 follows and must cut 10..19.
            from chunkraft.records import PartitionChangeRecord

            await cluster.controller.commit([PartitionChangeRecord(
                partition_id=0, topic_id=b0.partitions[(TOPIC, 0)].topic_id, leader=1,
                isr=(0, 1))])
            third = await produce(b1, [b"n0", b"n1"])
            assert (third.error_code, third.base_offset) == (0, 10)
            await eventually(lambda: log0.log_end_offset == 12, "broker 0 to follow broker 1")
            follower_view = await consume(b1, 0)
            assert values_of(follower_view) == [*FIRST, b"n0", b"n1"]
            assert log0.end_offset_for_epoch(0) == (0, 10)
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_retention_drops_a_chunk_whose_data_is_gone(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, log_config=LogConfig(retention_ms=1))
        await cluster.start(replicas=(0,))
        b0 = cluster.managers[0]
        try:
            await produce(b0, FIRST)
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            await asyncio.sleep(0.01)
            b0.time_ms = lambda: 10**13
            b0.run_retention()

            def dropped() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and not t.chunks_of(0)

            await eventually(dropped, "the chunk to leave the image")
            assert b0.logs.get(TOPIC, 0) is None
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_cut_back_to_a_broker_holding_an_older_chunk_leaves_a_gap(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            await produce(b0, FIRST)
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            await produce(b1, SECOND)
            assert await b1.roll_chunk(TOPIC, 0, (0,), 0) == (0, None)
            # The gap survives a restart: the next append still lands at 20.
            await cluster.stop_broker(0)
            b0 = await cluster.start_broker(0)
            third = await produce(b0, [b"c0", b"c1"])
            assert (third.error_code, third.base_offset) == (0, 20)
            log0 = b0.logs.get(TOPIC, 0)
            assert log0 is not None
            assert [(s.base_offset, s.next_offset) for s in log0.segments if s.size_in_bytes] \
                == [(0, 10), (20, 22)]
            assert values_of(await consume(b0, 0)) == FIRST
            assert values_of(await consume(b1, 10)) == SECOND
            assert values_of(await consume(b0, 20)) == [b"c0", b"c1"]
            assert b0.status_counts() == (1, 0, 1)
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_overlap_copy_resumes_after_a_restart_of_the_new_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0 = cluster.managers[0]
        try:
            await produce(b0, FIRST)
            await produce(b0, SECOND, producer_id=7, producer_epoch=0, base_sequence=0,
                          transactional=True)
            cluster.peers.down.add(0)  # broker 1 cannot reach the old chunk yet
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            waiting = await produce(cluster.managers[1], [b"c0"], timeout_ms=200)
            assert waiting.error_code == Errors.REQUEST_TIMED_OUT.code
            await cluster.stop_broker(1)
            b1 = await cluster.start_broker(1)  # the first delta has no chunk create
            assert b1.partitions[(TOPIC, 0)].overlap_pending
            cluster.peers.down.discard(0)
            after = await produce(b1, [b"c0"])
            assert (after.error_code, after.base_offset) == (0, 20)
            log1 = b1.logs.get(TOPIC, 0)
            assert log1 is not None and (log1.log_start_offset, log1.log_end_offset) == (10, 21)
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_transactional_cut_to_a_new_leader_with_an_old_follower(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            await produce(b0, FIRST)
            await produce(b0, SECOND, producer_id=7, producer_epoch=0, base_sequence=0,
                          transactional=True)
            # Broker 2 leads the new active chunk and copies the overlap; broker 1, a replica
            # of the old chunk, follows it and keeps the overlap it already holds.
            assert await b0.roll_chunk(TOPIC, 0, (2, 1), 2) == (0, None)
            b1, b2 = cluster.managers[1], cluster.managers[2]
            after = await produce(b2, [b"c0"])  # acks=all: on broker 1 as well
            assert (after.error_code, after.base_offset) == (0, 20)
            log1, log2 = b1.logs.get(TOPIC, 0), b2.logs.get(TOPIC, 0)
            assert log1 is not None and log2 is not None
            assert (log2.log_start_offset, log2.log_end_offset) == (10, 21)
            assert (log1.log_start_offset, log1.log_end_offset) == (0, 21)
            assert log2.end_offset_for_epoch(0) == (0, 20)  # the overlap kept its epoch
            assert log1.latest_epoch == log2.latest_epoch == 1
            assert b1.status_counts() == (0, 1, 1)
            assert b2.status_counts() == (1, 0, 0)
            committed = await consume(b0, 0, isolation_level=1)
            assert values_of(committed) == FIRST
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_chunk_moved_below_the_active_chunk_gets_a_log_of_its_own(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, log_config=LogConfig(retention_ms=1))
        await cluster.start(replicas=(0,))
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            await produce(b0, FIRST)
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            await produce(b1, SECOND)
            # Broker 1 already holds 10..19: chunk 0..9 cannot be appended to its log.
            await cluster.controller.move_chunk(0, (1,))

            def moved() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and t.chunks_of(0)[0].isr == (1,)

            await eventually(moved, "the move of chunk 0 to broker 1")
            assert b0.logs.get(TOPIC, 0) is None
            side = b1.logs.get(f"{TOPIC}@0", 0)
            assert side is not None and (side.log_start_offset, side.log_end_offset) == (0, 10)
            old = await consume(b1, 0)
            assert values_of(old) == FIRST and old.chunk_stop_offset == 9
            assert values_of(await consume(b1, 10)) == SECOND
            assert (await produce(b1, [b"c"])).base_offset == 20
            # A restart finds the chunk log again; nothing is copied twice.
            await cluster.stop_broker(1)
            b1 = await cluster.start_broker(1)
            assert values_of(await consume(b1, 0)) == FIRST
            assert b1.partitions[(TOPIC, 0)].copies == {}
            # Retention empties the chunk log: broker 1 drops the chunk, keeps the partition.
            b1.time_ms = lambda: 10**13
            b1.run_retention()

            def dropped() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and not t.chunks_of(0)

            await eventually(dropped, "chunk 0 to leave the image")
            assert b1.logs.get(f"{TOPIC}@0", 0) is None
            assert b1.logs.get(TOPIC, 0) is not None
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_lagging_replica_of_a_cut_chunk_completes_it_and_reports_in_sync(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        from dataclasses import replace

        from tests.unit.broker_agent.replica_harness import FAST

        cluster = Cluster(tmp_path, config=replace(FAST, replica_lag_time_max_ms=200))
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            await produce(b0, FIRST)
            await cluster.stop_broker(1)
            assert (await produce(b0, SECOND, acks=1)).base_offset == 10

            def shrunk() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                p = t.partition(0) if t is not None else None
                return p is not None and p.isr == (0,)

            await eventually(shrunk, "broker 1 to leave the ISR")
            assert await b0.roll_chunk(TOPIC, 0, (2, 1), 2) == (0, None)
            b1 = await cluster.start_broker(1)  # holds 0..9 of the chunk 0..19 only

            def in_sync() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and t.chunks_of(0)[0].isr == (0, 1)

            await eventually(in_sync, "broker 1 to complete chunk 0 and join its ISR")
            assert values_of(await consume(b1, 0)) == FIRST + SECOND
            after = await produce(cluster.managers[2], [b"c"])
            assert (after.error_code, after.base_offset) == (0, 20)
            await eventually(lambda: b1.logs.get(TOPIC, 0).log_end_offset == 21,  # type: ignore[union-attr]
                             "broker 1 to follow the new active chunk")
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_chunk_retention_removed_is_not_copied_again_after_a_restart(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, log_config=LogConfig(retention_ms=1))
        await cluster.start(replicas=(0, 2))
        b0 = cluster.managers[0]
        try:
            await produce(b0, FIRST)
            assert await b0.roll_chunk(TOPIC, 0, (1, 2), 1) == (0, None)  # 0 and 2 keep chunk 0
            log0 = b0.logs.get(TOPIC, 0)
            assert log0 is not None
            log0.apply_retention(10**13)  # retention ran, the drop was not reported yet
            assert log0.log_start_offset == 10
            await cluster.stop_broker(0)
            b0 = await cluster.start_broker(0)
            assert b0.partitions[(TOPIC, 0)].copies == {}
            b0.run_retention()

            def dropped() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and t.chunks_of(0)[0].replicas == (2,)

            await eventually(dropped, "broker 0 to drop its replica of chunk 0")
            assert b0.logs.get(TOPIC, 0) is None
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_every_delta_applied_twice_gives_the_same_logs(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        cluster.controller.apply_twice = True
        await cluster.start(replicas=(0,))
        b0, b1, b2 = (cluster.managers[b] for b in range(3))
        try:
            await produce(b0, FIRST)
            await produce(b0, SECOND, producer_id=7, producer_epoch=0, base_sequence=0,
                          transactional=True)
            assert await b0.roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
            assert (await produce(b1, [b"c0"])).base_offset == 20
            await cluster.controller.move_chunk(0, (2,))

            def moved() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and t.chunks_of(0)[0].replicas == (2,)

            await eventually(moved, "the move to broker 2")
            assert b0.logs.logs() == {}
            log1, log2 = b1.logs.get(TOPIC, 0), b2.logs.get(TOPIC, 0)
            assert log1 is not None and log2 is not None
            assert (log1.log_start_offset, log1.log_end_offset) == (10, 21)
            assert (log2.log_start_offset, log2.log_end_offset) == (0, 20)
            assert values_of(await consume(b2, 0)) == FIRST
            assert [b.status_counts() for b in (b0, b1, b2)] == [(0, 0, 0), (1, 0, 0), (0, 0, 1)]
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_restart_prunes_a_chunk_moved_away_while_down_and_keeps_the_rest(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        from chunkraft.records import ChunkChangeRecord

        cluster = Cluster(tmp_path, count=2)
        await cluster.start(replicas=(0,))
        b0 = cluster.managers[0]
        try:
            await produce(b0, FIRST)
            assert await b0.roll_chunk(TOPIC, 0, (0,), 0) == (0, None)  # broker 0 keeps both
            await produce(b0, SECOND)
            await cluster.stop_broker(0)
            # While broker 0 is down, chunk 0 leaves it (here: straight to broker 1's care).
            topic = cluster.controller.image.topics.get_by_name(TOPIC)
            assert topic is not None
            await cluster.controller.commit([ChunkChangeRecord(
                partition_id=0, topic_id=topic.topic_id, start_offset=0, replicas=(1,),
                isr=(1,), epoch=1)])
            b0 = await cluster.start_broker(0)
            log0 = b0.logs.get(TOPIC, 0)
            assert log0 is not None
            assert (log0.log_start_offset, log0.log_end_offset) == (10, 20)
            assert values_of(await consume(b0, 10)) == SECOND
            assert (await consume(b0, 0)).error_code == Errors.NOT_LEADER_OR_FOLLOWER.code
        finally:
            await cluster.close()

    run_scenario(scenario())
