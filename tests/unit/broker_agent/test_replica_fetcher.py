"""The follower loop: truncation by OffsetsForLeaderEpoch and diverging epochs, then fetching."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from chunkraft.broker_agent.replica_fetcher import FollowerJob, divergence_target, run_follower
from chunkraft.broker_agent.storage import LogConfig, UnifiedLog
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.protocol.data_plane import (
    EpochEndOffset,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopicResult,
)

TID = uuid.UUID(int=8)


def _log(path: Path) -> UnifiedLog:
    return UnifiedLog.open(path, TID, LogConfig())


def _fill(log_: UnifiedLog, values: list[bytes], epoch: int) -> None:
    for value in values:
        log_.append_as_leader(build_batch([(b"k", value, 1)]), epoch)


class _Leader:
    """A leader's answers from a real log; optionally one diverging epoch first."""

    def __init__(self, log_: UnifiedLog, diverging: EpochEndOffset | None = None) -> None:
        self.log = log_
        self.diverging = diverging
        self.asked_epochs: list[int] = []

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        want = request.topics[0].partitions[0]
        if self.diverging is not None:
            answer = FetchPartitionResponse(partition=0, diverging_epoch=self.diverging)
            self.diverging = None
        else:
            read = self.log.read(want.fetch_offset, 1 << 20, self.log.log_end_offset)
            answer = FetchPartitionResponse(
                partition=0, high_watermark=self.log.log_end_offset,
                records=bytes(read.records))
            if not read.records:
                await asyncio.sleep(0.01)
        return FetchResponse(responses=(FetchTopicResponse(topic="t", partitions=(answer,)),))

    async def offsets_for_leader_epoch(self, broker_id: int, request: OffsetForLeaderEpochRequest
                                       ) -> OffsetForLeaderEpochResponse:
        epoch = request.topics[0].partitions[0].leader_epoch
        self.asked_epochs.append(epoch)
        found, end = self.log.end_offset_for_epoch(epoch)
        return OffsetForLeaderEpochResponse(topics=(OffsetForLeaderTopicResult(
            topic="t", partitions=(OffsetForLeaderPartitionResult(
                partition=0, leader_epoch=found, end_offset=end),)),))


def _job(target: UnifiedLog, epoch: int) -> FollowerJob:
    return FollowerJob(node_id=1, topic="t", partition=0, leader=0, leader_epoch=epoch,
                       start_offset=0, target=lambda: target, broker_epoch=lambda: 1,
                       on_progress=lambda: None, backoff_s=0.001)


async def _follow_until(job: FollowerJob, leader: _Leader, done: object) -> None:
    task = asyncio.ensure_future(run_follower(job, leader))
    try:
        for _ in range(500):
            if done():  # type: ignore[operator]
                return
            await asyncio.sleep(0.005)
        raise AssertionError("the follower did not get there")
    finally:
        task.cancel()


def test_divergence_target_is_the_smaller_end(tmp_path: Path) -> None:
    log_ = _log(tmp_path / "f")
    _fill(log_, [b"a", b"b", b"c"], 0)
    _fill(log_, [b"d", b"e"], 2)
    assert divergence_target(log_, 0, 4) == 3   # our epoch 0 ended at 3
    assert divergence_target(log_, 2, 4) == 4
    assert divergence_target(log_, 1, 9) == 5   # an epoch we never had: only the LEO bounds
    log_.close()


def test_a_new_follower_truncates_what_the_leader_lacks_then_catches_up(tmp_path: Path) -> None:
    leader_log = _log(tmp_path / "leader")
    _fill(leader_log, [b"a", b"b"], 0)
    _fill(leader_log, [b"x", b"y"], 2)
    follower_log = _log(tmp_path / "follower")
    _fill(follower_log, [b"a", b"b", b"stale1", b"stale2", b"stale3"], 0)
    leader = _Leader(leader_log)
    job = _job(follower_log, 2)
    asyncio.run(_follow_until(job, leader, lambda: follower_log.log_end_offset == 4
                              and follower_log.latest_epoch == 2))
    assert leader.asked_epochs == [0]
    assert follower_log.end_offset_for_epoch(0) == (0, 2)
    assert follower_log.high_watermark == 4
    leader_log.close()
    follower_log.close()


def test_a_diverging_epoch_in_a_fetch_answer_truncates(tmp_path: Path) -> None:
    leader_log = _log(tmp_path / "leader")
    _fill(leader_log, [b"a", b"b", b"c"], 0)
    follower_log = _log(tmp_path / "follower")
    _fill(follower_log, [b"a", b"b"], 0)
    _fill(follower_log, [b"zombie"], 1)
    # The follower asked about epoch 1, which the leader never had: it says epoch 0 ended at 3,
    # but this follower's epoch 0 ends at 2, so it truncates to 2 and fetches from there.
    leader = _Leader(leader_log, diverging=EpochEndOffset(epoch=0, end_offset=3))
    job = _job(follower_log, 3)
    job.start_offset = 0
    asyncio.run(_follow_until(job, leader, lambda: follower_log.log_end_offset == 3
                              and follower_log.latest_epoch == 0))
    leader_log.close()
    follower_log.close()


