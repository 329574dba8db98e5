"""Encode and decode throughput per record type, on one core.

Prints one JSON line per record type and appends a table to bench/RESULTS.md (unless
--no-save). Each figure is the best of --repeat runs of --count records, so a noisy neighbour
on the machine lowers the spread, not the result.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Any

from _report import append_section, emit
from chunkraft.records import (
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ChunkChangeRecord,
    ChunkRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    decode_record,
    encode_record,
)

TOPIC = uuid.UUID("3b8f2f3c-1d0c-4a7e-9c55-6a2f1f0d9e11")
TS = 1_763_700_000_000


def samples() -> list[Any]:
    """One realistic instance of every record type."""
    return [
        RegisterBrokerRecord(
            broker_id=3, incarnation_id=uuid.uuid4(), broker_epoch=1234, rack="rack-b",
            end_points=(BrokerEndpoint("PLAINTEXT", "broker-3.example", 9092, 0),), fenced=False,
        ),
        UnregisterBrokerRecord(broker_id=3, broker_epoch=1234),
        TopicRecord(name="orders-eu-west", topic_id=TOPIC),
        PartitionRecord(
            partition_id=7, topic_id=TOPIC, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1,
            leader_epoch=12, partition_epoch=40, start_offset=1_250_000, start_timestamp=TS,
        ),
        PartitionRecord(
            partition_id=12, topic_id=TOPIC, replicas=(1, 2, 3), isr=(1, 2, 3), leader=2,
            leader_epoch=0, partition_epoch=0, start_offset=0,
            prior_partition_epochs=tuple(PriorPartitionEpoch(p, 3) for p in range(12)),
        ),
        PartitionChangeRecord(partition_id=7, topic_id=TOPIC, isr=(1, 2), leader=1),
        AccessControlEntryRecord(
            id=uuid.uuid4(), resource_type=2, resource_name="orders-eu-west", pattern_type=3,
            principal="User:alice", host="*", operation=3, permission_type=3,
        ),
        RemoveAccessControlEntryRecord(id=uuid.uuid4()),
        RemoveTopicRecord(topic_id=TOPIC),
        ProducerIdsRecord(broker_id=3, broker_epoch=1234, next_producer_id=93_000),
        BrokerRegistrationChangeRecord(broker_id=3, broker_epoch=1234, fenced=-1),
        NoOpRecord(),
        ChunkRecord(
            partition_id=7, topic_id=TOPIC, start_offset=1_000_000, start_timestamp=TS,
            stop_offset=1_249_999, end_offset=1_250_003, chunk_epoch=2, epoch=2,
            replicas=(4, 5, 6), isr=(4, 5, 6),
        ),
        ChunkChangeRecord(
            partition_id=7, topic_id=TOPIC, start_offset=1_000_000, replicas=(7, 4, 5, 6),
            isr=(4, 5, 6), adding_replicas=(7,), removing_replicas=(6,), epoch=3,
        ),
    ]


def best_rate(run: Callable[[], None], count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-save", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args()

    rows: list[dict[str, Any]] = []
    for record in samples():
        encoded = encode_record(record)
        assert decode_record(encoded) == record
        records = [record] * args.count
        blobs = [encoded] * args.count

        def encode_all(records: list[Any] = records) -> None:
            for r in records:
                encode_record(r)

        def decode_all(blobs: list[bytes] = blobs) -> None:
            for b in blobs:
                decode_record(b)

        label = type(record).__name__
        if isinstance(record, PartitionRecord) and record.prior_partition_epochs:
            label += " (12 prior epochs)"
        row = {
            "bench": "records",
            "record": label,
            "bytes": len(encoded),
            "encode_per_s": round(best_rate(encode_all, args.count, args.repeat)),
            "decode_per_s": round(best_rate(decode_all, args.count, args.repeat)),
        }
        emit(row)
        rows.append(row)

    if not args.no_save:
        table = ["| record | bytes | encode/s | decode/s |", "|---|---|---|---|"]
        table += [
            f"| {r['record']} | {r['bytes']} | {r['encode_per_s']:,} | {r['decode_per_s']:,} |"
            for r in rows
        ]
        append_section(
            f"Record codec, one core, best of {args.repeat} x {args.count:,} records", table
        )


if __name__ == "__main__":
    main()
