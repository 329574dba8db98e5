"""A leader's handling of a producer batch's compression: Kafka's LogValidator, in three cases.

1. An uncompressed batch on a topic whose ``compression.type`` is ``producer`` (the default) or
   ``uncompressed``: nothing to do; its records are not decoded (the produce hot path).
2. A compressed batch is decompressed (at most :func:`decompressed_limit` of the topic's
   ``max.message.bytes``; MESSAGE_TOO_LARGE past it) and its records checked (CORRUPT_MESSAGE
   unless well-formed, as many as the header counts, offset deltas 0, 1, 2 ...). On a
   ``producer`` topic, or one whose codec is the batch's, it is then stored as sent: assigning
   offsets rewrites only the base offset and leader epoch, outside the CRC, so the producer's
   compressed bytes and CRC stay (Kafka's in-place assignment).
3. A batch whose codec is not the topic's target is rebuilt with the target codec: the same
   records (keys, values, headers, timestamps), producer id, epoch and base sequence,
   transactional flag, a new CRC (Kafka's "not in place" path). Kafka checks the rebuilt
   batch's size against ``max.message.bytes`` again, and so does the caller.

Pure functions over one batch; safe from any thread.
"""

from __future__ import annotations

from chunkraft.broker_agent.storage.log_batches import check_records
from chunkraft.dataplane.record_batch import (
    BatchHeader,
    ProducerRecord,
    build_batch,
    decompressed_limit,
)

__all__ = ["conform_to_topic"]


def conform_to_topic(batch: memoryview, header: BatchHeader, *, target: int | None,
                     max_batch_bytes: int) -> bytearray | None:
    """None when ``batch`` (checked by ``check_batch``) is stored as sent, else the batch
    rebuilt with codec ``target`` (None: the producer's, kept), to be stored instead.

    Raises ApiException (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE) when a compressed batch's records
    do not pass the leader's check (see the module docstring).
    """
    codec = header.compression
    if codec == 0 and not target:
        return None
    records = check_records(batch, decompressed_limit(max_batch_bytes))
    if target is None or target == codec:
        return None
    return bytearray(build_batch(
        [ProducerRecord(r.key, r.value, r.timestamp, r.headers) for r in records],
        base_offset=header.base_offset,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
        log_append_time=header.is_log_append_time,
        compression=target,
    ))
