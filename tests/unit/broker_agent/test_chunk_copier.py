"""Chunk copies: source choice, what a log already holds, throttled copying with failover."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from chunkraft.broker_agent.chunk_copier import (
    CopyJob,
    first_missing_offset,
    pick_source_order,
    run_copy,
    trim_batches,
)
from chunkraft.broker_agent.peer_client import PeerUnavailable
from chunkraft.broker_agent.storage import LogConfig, UnifiedLog
from chunkraft.broker_agent.throttle import Throttle
from chunkraft.dataplane.record_batch import build_batch, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)

TID = uuid.UUID(int=7)


def _log(path: Path) -> UnifiedLog:
    return UnifiedLog.open(path, TID, LogConfig())


def _fill(log_: UnifiedLog, count: int, epoch: int = 0) -> None:
    for i in range(count):
        log_.append_as_leader(build_batch([(b"k", f"v{i}".encode(), 1000 + i)]), epoch)


def test_source_order_is_stable_and_covers_every_source() -> None:
    order = pick_source_order(2, "orders", 0, 10, (0, 1, 3))
    assert sorted(order) == [0, 1, 3]
    assert order == pick_source_order(2, "orders", 0, 10, (0, 1, 3))
    assert pick_source_order(2, "orders", 0, 10, ()) == []
    firsts = {pick_source_order(b, "orders", 0, 10, (0, 1, 3))[0] for b in range(30)}
    assert len(firsts) > 1  # different brokers spread over the sources


def test_first_missing_offset_walks_the_gaps(tmp_path: Path) -> None:
    log_ = _log(tmp_path / "a")
    _fill(log_, 10)
    assert first_missing_offset(log_, 0, 9) == 10
    assert first_missing_offset(log_, 0, 19) == 10
    log_.start_at(20)
    log_.append_as_leader(build_batch([(b"k", b"x", 5)]), 1)
    assert log_.log_end_offset == 21
    assert first_missing_offset(log_, 12, 20) == 12
    assert first_missing_offset(log_, 20, 20) == 21
    assert first_missing_offset(log_, 5, 25) == 10
    log_.close()


def test_trim_keeps_whole_batches_of_the_range() -> None:
    data = b"".join(build_batch([(b"k", b"v", 1), (b"k", b"w", 2)], base_offset=b)
                    for b in (0, 2, 4))
    kept = [h.base_offset for h, _ in iter_batches(trim_batches(data, 3, 4))]
    assert kept == [2, 4]


class _Source:
    """A peer serving copier fetches from a real log; ``fail`` answers an error first."""

    def __init__(self, log_: UnifiedLog, fail: int = 0) -> None:
        self.log = log_
        self.fail = fail
        self.requests: list[FetchRequest] = []

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        self.requests.append(request)
        want = request.topics[0].partitions[0]
        if broker_id == 9:
            raise PeerUnavailable("broker 9 is down")
        if self.fail:
            self.fail -= 1
            answer = FetchPartitionResponse(partition=0,
                                            error_code=Errors.NOT_LEADER_OR_FOLLOWER.code)
        else:
            read = self.log.read(want.fetch_offset, 40, self.log.log_end_offset)
            answer = FetchPartitionResponse(partition=0,
                                            records=bytes(read.records))
        return FetchResponse(responses=(FetchTopicResponse(topic="orders",
                                                           partitions=(answer,)),))

    async def offsets_for_leader_epoch(self, broker_id: int, request: OffsetForLeaderEpochRequest
                                       ) -> OffsetForLeaderEpochResponse:
        raise AssertionError("not used")


def test_copy_resumes_fails_over_and_stops_at_the_end(tmp_path: Path) -> None:
    source_log = _log(tmp_path / "source")
    _fill(source_log, 12, epoch=3)
    target = _log(tmp_path / "target")
    source = _Source(source_log, fail=1)
    job = CopyJob(node_id=2, topic="orders", partition=0, first=2, last=9, sources=(9, 0),
                  chunk_start_for=lambda offset: 0, target=lambda: target,
                  broker_epoch=lambda: 5, fetch_max_bytes=40, backoff_s=0.001)
    asyncio.run(asyncio.wait_for(run_copy(job, source, Throttle(-1)), 10))
    assert (target.log_start_offset, target.log_end_offset) == (2, 10)
    assert target.end_offset_for_epoch(3) == (3, 10)  # the copy carries the leader epochs
    assert all(r.topics[0].partitions[0].chunk_start_offset == 0 for r in source.requests)
    assert all(r.replica_id == 2 for r in source.requests)
    # Nothing left to copy: no request at all.
    before = len(source.requests)
    asyncio.run(asyncio.wait_for(run_copy(job, source, Throttle(-1)), 10))
    assert len(source.requests) == before
    source_log.close()
    target.close()
