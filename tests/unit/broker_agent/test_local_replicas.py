"""What a broker holds on disk, per partition and chunk (chunkraft.broker_agent.local_replicas),
over a real log with a gap: an inactive chunk 0..9 kept, then the active chunk from 50."""

from __future__ import annotations

import time
from pathlib import Path

from chunkraft.broker_agent.local_replicas import local_replicas
from chunkraft.broker_agent.storage import LogConfig, UnifiedLog
from chunkraft.dataplane.record_batch import build_batch
from tests.unit.controller.operations.cluster_builders import (
    TOPIC_ID,
    chunk,
    cluster,
    partition,
    with_topic,
)


def records(count: int) -> list[tuple[bytes, bytes, int]]:
    now = int(time.time() * 1000)
    return [(b"k%d" % i, b"v" * 100, now) for i in range(count)]


def test_chunks_held_with_a_gap_between_them(tmp_path: Path) -> None:
    log = UnifiedLog.open(tmp_path / "orders-0", TOPIC_ID, LogConfig())
    try:
        log.append_as_follower(build_batch(records(10), base_offset=0, partition_leader_epoch=0))
        log.roll()
        log.append_as_follower(build_batch(records(5), base_offset=50, partition_leader_epoch=1))
        log.update_high_watermark(55)
        active = partition(0, (0, 1))._replace(start_offset=50)
        image = with_topic(cluster(0, 1), active, chunk(0, 0, 9, (0,)))
        (row,) = local_replicas({("orders", 0): log}, image)
        assert (row["topic"], row["partition"]) == ("orders", 0)
        assert (row["log_start_offset"], row["log_end_offset"], row["high_watermark"]) == (
            0, 55, 55)
        assert [s["base_offset"] for s in row["segments"]] == [0, 50]
        inactive, current = row["chunks"]
        assert (inactive["start_offset"], inactive["active"]) == (0, False)
        assert (inactive["first_offset_held"], inactive["last_offset_held"]) == (0, 9)
        assert inactive["bytes_held"] == row["segments"][0]["size_bytes"]
        assert (current["start_offset"], current["active"]) == (50, True)
        assert (current["first_offset_held"], current["last_offset_held"]) == (50, 54)
        assert current["bytes_held"] == row["segments"][1]["size_bytes"]
        assert row["size_bytes"] == inactive["bytes_held"] + current["bytes_held"]
    finally:
        log.close()


def test_a_chunk_retention_removed_is_held_nowhere(tmp_path: Path) -> None:
    log = UnifiedLog.open(tmp_path / "orders-0", TOPIC_ID, LogConfig())
    try:
        log.append_as_follower(build_batch(records(10), base_offset=0, partition_leader_epoch=0))
        log.roll()
        log.append_as_follower(build_batch(records(5), base_offset=10, partition_leader_epoch=0))
        log.delete_range(0, 9)
        active = partition(0, (0,))._replace(start_offset=10)
        image = with_topic(cluster(0), active, chunk(0, 0, 9, (0,)))
        (row,) = local_replicas({("orders", 0): log}, image)
        inactive, current = row["chunks"]
        assert (inactive["first_offset_held"], inactive["last_offset_held"],
                inactive["bytes_held"]) == (-1, -1, 0)
        assert (current["first_offset_held"], current["last_offset_held"]) == (10, 14)
    finally:
        log.close()


def test_a_directory_of_a_deleted_topic_lists_no_chunks(tmp_path: Path) -> None:
    log = UnifiedLog.open(tmp_path / "gone-0", TOPIC_ID, LogConfig())
    try:
        (row,) = local_replicas({("gone", 0): log}, cluster(0))
        assert row["chunks"] == [] and row["log_end_offset"] == 0
    finally:
        log.close()
