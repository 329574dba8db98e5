"""Replay throughput and the cost of a large image: build, snapshot, hash, load.

Builds an image of --topics x --partitions partitions with --chunks inactive chunks each by
replaying generated records in one delta, then writes it as a snapshot, hashes it, and loads
the snapshot in a fresh process (so the load's time and peak RSS are its own). Also measures
steady-state replay: deltas of --batch PartitionChangeRecords applied to the large image.
Prints JSON lines; appends a section to bench/RESULTS.md unless --no-save.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _report import append_section, emit, peak_rss_mib
from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.controller.image.snapshot import write_image_snapshot
from chunkraft.records import (
    ChunkRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)

BROKERS = 12
TS = 1_763_700_000_000
CHUNK_SIZE = 1_000_000


def generate(topics: int, partitions: int, chunks: int) -> Iterator[Any]:
    """Brokers, then per topic: TopicRecord, and per partition its record and its chunks."""
    for broker_id in range(BROKERS):
        yield RegisterBrokerRecord(broker_id=broker_id, broker_epoch=broker_id, fenced=False,
                                   incarnation_id=uuid.uuid4(), rack=f"rack-{broker_id % 3}")
    for t in range(topics):
        topic_id = uuid.UUID(int=(t + 1) << 64 | 0xC0FFEE)
        yield TopicRecord(name=f"topic-{t:06d}", topic_id=topic_id)
        for p in range(partitions):
            first = (t + p) % BROKERS
            active = (first, (first + 1) % BROKERS, (first + 2) % BROKERS)
            yield PartitionRecord(
                partition_id=p, topic_id=topic_id, replicas=active, isr=active, leader=first,
                leader_epoch=chunks, partition_epoch=chunks, start_offset=chunks * CHUNK_SIZE,
                start_timestamp=TS + chunks * CHUNK_SIZE,
            )
            for c in range(chunks):
                lead = (first + 3 + c) % BROKERS
                replicas = (lead, (lead + 1) % BROKERS, (lead + 2) % BROKERS)
                start = c * CHUNK_SIZE
                yield ChunkRecord(
                    partition_id=p, topic_id=topic_id, start_offset=start,
                    start_timestamp=TS + start, stop_offset=start + CHUNK_SIZE - 1,
                    end_offset=start + CHUNK_SIZE + 2, chunk_epoch=0, epoch=0,
                    replicas=replicas, isr=replicas,
                )


def build(topics: int, partitions: int, chunks: int) -> tuple[MetadataImage, int, float]:
    """Replays pre-generated records into one delta; returns (image, records, replay seconds).

    The records are built first, so the time is replay + apply alone; the image then holds
    those same record objects, so building them first costs no extra memory.
    """
    gc.disable()  # as the snapshot loader does: millions of acyclic tuples
    records = list(generate(topics, partitions, chunks))
    delta = MetadataDelta(MetadataImage.EMPTY)
    start = time.perf_counter()
    delta.replay_all(records)
    image = delta.apply(MetadataProvenance(len(records) - 1, 1))
    elapsed = time.perf_counter() - start
    count = len(records)
    del records
    gc.enable()
    gc.freeze()  # as load_image_snapshot does for a long-lived image
    return image, count, elapsed


def steady_state_replay(image: MetadataImage, changes: int, batch: int) -> float:
    """Records/s for deltas of ``batch`` PartitionChangeRecords on a large image."""
    topics = [t for _, t in zip(range(changes), image.topics.by_id.values(), strict=False)]
    records = [
        PartitionChangeRecord(partition_id=0, topic_id=topics[i % len(topics)].topic_id,
                              isr=(topics[i % len(topics)].partitions[0].replicas[0],))
        for i in range(changes)
    ]
    start = time.perf_counter()
    for i in range(0, changes, batch):
        delta = MetadataDelta(image)
        for record in records[i:i + batch]:
            delta.replay(record)
        image = delta.apply()
    return changes / (time.perf_counter() - start)


def load_in_fresh_process(path: Path) -> dict[str, Any]:
    code = (
        "import json, sys, time\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from _report import peak_rss_mib\n"
        "from chunkraft.controller.image.snapshot import load_image_snapshot\n"
        "start = time.perf_counter()\n"
        "image = load_image_snapshot(sys.argv[1])\n"
        "elapsed = time.perf_counter() - start\n"
        "start = time.perf_counter()\n"
        "image.content_hash()\n"
        "hash_s = time.perf_counter() - start\n"
        "rss = peak_rss_mib()\n"
        "print(json.dumps({'seconds': elapsed, 'peak_rss_mib': rss, 'hash_seconds': hash_s,\n"
        "                  'partitions': image.topics.partition_count(),\n"
        "                  'chunks': image.topics.chunk_count()}))\n"
    )
    bench_dir = str(Path(__file__).parent)
    out = subprocess.run([sys.executable, "-c", code, str(path), bench_dir], check=True,
                         capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topics", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=10, help="partitions per topic")
    parser.add_argument("--chunks", type=int, default=5, help="inactive chunks per partition")
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--no-save", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args()

    image, records, build_s = build(args.topics, args.partitions, args.chunks)
    partitions = image.topics.partition_count()
    chunks = image.topics.chunk_count()
    rows: list[dict[str, Any]] = []

    def report(metric: str, value: float, unit: str) -> None:
        row = {"bench": "image", "metric": metric, "value": round(value, 3), "unit": unit,
               "partitions": partitions, "chunks": chunks}
        emit(row)
        rows.append(row)

    report("records replayed", records, "records")
    report("replay + apply, one delta", build_s, "s")
    report("replay rate, one delta", records / build_s, "records/s")
    report("peak RSS after build", peak_rss_mib(), "MiB")

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        start = time.perf_counter()
        path = write_image_snapshot(image, tmp, uuid.UUID(int=42))
        report("to_records + snapshot write", time.perf_counter() - start, "s")
        report("snapshot size", path.stat().st_size / 2**20, "MiB")
        start = time.perf_counter()
        image.content_hash()
        report("content hash after the snapshot write (digests cached)",
               time.perf_counter() - start, "s")
        rate = steady_state_replay(image, args.changes, args.batch)
        report(f"replay rate, deltas of {args.batch} changes", rate, "records/s")
        report("peak RSS, build process", peak_rss_mib(), "MiB")
        del image
        gc.collect()
        loaded = load_in_fresh_process(path)
        assert (loaded["partitions"], loaded["chunks"]) == (partitions, chunks), loaded
        report("snapshot load into a ready image", loaded["seconds"], "s")
        report("content hash of the loaded image, cold", loaded["hash_seconds"], "s")
        report("peak RSS, load process (load + hash)", loaded["peak_rss_mib"], "MiB")

    if not args.no_save:
        table = ["| metric | value | unit |", "|---|---|---|"]
        table += [f"| {r['metric']} | {r['value']:,} | {r['unit']} |" for r in rows]
        append_section(
            f"Image: {partitions:,} partitions + {chunks:,} chunks", table
        )


if __name__ == "__main__":
    main()
