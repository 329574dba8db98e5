"""Shared material for the file-format tests: real records, a cluster id, file surgery."""

from __future__ import annotations

import uuid
import zlib

from chunkraft.records import ChunkRecord, PartitionRecord, Record, TopicRecord, encode_record

CLUSTER_ID = uuid.UUID("6d0c5bd6-2c3e-4f5a-9b7e-1a2b3c4d5e6f")
OTHER_CLUSTER_ID = uuid.UUID("0b9e8d7c-6b5a-4c3d-8e1f-a0b1c2d3e4f5")
TOPIC_ID = uuid.UUID("1f6e1bbd-64ac-4dd1-8c93-0e3a1d2b9f10")


def sample_records(count: int = 6) -> list[Record]:
    """A mix of topic, partition and chunk records, as a controller would write them."""
    records: list[Record] = [TopicRecord(name="orders", topic_id=TOPIC_ID)]
    for index in range(count - 1):
        if index % 2 == 0:
            records.append(
                PartitionRecord(
                    partition_id=index,
                    topic_id=TOPIC_ID,
                    replicas=(1, 2, 3),
                    isr=(1, 2, 3),
                    leader=1,
                    leader_epoch=0,
                    partition_epoch=0,
                    start_offset=0,
                    start_timestamp=1_700_000_000_000,
                )
            )
        else:
            records.append(
                ChunkRecord(
                    partition_id=index,
                    topic_id=TOPIC_ID,
                    start_offset=100 * index,
                    start_timestamp=1_700_000_000_000 + index,
                    stop_offset=100 * index + 99,
                    end_offset=100 * index + 99,
                    chunk_epoch=0,
                    replicas=(1, 2, 3),
                    isr=(1, 2, 3),
                    epoch=0,
                )
            )
    return records


def sample_encoded(count: int = 6) -> list[bytes]:
    """:func:`sample_records`, encoded."""
    return [encode_record(record) for record in sample_records(count)]


def with_crc_fixed(batch: bytes) -> bytes:
    """``batch`` with its CRC recomputed, so a header edit shows as itself, not as a CRC error."""
    return batch[:12] + zlib.crc32(batch[16:]).to_bytes(4, "big") + batch[16:]


def patch(data: bytes, position: int, value: bytes) -> bytes:
    """``data`` with ``value`` written over it at ``position``."""
    return data[:position] + value + data[position + len(value) :]
