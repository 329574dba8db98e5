"""Followers of active chunks: truncate to the leader's log, then fetch from it forever.

The ReplicaManager runs one :class:`LeaderFetcher` per leader broker, carrying every partition
it follows from that leader; :func:`run_follower` is the same loop for a single partition.

On a new leader epoch the follower first asks the leader for the end offset of its own latest
epoch (OffsetsForLeaderEpoch, KIP-101 / KIP-279) and truncates what the leader does not have;
a ``diverging_epoch`` in a fetch answer (KIP-320) does the same later. Then it long-polls the
leader with ``replica_id`` = its broker id, appends what it gets as a follower and takes the
leader's high watermark (capped at its own log end, never lowered).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkraft.broker_agent.peer_client import PeerClientLike, PeerUnavailable
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import UnifiedLog

__all__ = [
    "FollowerJob",
    "FollowerRegistration",
    "LeaderFetcher",
    "divergence_target",
    "run_follower",
]

log = logging.getLogger(__name__)


@dataclass
class FollowerJob:
    """One follower loop: ``topic``-``partition`` from ``leader`` in ``leader_epoch``.

    ``target()`` is the log (None once the replica is gone), ``start_offset`` the active chunk's
    first offset (a follower never fetches below it: older offsets belong to other chunks).
    ``on_progress`` is called after each append or high-watermark change.
    """

    node_id: int
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    start_offset: int
    target: Callable[[], UnifiedLog | None]
    broker_epoch: Callable[[], int]
    on_progress: Callable[[], None]
    fetch_wait_ms: int = 500
    fetch_max_bytes: int = 1024 * 1024
    backoff_s: float = 1.0


def divergence_target(log_: UnifiedLog, leader_epoch: int, leader_end_offset: int) -> int:
    """Where to truncate when the leader says its ``leader_epoch`` ends at ``leader_end_offset``.

    Kafka's rule: the smaller of the leader's end offset and this log's own end offset for that
    epoch (so data of an epoch the leader never had is cut), never past this log's end.
    """
    target = min(leader_end_offset, log_.log_end_offset)
    if leader_epoch >= 0:
        epoch, own_end = log_.end_offset_for_epoch(leader_epoch)
        if epoch == leader_epoch and own_end >= 0:
            target = min(target, own_end)
    return target


async def _truncate_to_leader(job: FollowerJob, peers: PeerClientLike) -> None:
    """OffsetsForLeaderEpoch against the leader until it answers; truncates on divergence."""
    while True:
        target = job.target()
        if target is None:
            return
        latest = target.latest_epoch
        if latest < 0 or target.log_end_offset == target.log_start_offset:
            return  # nothing of ours can diverge
        request = OffsetForLeaderEpochRequest(
            replica_id=job.node_id,
            topics=(OffsetForLeaderTopic(topic=job.topic, partitions=(OffsetForLeaderPartition(
                partition=job.partition, current_leader_epoch=job.leader_epoch,
                leader_epoch=latest),)),),
        )
        try:
            response = await peers.offsets_for_leader_epoch(job.leader, request)
            result = response.topics[0].partitions[0]
        except (PeerUnavailable, IndexError) as error:
            log.info("OffsetsForLeaderEpoch %s-%d to %d failed: %s", job.topic, job.partition,
                     job.leader, error)
            await asyncio.sleep(job.backoff_s)
            continue
        if result.error_code != 0:
            await asyncio.sleep(job.backoff_s)
            continue
        target = job.target()
        if target is None:
            return
        _truncate_for(job, target, latest, result.leader_epoch, result.end_offset)
        return


def _truncate_for(job: FollowerJob, target: UnifiedLog, asked_epoch: int, leader_epoch: int,
                  end_offset: int) -> None:
    """Truncates ``target`` after the leader answered that ``leader_epoch`` (the latest it has
    at or below ``asked_epoch``) ends at ``end_offset`` (KIP-279)."""
    if end_offset < 0:
        # The leader knows no epoch this old: keep only what is committed (Kafka: the HW).
        cut = min(target.high_watermark, target.log_end_offset)
    elif leader_epoch == asked_epoch:
        cut = min(end_offset, target.log_end_offset)
    else:
        cut = divergence_target(target, leader_epoch, end_offset)
    # Never below the active chunk's start: older offsets belong to other chunks.
    cut = max(cut, job.start_offset) if target.log_end_offset > job.start_offset else cut
    if cut < target.log_end_offset:
        log.info("%s-%d: truncating to %d for leader epoch %d", job.topic, job.partition,
                 cut, job.leader_epoch)
        target.truncate_to(cut)
        job.on_progress()


def _apply_answer(job: FollowerJob, target: UnifiedLog, answer: FetchPartitionResponse,
                  fetch_offset: int) -> bool:
    """Applies one fetch answer; False if the caller should back off."""
    if answer.error_code == Errors.OFFSET_OUT_OF_RANGE.code:
        before = target.log_end_offset
        if fetch_offset < answer.log_start_offset:
            # Retention on the leader passed this replica's end: continue at the leader's log
            # start, keeping what this log holds below (other chunks may live there).
            target.start_at(answer.log_start_offset)
        elif 0 <= answer.log_end_offset < fetch_offset:
            target.truncate_to(answer.log_end_offset)  # Kafka: the leader's end wins
        # Nothing changed: back off rather than ask the same again at once.
        return target.log_end_offset != before
    if answer.error_code != 0:
        return False
    if answer.diverging_epoch is not None:
        cut = divergence_target(target, answer.diverging_epoch.epoch,
                                answer.diverging_epoch.end_offset)
        if cut >= target.log_end_offset:
            return False  # nothing to cut: back off instead of asking the same at once
        target.truncate_to(cut)
        job.on_progress()
        return True
    changed = False
    if answer.records:
        data = answer.records
        if data:
            target.append_as_follower(data)
            changed = True
    high_watermark = min(answer.high_watermark, target.log_end_offset)
    if high_watermark > target.high_watermark:
        target.update_high_watermark(high_watermark)
        changed = True
    if changed:
        job.on_progress()
    return True


async def run_follower(job: FollowerJob, peers: PeerClientLike) -> None:
    """Truncates, then fetches until cancelled (or the log is gone)."""
    await _truncate_to_leader(job, peers)
    while True:
        target = job.target()
        if target is None:
            return
        fetch_offset = max(target.log_end_offset, job.start_offset)
        request = FetchRequest(
            replica_id=job.node_id,
            replica_epoch=job.broker_epoch(),
            max_wait_ms=job.fetch_wait_ms,
            min_bytes=1,
            max_bytes=job.fetch_max_bytes,
            topics=(FetchTopic(topic=job.topic, partitions=(FetchPartition(
                partition=job.partition,
                fetch_offset=fetch_offset,
                partition_max_bytes=job.fetch_max_bytes,
                current_leader_epoch=job.leader_epoch,
                last_fetched_epoch=target.latest_epoch,
                log_start_offset=target.log_start_offset,
            ),)),),
        )
        try:
            response = await peers.fetch(job.leader, request)
            answer = response.responses[0].partitions[0]
        except (PeerUnavailable, IndexError) as error:
            log.info("fetch %s-%d from %d failed: %s", job.topic, job.partition, job.leader,
                     error)
            await asyncio.sleep(job.backoff_s)
            continue
        target = job.target()
        if target is None:
            return
        if not _apply_answer(job, target, answer, fetch_offset):
            await asyncio.sleep(job.backoff_s)


class _Member:
    """One partition followed through a :class:`LeaderFetcher`."""

    __slots__ = ("backoff_until", "job", "truncated")

    def __init__(self, job: FollowerJob) -> None:
        self.job = job
        self.truncated = False
        self.backoff_until = 0.0


class FollowerRegistration:
    """A partition's place in a :class:`LeaderFetcher`; ``cancel()`` stops following."""

    def __init__(self, fetcher: LeaderFetcher, member: _Member) -> None:
        self._fetcher = fetcher
        self._member = member

    def cancel(self) -> bool:
        self._fetcher.remove(self._member)
        return True

    def done(self) -> bool:
        return not self._fetcher.has(self._member)


