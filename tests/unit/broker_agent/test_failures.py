"""Every data-plane failure is a Kafka error code and one log line: a partition
whose log fails answers UNKNOWN_SERVER_ERROR (KAFKA_STORAGE_ERROR for an I/O error) and the
others of the request are unaffected; a log at the end of its offsets answers
OFFSET_OUT_OF_RANGE."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from chunkraft.broker_agent.failures import error_of, failed
from chunkraft.broker_agent.replica_manager import ReplicaManager
from chunkraft.dataplane.record_batch import MAX_OFFSET
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.data_plane import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from tests.unit.broker_agent.replica_harness import TOPIC, Cluster, consume, produce


def with_leader(tmp_path: Path, body: Callable[[ReplicaManager], Awaitable[None]]) -> None:
    """Runs ``body`` with the leader of one single-broker cluster's partition, then closes it."""
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        try:
            await body(cluster.managers[0])
        finally:
            await cluster.close()

    asyncio.run(asyncio.wait_for(scenario(), timeout=30))


def test_error_of_maps_api_io_and_other_failures() -> None:
    assert error_of(ApiException(Errors.NOT_LEADER_OR_FOLLOWER)) is Errors.NOT_LEADER_OR_FOLLOWER
    assert error_of(OSError(5, "EIO")) is Errors.KAFKA_STORAGE_ERROR
    assert error_of(KeyError("x")) is Errors.UNKNOWN_SERVER_ERROR


def test_failed_logs_one_line_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        error, message = failed("produce to t-0", RuntimeError("boom"))
    assert (error, message) == (Errors.UNKNOWN_SERVER_ERROR, "RuntimeError: boom")
    (record,) = caplog.records
    assert record.exc_info is None and "\n" not in record.getMessage()
    assert "produce to t-0 failed" in record.getMessage()


@pytest.mark.parametrize(("raised", "expected"), [
    (RuntimeError("a bug"), Errors.UNKNOWN_SERVER_ERROR),
    (OSError(28, "No space left on device"), Errors.KAFKA_STORAGE_ERROR),
])
def test_a_failing_append_is_that_partitions_kafka_error(
        tmp_path: Path, raised: Exception, expected: Errors,
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(leader: ReplicaManager) -> None:
        log_ = leader.partitions[(TOPIC, 0)].log

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise raised

        log_.append_as_leader = broken  # type: ignore[method-assign]
        with caplog.at_level(logging.ERROR):
            answer = await produce(leader, [b"a"], acks=1)
        assert answer.error_code == expected.code, answer
        assert type(raised).__name__ in (answer.error_message or "")
        assert [r.exc_info for r in caplog.records if r.levelno >= logging.ERROR] == [None]

    with_leader(tmp_path, scenario)


def test_a_log_at_the_end_of_its_offsets_answers_offset_out_of_range(tmp_path: Path) -> None:
    async def scenario(leader: ReplicaManager) -> None:
        log_ = leader.partitions[(TOPIC, 0)].log
        log_.truncate_fully_and_start_at(MAX_OFFSET - 1)  # as a cut at 2^63 - 1 leaves it
        first = await produce(leader, [b"a"], acks=1)
        assert (first.error_code, first.base_offset) == (0, MAX_OFFSET - 1)
        refused = await produce(leader, [b"b"], acks=1)
        assert refused.error_code == Errors.OFFSET_OUT_OF_RANGE.code, refused
        assert log_.log_end_offset == MAX_OFFSET

    with_leader(tmp_path, scenario)


def test_a_failing_read_or_lookup_is_that_partitions_kafka_error(tmp_path: Path) -> None:
    async def scenario(leader: ReplicaManager) -> None:
        assert (await produce(leader, [b"a", b"b"])).error_code == 0
        log_ = leader.partitions[(TOPIC, 0)].log

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise ValueError("unreadable")

        log_.read = broken  # type: ignore[method-assign]
        log_.offset_for_timestamp = broken  # type: ignore[method-assign]
        fetched = await consume(leader, 0)
        assert fetched.error_code == Errors.UNKNOWN_SERVER_ERROR.code
        listed = leader.list_offsets(ListOffsetsRequest(topics=(ListOffsetsTopic(
            name=TOPIC, partitions=(ListOffsetsPartition(partition_index=0, timestamp=5),
                                    ListOffsetsPartition(partition_index=0,
                                                         timestamp=-1))),)))
        codes = [p.error_code for p in listed.topics[0].partitions]
        assert codes == [Errors.UNKNOWN_SERVER_ERROR.code, 0]

    with_leader(tmp_path, scenario)


def test_a_failing_chunk_roll_is_a_kafka_error(tmp_path: Path) -> None:
    async def scenario(leader: ReplicaManager) -> None:
        assert (await produce(leader, [b"a"])).error_code == 0

        async def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
            raise RuntimeError("controller client bug")

        leader.controller.call = broken  # type: ignore[method-assign]
        code, message = await leader.roll_chunk(TOPIC, 0, (0,), 0)
        assert code != 0 and message

    with_leader(tmp_path, scenario)
