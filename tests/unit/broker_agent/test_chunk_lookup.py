"""Which chunk serves an offset; which ranges a broker keeps; range subtraction."""

from __future__ import annotations

import uuid

from chunkraft.broker_agent.chunk_lookup import (
    TO_THE_END,
    chunk_for_copy,
    hosted_ranges,
    locate_for_consumer,
    subtract_ranges,
)
from chunkraft.records import ChunkRecord, PartitionRecord

TID = uuid.UUID(int=1)


def _chunk(start: int, stop: int, end: int, replicas: tuple[int, ...]) -> ChunkRecord:
    return ChunkRecord(partition_id=0, topic_id=TID, start_offset=start, start_timestamp=0,
                       stop_offset=stop, end_offset=end, chunk_epoch=0, epoch=0,
                       replicas=replicas, isr=replicas)


ACTIVE = PartitionRecord(partition_id=0, topic_id=TID, replicas=(1,), isr=(1,), leader=1,
                         leader_epoch=1, partition_epoch=1, start_offset=25)
CHUNKS = (_chunk(0, 9, 9, (0,)), _chunk(10, 24, 29, (2,)))


def test_consumers_read_inactive_chunks_to_their_stop_then_the_active_chunk() -> None:
    assert locate_for_consumer(0, ACTIVE, CHUNKS).chunk == CHUNKS[0]
    assert locate_for_consumer(9, ACTIVE, CHUNKS).chunk == CHUNKS[0]
    assert locate_for_consumer(10, ACTIVE, CHUNKS).chunk == CHUNKS[1]
    assert locate_for_consumer(24, ACTIVE, CHUNKS).chunk == CHUNKS[1]
    assert locate_for_consumer(25, ACTIVE, CHUNKS).active  # the overlap 25..29 is the active's
    never_cut = ACTIVE._replace(start_offset=-1)
    assert locate_for_consumer(0, never_cut, ()).active


def test_offsets_below_every_chunk_are_not_served() -> None:
    later = (_chunk(5, 9, 9, (0,)),)
    assert not locate_for_consumer(3, ACTIVE._replace(start_offset=10), later).found


def test_copies_read_inactive_chunks_to_their_end() -> None:
    assert chunk_for_copy(CHUNKS, 27) == CHUNKS[1]
    assert chunk_for_copy(CHUNKS, 30) is None


def test_hosted_ranges_and_what_a_chunk_delete_may_remove() -> None:
    assert hosted_ranges(2, ACTIVE, CHUNKS) == [(10, 29)]
    assert hosted_ranges(1, ACTIVE, CHUNKS) == [(25, TO_THE_END)]
    # Leaving chunk 10..29 while keeping the active chunk from 25: only 10..24 may go.
    assert subtract_ranges((10, 29), [(25, TO_THE_END)]) == [(10, 24)]
    assert subtract_ranges((0, 100), [(10, 19), (50, 59)]) == [(0, 9), (20, 49), (60, 100)]
    assert subtract_ranges((0, 9), [(0, 9)]) == []