class LeaderFetcher:
    """Follows every partition this broker replicates from one leader, with one fetch at a time.

    Kafka's ReplicaFetcherThread: a single long poll carries all the partitions (one HTTP
    request instead of one per partition), and OffsetsForLeaderEpoch asks for all partitions
    that start a new leader epoch at once. A partition whose answer failed backs off alone. An
    answer for a partition removed or re-added meanwhile is dropped. Not thread-safe.
    """

    def __init__(self, leader: int, node_id: int, peers: PeerClientLike,
                 broker_epoch: Callable[[], int], *, fetch_wait_ms: int = 500,
                 fetch_max_bytes: int = 1024 * 1024, backoff_s: float = 1.0) -> None:
        self.leader = leader
        self.node_id = node_id
        self.peers = peers
        self.broker_epoch = broker_epoch
        self.fetch_wait_ms = fetch_wait_ms
        self.fetch_max_bytes = fetch_max_bytes
        self.backoff_s = backoff_s
        self.members: dict[tuple[str, int], _Member] = {}
        self._changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def add(self, job: FollowerJob) -> FollowerRegistration:
        """Follows ``job``'s partition (replacing its previous job: a new leader epoch
        truncates first); starts the loop if needed."""
        member = _Member(job)
        self.members[(job.topic, job.partition)] = member
        self._changed.set()
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run_logged())
        return FollowerRegistration(self, member)

    def remove(self, member: _Member) -> None:
        key = (member.job.topic, member.job.partition)
        if self.members.get(key) is member:
            del self.members[key]
            self._changed.set()

    def has(self, member: _Member) -> bool:
        return self.members.get((member.job.topic, member.job.partition)) is member

    def stop(self) -> None:
        self.members.clear()
        if self.task is not None:
            self.task.cancel()

    async def _run_logged(self) -> None:
        try:
            await self.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("fetcher from broker %d failed", self.leader)

    def _drop_gone(self) -> None:
        for key, member in list(self.members.items()):
            if member.job.target() is None:
                del self.members[key]

    async def run(self) -> None:
        """Truncates new members, then long-polls the leader for every ready member."""
        loop = asyncio.get_running_loop()
        while True:
            self._drop_gone()
            now = loop.time()
            if any(not m.truncated and m.backoff_until <= now for m in self.members.values()):
                await self._truncate_new()
                continue
            ready = {k: m for k, m in self.members.items()
                     if m.truncated and m.backoff_until <= now}
            if not ready:
                wake = min((m.backoff_until for m in self.members.values()),
                           default=now + 3600) - now
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), max(wake, 0.001))
                continue
            await self._fetch(ready)

    async def _truncate_new(self) -> None:
        now = asyncio.get_running_loop().time()
        asking: dict[tuple[str, int], tuple[_Member, int]] = {}
        for key, member in self.members.items():
            if member.truncated or member.backoff_until > now:
                continue
            target = member.job.target()
            if target is None:
                continue
            latest = target.latest_epoch
            if latest < 0 or target.log_end_offset == target.log_start_offset:
                member.truncated = True  # nothing of ours can diverge
                continue
            asking[key] = (member, latest)
        if not asking:
            return
        by_topic: dict[str, list[OffsetForLeaderPartition]] = {}
        for (topic, index), (member, latest) in asking.items():
            by_topic.setdefault(topic, []).append(OffsetForLeaderPartition(
                partition=index, current_leader_epoch=member.job.leader_epoch,
                leader_epoch=latest))
        request = OffsetForLeaderEpochRequest(replica_id=self.node_id, topics=tuple(
            OffsetForLeaderTopic(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()))
        try:
            response = await self.peers.offsets_for_leader_epoch(self.leader, request)
        except PeerUnavailable as error:
            log.info("OffsetsForLeaderEpoch to %d failed: %s", self.leader, error)
            self._back_off(member for member, _ in asking.values())
            return
        answered: set[tuple[str, int]] = set()
        for topic_result in response.topics:
            for result in topic_result.partitions:
                key = (topic_result.topic, result.partition)
                found = asking.get(key)
                if found is None or not self.has(found[0]):
                    continue
                member, latest = found
                answered.add(key)
                target = member.job.target()
                if target is None:
                    continue
                if result.error_code != 0:
                    self._back_off([member])
                    continue
                _truncate_for(member.job, target, latest, result.leader_epoch, result.end_offset)
                member.truncated = True
        self._back_off(m for k, (m, _) in asking.items() if k not in answered)

    def _back_off(self, members: Iterable[_Member]) -> None:
        until = asyncio.get_running_loop().time() + self.backoff_s
        for member in members:
            member.backoff_until = until

    async def _fetch(self, ready: dict[tuple[str, int], _Member]) -> None:
        offsets: dict[tuple[str, int], int] = {}
        by_topic: dict[str, list[FetchPartition]] = {}
        for key, member in ready.items():
            target = member.job.target()
            if target is None:
                continue
            offset = max(target.log_end_offset, member.job.start_offset)
            offsets[key] = offset
            by_topic.setdefault(key[0], []).append(FetchPartition(
                partition=key[1], fetch_offset=offset,
                partition_max_bytes=self.fetch_max_bytes,
                current_leader_epoch=member.job.leader_epoch,
                last_fetched_epoch=target.latest_epoch,
                log_start_offset=target.log_start_offset))
        if not by_topic:
            return
        request = FetchRequest(
            replica_id=self.node_id, replica_epoch=self.broker_epoch(),
            max_wait_ms=self.fetch_wait_ms, min_bytes=1,
            max_bytes=max(self.fetch_max_bytes, min(len(offsets) * self.fetch_max_bytes,
                                                    50 * 1024 * 1024)),
            topics=tuple(FetchTopic(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()))
        try:
            response = await self.peers.fetch(self.leader, request)
        except PeerUnavailable as error:
            log.info("fetch from %d failed: %s", self.leader, error)
            self._back_off(ready.values())
            return
        for topic_answer in response.responses:
            for answer in topic_answer.partitions:
                key = (topic_answer.topic, answer.partition)
                sent = ready.get(key)
                if sent is None or not self.has(sent) or key not in offsets:
                    continue  # removed, or re-added with a new epoch, while the fetch ran
                target = sent.job.target()
                if target is None:
                    continue
                if not _apply_answer(sent.job, target, answer, offsets[key]):
                    self._back_off([sent])
