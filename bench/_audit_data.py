"""A synthetic controller snapshot for bench_audit: a realistic, almost clean large cluster.

``--partitions`` partitions in topics of 1,000 (fewer if there are fewer partitions), each with
``--chunks-per-partition`` inactive chunks and its active chunk, RF 3 on 12 brokers in 3 racks.
Chunks form a valid chain (start = previous stop + 1) of varying sizes; every 7th chunk was cut
during a transaction (StopOffset < EndOffset, the next chunk covering the tail); replicas
rotate over the brokers so the load is even. A few deliberate violations are planted so the
audit's counts are not trivially zero (see :data:`PLANTED`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chunkraft.records import (
    ChunkRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from chunkraft.records.broker_records import BrokerEndpoint
from chunkraft.records.codec import encode_record
from chunkraft.records.files.snapshot import write_snapshot

__all__ = ["BROKERS", "CLUSTER_ID", "PLANTED", "TOPIC_SIZE", "records", "write"]

BROKERS = 12
RACKS = 3
TOPIC_SIZE = 1_000
TS = 1_763_700_000_000
CLUSTER_ID = uuid.UUID("c0ffee00-0000-4000-8000-00000000a0d1")
UNREGISTERED = 99
GAP = 5

PLANTED: dict[str, int] = {"chunks.contiguous": 3, "replicas.registered": 2}
"""The violations the data holds, by rule id; every other rule must count 0."""


def _topic_id(t: int) -> uuid.UUID:
    return uuid.UUID(int=(t + 1) << 64 | 0xA0D1)


def records(partitions: int, chunks: int) -> Iterator[Any]:
    """Brokers, topics, partitions each followed by its chunks, the producer ids record.

    Planted: a gap of GAP offsets before the last chunk of three partitions (chunks.contiguous)
    and an unregistered broker in the replicas and ISR of two chunks (replicas.registered).
    """
    for b in range(BROKERS):
        yield RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.UUID(int=1 + b), broker_epoch=100 + b,
            end_points=(BrokerEndpoint("PLAINTEXT", f"broker{b}", 9092, 0),),
            rack=f"rack-{b % RACKS}", fenced=False)
    topics = max(1, -(-partitions // TOPIC_SIZE))
    gaps = {(partitions * k) // 4 for k in (1, 2, 3)} if chunks >= 2 else set()
    strangers = {(partitions // 3, 0), ((2 * partitions) // 3, chunks - 1)} if chunks else set()
    n = 0
    for t in range(topics):
        topic_id = _topic_id(t)
        yield TopicRecord(name=f"topic-{t:05d}", topic_id=topic_id)
        for p in range(min(TOPIC_SIZE, partitions - t * TOPIC_SIZE)):
            start = 0
            ts = TS + n
            for c in range(chunks):
                if n in gaps and c == chunks - 1:
                    start += GAP
                size = 1_000 + (n * 7919 + c * 104_729) % 9_000
                stop = start + size - 1
                end = stop + 1 + (n + c) % 50 if (n + c) % 7 == 0 else stop
                lead = (n + 3 * c) % BROKERS
                replicas: tuple[int, ...] = (lead, (lead + 1) % BROKERS, (lead + 2) % BROKERS)
                if (n, c) in strangers:
                    replicas = (lead, (lead + 1) % BROKERS, UNREGISTERED)
                yield ChunkRecord(
                    partition_id=p, topic_id=topic_id, start_offset=start, start_timestamp=ts,
                    stop_offset=stop, end_offset=end, chunk_epoch=0, epoch=0, replicas=replicas,
                    isr=replicas)
                start = stop + 1
                ts += 60_000
            lead = (n + 3 * chunks) % BROKERS
            active = (lead, (lead + 1) % BROKERS, (lead + 2) % BROKERS)
            yield PartitionRecord(
                partition_id=p, topic_id=topic_id, replicas=active, isr=active, leader=lead,
                leader_epoch=chunks, partition_epoch=chunks, start_offset=start,
                start_timestamp=ts)
            n += 1
    yield ProducerIdsRecord(broker_id=0, broker_epoch=100, next_producer_id=1_000_000)


def write(directory: Path, partitions: int, chunks: int) -> Path:
    """Writes the snapshot file under ``directory``; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    return write_snapshot(directory, end_offset=partitions * (chunks + 1) + 1_000, epoch=1,
                          cluster_id=CLUSTER_ID,
                          records=(encode_record(r) for r in records(partitions, chunks)))
