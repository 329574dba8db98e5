"""A follower of an active chunk: truncate to the leader's log, then fetch from it forever.

On a new leader epoch the follower first asks the leader for the end offset of its own latest
epoch (OffsetsForLeaderEpoch, KIP-101 / KIP-279) and truncates what the leader does not have;
a ``diverging_epoch`` in a fetch answer (KIP-320) does the same later. Then it long-polls the
leader with ``replica_id`` = its broker id, appends what it gets as a follower and takes the
leader's high watermark (capped at its own log end, never lowered).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkraft.broker_agent.chunk_copier import start_at_gap
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

__all__ = ["FollowerJob", "divergence_target", "run_follower"]

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
        if result.end_offset < 0:
            # The leader knows no epoch this old: keep only what is committed (Kafka: the HW).
            cut = min(target.high_watermark, target.log_end_offset)
        elif result.leader_epoch == latest:
            cut = min(result.end_offset, target.log_end_offset)
        else:
            cut = divergence_target(target, result.leader_epoch, result.end_offset)
        cut = max(cut, job.start_offset) if target.log_end_offset > job.start_offset else cut
        if cut < target.log_end_offset:
            log.info("%s-%d: truncating to %d for leader epoch %d", job.topic, job.partition,
                     cut, job.leader_epoch)
            target.truncate_to(cut)
            job.on_progress()
        return


def _apply_answer(job: FollowerJob, target: UnifiedLog, answer: FetchPartitionResponse,
                  fetch_offset: int) -> bool:
    """Applies one fetch answer; False if the caller should back off."""
    if answer.error_code == Errors.OFFSET_OUT_OF_RANGE.code:
        before = target.log_end_offset
        if fetch_offset < answer.log_start_offset:
            # Retention on the leader passed this replica's end: continue at the leader's log
            # start, keeping what this log holds below (other chunks may live there).
            start_at_gap(target, answer.log_start_offset)
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
        data = base64.b64decode(answer.records)
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