class _RetainedLeader(_Leader):
    """A leader whose retention passed the follower's end: OFFSET_OUT_OF_RANGE below 20."""

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        want = request.topics[0].partitions[0]
        if want.fetch_offset < 20:
            from chunkraft.error_codes import Errors

            answer = FetchPartitionResponse(partition=0, error_code=Errors.OFFSET_OUT_OF_RANGE.code,
                                            log_start_offset=20, log_end_offset=22)
            return FetchResponse(responses=(FetchTopicResponse(topic="t", partitions=(answer,)),))
        return await super().fetch(broker_id, request)


def test_a_follower_behind_the_leaders_log_start_continues_there_keeping_its_data(
        tmp_path: Path) -> None:
    leader_log = _log(tmp_path / "leader")
    leader_log.truncate_fully_and_start_at(20)
    leader_log.append_as_follower(build_batch([(b"k", b"x", 1), (b"k", b"y", 1)],
                                              base_offset=20, partition_leader_epoch=2))
    follower_log = _log(tmp_path / "follower")
    _fill(follower_log, [b"a", b"b"], 0)
    job = _job(follower_log, 2)
    leader = _RetainedLeader(leader_log)
    asyncio.run(_follow_until(job, leader, lambda: follower_log.log_end_offset == 22))
    assert follower_log.log_start_offset == 0  # offsets 0..1 stay (another chunk's data)
    leader_log.close()
    follower_log.close()


class _TwoPartitionLeader:
    """A leader of partitions 0 and 1 of topic t, from real logs; counts its requests."""

    def __init__(self, logs: dict[int, UnifiedLog]) -> None:
        self.logs = logs
        self.fetches: list[FetchRequest] = []
        self.epoch_requests: list[OffsetForLeaderEpochRequest] = []

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        self.fetches.append(request)
        answers = []
        for want in request.topics[0].partitions:
            log_ = self.logs[want.partition]
            read = log_.read(want.fetch_offset, 1 << 20, log_.log_end_offset)
            answers.append(FetchPartitionResponse(
                partition=want.partition, high_watermark=log_.log_end_offset,
                records=bytes(read.records)))
        await asyncio.sleep(0.01)
        return FetchResponse(responses=(FetchTopicResponse(topic="t", partitions=tuple(answers)),))

    async def offsets_for_leader_epoch(self, broker_id: int, request: OffsetForLeaderEpochRequest
                                       ) -> OffsetForLeaderEpochResponse:
        self.epoch_requests.append(request)
        results = []
        for want in request.topics[0].partitions:
            epoch, end = self.logs[want.partition].end_offset_for_epoch(want.leader_epoch)
            results.append(OffsetForLeaderPartitionResult(partition=want.partition,
                                                          leader_epoch=epoch, end_offset=end))
        return OffsetForLeaderEpochResponse(topics=(OffsetForLeaderTopicResult(
            topic="t", partitions=tuple(results)),))


def test_one_fetcher_per_leader_carries_every_partition(tmp_path: Path) -> None:
    from chunkraft.broker_agent.replica_fetcher import LeaderFetcher

    leader_logs = {i: _log(tmp_path / f"leader-{i}") for i in (0, 1)}
    _fill(leader_logs[0], [b"a"], 0)
    _fill(leader_logs[0], [b"b"], 1)
    _fill(leader_logs[1], [b"c"], 1)
    followers = {i: _log(tmp_path / f"follower-{i}") for i in (0, 1)}
    _fill(followers[0], [b"a", b"stale"], 0)  # diverged in epoch 0: one offset goes
    leader = _TwoPartitionLeader(leader_logs)

    async def scenario() -> None:
        fetcher = LeaderFetcher(0, 1, leader, lambda: 1, fetch_wait_ms=10, backoff_s=0.001)
        registrations = {}
        for index in (0, 1):
            job = _job(followers[index], 1)
            job.partition = index
            registrations[index] = fetcher.add(job)
        for _ in range(500):
            if followers[0].log_end_offset == 2 and followers[1].log_end_offset == 1 \
                    and followers[0].latest_epoch == 1:
                break
            await asyncio.sleep(0.005)
        assert followers[0].end_offset_for_epoch(0) == (0, 1)
        assert len(leader.epoch_requests) == 1  # only partition 0 had epochs to check
        assert {len(r.topics[0].partitions) for r in leader.fetches} == {2}
        registrations[1].cancel()
        assert registrations[1].done() and not registrations[0].done()
        asked = len(leader.fetches)
        for _ in range(100):
            if len(leader.fetches) > asked + 1:
                break
            await asyncio.sleep(0.005)
        assert [p.partition for p in leader.fetches[-1].topics[0].partitions] == [0]
        fetcher.stop()

    asyncio.run(asyncio.wait_for(scenario(), 10))
    for log_ in (*leader_logs.values(), *followers.values()):
        log_.close()
