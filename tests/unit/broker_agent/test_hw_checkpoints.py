"""High-watermark checkpoints written by the disk worker thread: the file I/O runs
off the event loop, the loop records what was written, stop waits for the worker, and a log
deleted and recreated under the same name never gets the old log's checkpoint."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from chunkraft.broker_agent.storage.checkpoint import read_offset
from chunkraft.broker_agent.storage.log_state import HIGH_WATERMARK_CHECKPOINT
from chunkraft.broker_agent.storage.unified_log import UnifiedLog
from tests.unit.broker_agent.replica_harness import TOPIC, Cluster, produce, run_scenario


def test_the_checkpoint_is_written_on_the_disk_thread_and_recorded_on_the_loop(
        tmp_path: Path) -> None:
    threads: list[str] = []

    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        try:
            leader = cluster.managers[0]
            assert (await produce(leader, [b"a", b"b", b"c"])).error_code == 0
            log_ = leader.partitions[(TOPIC, 0)].log
            assert log_.high_watermark == 3 and log_.high_watermark_checkpoint_due() == 3
            original = UnifiedLog.write_high_watermark_at

            def spy(dir_fd: int, value: int) -> None:
                threads.append(threading.current_thread().name)
                original(dir_fd, value)

            UnifiedLog.write_high_watermark_at = staticmethod(spy)  # type: ignore[method-assign]
            try:
                await leader.checkpoint_high_watermarks_off_loop()
            finally:
                UnifiedLog.write_high_watermark_at = staticmethod(original)  # type: ignore[method-assign]
            assert read_offset(log_.dir / HIGH_WATERMARK_CHECKPOINT) == 3
            assert log_.high_watermark_checkpoint_due() is None  # recorded: nothing to redo
        finally:
            await cluster.close()

    run_scenario(scenario())
    assert threads == ["broker-0-disk_0"]


def test_a_write_relative_to_the_old_directory_misses_a_recreated_log(tmp_path: Path) -> None:
    old = tmp_path / "t-0"
    old.mkdir()
    dir_fd = os.open(old, os.O_RDONLY | os.O_DIRECTORY)
    try:
        doomed = tmp_path / "t-0.x-delete"
        old.rename(doomed)  # LogManager.delete renames first ...
        old.mkdir()  # ... and the topic is recreated at the same path
        UnifiedLog.write_high_watermark_at(dir_fd, 42)
    finally:
        os.close(dir_fd)
    assert read_offset(doomed / HIGH_WATERMARK_CHECKPOINT) == 42
    assert not (old / HIGH_WATERMARK_CHECKPOINT).exists()


def test_stop_waits_for_the_worker_then_checkpoints_on_the_loop(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        leader = cluster.managers[0]
        assert (await produce(leader, [b"a", b"b"])).error_code == 0
        log_ = leader.partitions[(TOPIC, 0)].log
        path = log_.dir / HIGH_WATERMARK_CHECKPOINT
        task = asyncio.create_task(leader.checkpoint_high_watermarks_off_loop())
        await asyncio.sleep(0)  # handed to the worker
        task.cancel()
        await cluster.stop_broker(0)  # waits for the worker, then writes on the loop
        assert read_offset(path) == 2
        assert not path.with_name(path.name + ".tmp").exists()

    run_scenario(scenario())
