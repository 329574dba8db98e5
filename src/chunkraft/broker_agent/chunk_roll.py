"""The chunk roll of DESIGN.md section 3, on the leader of the active chunk.

1. Only the leader of the active chunk rolls it (else NOT_LEADER_OR_FOLLOWER); one roll at a
   time per partition (a second one -> REASSIGNMENT_IN_PROGRESS, retriable by the caller).
2. Pause appends; wait until HW = LEO (at most ``chunk.roll.timeout``: REQUEST_TIMED_OUT), so
   everything acknowledged is inside the chunk being cut.
3. Read LSO and HW. LSO = the active chunk's start -> INVALID_REQUEST (nothing to cut).
4. CreateChunks to the controller: prev_stop = LSO - 1, prev_end = HW - 1, start = LSO,
   start timestamp = now, with this leader's epoch (a cut under an old leader is refused).
5. Resume appends when the controller answers with an error. On success the pause lasts until
   the cut's metadata reaches this broker (a new leader epoch, or leaving the active chunk);
   appending in between would write offsets past the end the controller just fixed for the old
   chunk, outside every chunk, and such an acknowledged record would be lost. The produce path
   waits out the pause (bounded by each request's timeout) and re-checks leadership.
"""

from __future__ import annotations

import asyncio

from chunkraft.broker_agent.chunk_lookup import active_start
from chunkraft.broker_agent.partition import Partition
from chunkraft.broker_agent.replica_host import ReplicaHost
from chunkraft.error_codes import Errors
from chunkraft.protocol.chunks import (
    CreateChunksPartition,
    CreateChunksRequest,
    CreateChunksResponse,
    CreateChunksTopic,
)

__all__ = ["roll_chunk"]

CREATE_CHUNKS_PATH = "/controller/v1/create-chunks"

Outcome = tuple[int, str | None]


async def _wait_for_isr(partition: Partition, epoch: int, timeout_s: float) -> bool:
    """Waits until HW = LEO on this leader (still leading ``epoch``); False on timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        if partition.closed or not partition.is_leader or partition.leader_epoch != epoch:
            return False
        log_ = partition.log
        if log_.high_watermark >= log_.log_end_offset:
            return True
        left = deadline - loop.time()
        if left <= 0:
            return False
        await partition.signal.wait(left)


def _answer(response: CreateChunksResponse, topic: str, index: int) -> Outcome:
    for topic_result in response.topics:
        if topic_result.name != topic:
            continue
        for result in topic_result.partitions:
            if result.partition_index == index:
                return result.error_code, result.error_message
    if response.error_code:
        return response.error_code, response.error_message
    return Errors.UNKNOWN_SERVER_ERROR.code, "the controller's answer names no such partition"


async def roll_chunk(rm: ReplicaHost, topic: str, index: int, broker_ids: tuple[int, ...],
                     leader: int) -> Outcome:
    """Cuts the active chunk of ``topic``-``index``; see the module docstring."""
    partition = rm.partitions.get((topic, index))
    if partition is None or not partition.is_leader or partition.record is None:
        return (Errors.NOT_LEADER_OR_FOLLOWER.code,
                f"broker {rm.node_id} does not lead the active chunk of {topic}-{index}")
    if partition.appends_paused:
        return (Errors.REASSIGNMENT_IN_PROGRESS.code,
                f"a chunk roll of {topic}-{index} is already in progress")
    if partition.overlap_pending:
        return (Errors.REASSIGNMENT_IN_PROGRESS.code,
                f"{topic}-{index} still copies the previous chunk's open transactions")
    record = partition.record
    epoch = record.leader_epoch
    partition.appends_paused = True
    keep_paused = False
    try:
        if not await _wait_for_isr(partition, epoch, rm.config.chunk_roll_timeout_ms / 1000):
            if not partition.is_leader or partition.leader_epoch != epoch:
                return Errors.NOT_LEADER_OR_FOLLOWER.code, "leadership moved during the roll"
            return (Errors.REQUEST_TIMED_OUT.code,
                    f"the in-sync replicas of {topic}-{index} did not catch up in time")
        log_ = partition.log
        lso, hw = log_.last_stable_offset, log_.high_watermark
        start = active_start(record)
        if lso <= start:
            return (Errors.INVALID_REQUEST.code,
                    f"the active chunk of {topic}-{index} is empty: its last stable offset "
                    f"{lso} is its start offset {start}")
        request = CreateChunksRequest(
            broker_id=rm.node_id,
            broker_epoch=rm.broker_epoch(),
            topics=(CreateChunksTopic(name=topic, partitions=(CreateChunksPartition(
                partition_index=index,
                broker_ids=broker_ids,
                leader=leader,
                leader_epoch=epoch,
                prev_stop_offset=lso - 1,
                prev_end_offset=hw - 1,
                start_offset=lso,
                start_timestamp=max(rm.time_ms(), record.start_timestamp),
            ),)),),
        )
        try:
            raw = await rm.controller.call(CREATE_CHUNKS_PATH, request.model_dump(mode="json"))
            response = CreateChunksResponse.model_validate(raw)
        except Exception as error:
            return (Errors.REQUEST_TIMED_OUT.code,
                    f"the controller did not answer the chunk roll: {error}")
        code, message = _answer(response, topic, index)
        keep_paused = code == 0
        return code, message
    finally:
        # On success the cut's metadata ends the pause (see the module docstring); a new leader
        # epoch that arrived meanwhile already reset it.
        if not keep_paused and partition.leader_epoch == epoch:
            partition.appends_paused = False
        partition.signal.notify()
