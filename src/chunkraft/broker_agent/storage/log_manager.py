"""LogManager: every partition log of one broker under its log directory.

Directories are named ``<topic>-<partition>`` as in Kafka. Deleting a log first renames its
directory to ``<topic>-<partition>.<uuid>-delete`` (one atomic step) and then removes it, so a
crash mid-deletion never leaves a half-deleted log that looks live; :meth:`LogManager.load_all`
finishes such deletions. Not thread-safe: the broker's event loop owns it.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from chunkraft.broker_agent.storage.checkpoint import fsync_dir, read_text
from chunkraft.broker_agent.storage.config import LogConfig, wall_clock_ms
from chunkraft.broker_agent.storage.errors import InconsistentTopicIdError
from chunkraft.broker_agent.storage.log_state import PARTITION_METADATA
from chunkraft.broker_agent.storage.unified_log import UnifiedLog

__all__ = ["LogManager", "log_dir_name", "parse_log_dir_name"]

_DELETE_SUFFIX = "-delete"


def log_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>``."""
    return f"{topic}-{partition}"


def parse_log_dir_name(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` of a log directory name, or None for anything else."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


class LogManager:
    """Opens, creates and deletes the logs of one broker; one instance per broker."""

    def __init__(
        self,
        log_dir: Path,
        config: LogConfig,
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        """Manage logs under ``log_dir`` (created when missing) with ``config`` for all, unless
        ``config_for`` (set later) gives a topic's logs their own."""
        self.log_dir = log_dir
        self.config = config
        self.config_for: Callable[[str], LogConfig] | None = None
        """The settings of the log of a topic (its live configuration); None: ``config``."""
        self._clock = now_ms
        self._logs: dict[tuple[str, int], UnifiedLog] = {}
        log_dir.mkdir(parents=True, exist_ok=True)

    def load_all(self) -> dict[tuple[str, int], UnifiedLog]:
        """Open (and recover) every log directory; finish interrupted deletions."""
        for path in sorted(self.log_dir.iterdir()):
            if not path.is_dir():
                continue
            if path.name.endswith(_DELETE_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            key = parse_log_dir_name(path.name)
            if key is None or key in self._logs:
                continue
            topic_id = _read_topic_id(path)
            if topic_id is None:
                continue  # not a log directory we wrote (or its metadata never landed)
            self._logs[key] = UnifiedLog.open(path, topic_id, self._config_of(key[0]),
                                              now_ms=self._clock)
        return dict(self._logs)

    def get(self, topic: str, partition: int) -> UnifiedLog | None:
        """The open log of the partition, if this broker has one."""
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, topic_id: uuid.UUID) -> UnifiedLog:
        """The partition's log, created when missing.

        A log (open or on disk) of another topic id is stale, from a deleted topic of the same
        name: it is deleted and a new empty one created.
        """
        key = (topic, partition)
        log = self._logs.get(key)
        if log is not None:
            if log.topic_id == topic_id:
                return log
            self.delete(topic, partition)
        path = self.log_dir / log_dir_name(topic, partition)
        config = self._config_of(topic)
        try:
            log = UnifiedLog.open(path, topic_id, config, now_ms=self._clock)
        except InconsistentTopicIdError:
            self._remove_dir(path)
            log = UnifiedLog.open(path, topic_id, config, now_ms=self._clock)
        self._logs[key] = log
        return log

    def _config_of(self, topic: str) -> LogConfig:
        return self.config if self.config_for is None else self.config_for(topic)

    def delete(self, topic: str, partition: int) -> bool:
        """Delete the partition's log and its directory; returns whether there was one."""
        log = self._logs.pop((topic, partition), None)
        path = self.log_dir / log_dir_name(topic, partition)
        if log is not None:
            log.close_files()
        if not path.exists():
            return log is not None
        self._remove_dir(path)
        return True

    def _remove_dir(self, path: Path) -> None:
        doomed = path.with_name(f"{path.name}.{uuid.uuid4().hex}{_DELETE_SUFFIX}")
        path.rename(doomed)
        fsync_dir(self.log_dir)
        shutil.rmtree(doomed, ignore_errors=True)

    def logs(self) -> dict[tuple[str, int], UnifiedLog]:
        """Every open log by ``(topic, partition)`` (a copy of the mapping)."""
        return dict(self._logs)

    def flush_all(self) -> None:
        """Flush every log."""
        for log in self._logs.values():
            log.flush()

    def close_all(self) -> None:
        """Close every log (flush, snapshot, checkpoints) and forget them."""
        for log in self._logs.values():
            log.close()
        self._logs.clear()


def _read_topic_id(path: Path) -> uuid.UUID | None:
    text = read_text(path / PARTITION_METADATA)
    if text is None:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            try:
                return uuid.UUID(value.strip())
            except ValueError:
                return None
    return None
