"""The chunk roll on the active chunk's leader (DESIGN.md section 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chunkraft.error_codes import Errors
from tests.unit.broker_agent.replica_harness import TOPIC, Cluster, produce, run_scenario


def test_an_empty_active_chunk_is_not_cut(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            code, message = await cluster.managers[0].roll_chunk(TOPIC, 0, (1,), 1)
            assert code == Errors.INVALID_REQUEST.code and message and "empty" in message
            assert "/controller/v1/create-chunks" not in cluster.controller.calls
            assert (await produce(cluster.managers[0], [b"x"])).error_code == 0
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_only_the_leader_rolls(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0, 1))
        try:
            code, _ = await cluster.managers[1].roll_chunk(TOPIC, 0, (2, 0), 2)
            assert code == Errors.NOT_LEADER_OR_FOLLOWER.code
            code, _ = await cluster.managers[0].roll_chunk("nope", 0, (1,), 1)
            assert code == Errors.NOT_LEADER_OR_FOLLOWER.code
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_a_refused_cut_resumes_appends(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            await produce(b0, [b"a"])
            # Two replicas for a partition of replication factor 1: the controller refuses.
            code, _ = await b0.roll_chunk(TOPIC, 0, (1, 2), 1)
            assert code == Errors.INVALID_REPLICA_ASSIGNMENT.code
            assert b0.partitions[(TOPIC, 0)].accepts_appends()
            assert (await produce(b0, [b"b"])).base_offset == 1
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_the_roll_waits_for_the_isr_and_gives_up_in_time(tmp_path: Path) -> None:
    async def scenario() -> None:
        from dataclasses import replace

        from tests.unit.broker_agent.replica_harness import FAST

        cluster = Cluster(tmp_path, config=replace(FAST, chunk_roll_timeout_ms=200,
                                                   replica_lag_time_max_ms=60_000))
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            await produce(b0, [b"a"])
            await cluster.stop_broker(1)
            assert (await produce(b0, [b"b"], acks=1)).base_offset == 1
            code, _ = await b0.roll_chunk(TOPIC, 0, (0, 2), 0)
            assert code == Errors.REQUEST_TIMED_OUT.code
            assert b0.partitions[(TOPIC, 0)].accepts_appends()
            assert "/controller/v1/create-chunks" not in cluster.controller.calls
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_appends_stay_paused_until_the_cut_reaches_the_broker(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        b0 = cluster.managers[0]
        controller = cluster.controller
        try:
            await produce(b0, [b"a"])
            # The controller answers before the metadata reaches broker 0.
            held: list[Any] = []
            real_commit = controller.commit

            async def slow_commit(records: list[Any]) -> Any:
                held.append(records)
                return None

            controller.commit = slow_commit  # type: ignore[method-assign]
            assert await b0.roll_chunk(TOPIC, 0, (0,), 0) == (0, None)
            partition = b0.partitions[(TOPIC, 0)]
            assert not partition.accepts_appends()
            waiting = await produce(b0, [b"b"], timeout_ms=100)
            assert waiting.error_code == Errors.REQUEST_TIMED_OUT.code
            controller.commit = real_commit  # type: ignore[method-assign]
            # The fake's image did not move either: replay the cut now.
            from chunkraft.controller.operations.chunks import create_chunks
            from chunkraft.protocol.chunks import (
                CreateChunksPartition,
                CreateChunksRequest,
                CreateChunksTopic,
            )

            result = create_chunks(controller.image, CreateChunksRequest(topics=(
                CreateChunksTopic(name=TOPIC, partitions=(CreateChunksPartition(
                    partition_index=0, broker_ids=(0,), leader=0, prev_stop_offset=0,
                    prev_end_offset=0, start_offset=1, start_timestamp=10**12),)),)))
            await controller.commit(list(result.records))
            assert partition.accepts_appends() and partition.leader_epoch == 1
            answer = await produce(b0, [b"b"])
            assert (answer.error_code, answer.base_offset) == (0, 1)
        finally:
            await cluster.close()

    run_scenario(scenario())
