"""The ReplicaManager: makes this broker's replicas what the metadata says they are.

Its only input for replica changes is ``compute_local_changes(delta.topics_delta, node_id)``
(``controller/image/local_changes.py``), applied in the order the KIP gives: deletes, leaders,
followers, chunk stops, chunk creates, chunk deletes. Everything it keeps is derived from the
image and the logs on disk, so applying the same delta twice, or the first delta after a restart
(an empty image to the current one), leaves the same state: a copy is finished when the log
holds the chunk's range, a delete checks the topic id, and the first delta also removes what
no chunk of the image keeps on this broker.

This module is the façade; the work is in one module per seam, which it imports one way:

- ``partition_registry``: the partitions, the image, the log store;
- ``replica_roles``: leader / follower transitions, partition deletes, follower fetchers;
- ``chunk_replicas``: inactive chunks (stops, copies, deletes), reconcile, retention;
- ``isr_updates``: high watermarks and AlterPartition; ``chunk_reports``: ChunkReplicaState;
  ``chunk_size_reports``: the bytes held per chunk, for the controller's ``retention.bytes``;
- ``topic_configs``: each topic's effective configuration on this broker, followed live from
  the image (``min.insync.replicas`` and ``max.message.bytes`` on produce, segment and
  retention settings and ``message.timestamp.type`` on every log of the topic, the chunk copy
  throttle);
- ``produce_path``, ``fetch_path``, ``offsets_path``, ``chunk_roll``: the data plane, over the
  small :class:`~chunkraft.broker_agent.replica_host.ReplicaHost` protocol this class
  implements (they never import it).

Background work (ISR checks, retention, flushes, HW checkpoints, chunk size reports) runs as
tasks of the broker's main event loop, which also serves the data plane; heartbeats do not run
there (see ``lifecycle_thread``). The high-watermark checkpoints' file I/O (two fsyncs per
changed log, every ``replica.high.watermark.checkpoint.interval.ms``) runs on one disk worker
thread; see :meth:`ReplicaManager.checkpoint_high_watermarks_off_loop` for why that is safe.
Flushes stay on the loop: they write index entries that appends change (a worker would need a
lock on every append), and by default they never run (``log.flush.interval.*`` unset:
replication, not fsync, keeps acknowledged data, as in Kafka). Not thread-safe otherwise, and it
needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from chunkraft.broker_agent import chunk_roll, fetch_path, offsets_path, produce_path
from chunkraft.broker_agent.chunk_replicas import ChunkReplicas
from chunkraft.broker_agent.chunk_reports import ChunkReports
from chunkraft.broker_agent.chunk_size_reports import ChunkSizeReports
from chunkraft.broker_agent.failures import failed
from chunkraft.broker_agent.isr_updates import IsrUpdates
from chunkraft.broker_agent.partition import Partition, Role
from chunkraft.broker_agent.partition_registry import PartitionRegistry
from chunkraft.broker_agent.peer_client import ControllerChannelLike, PeerClientLike
from chunkraft.broker_agent.read_replica import ConsumerReads
from chunkraft.broker_agent.replica_roles import ReplicaRoles
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.throttle import Throttle
from chunkraft.broker_agent.topic_configs import EffectiveConfigs, TopicConfig, static_values
from chunkraft.controller.image import MetadataDelta, MetadataImage, compute_local_changes
from chunkraft.protocol.data_plane import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import LogManager, UnifiedLog

__all__ = ["ReplicaManager"]

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaManager:
    """This broker's replicas: applies metadata deltas, serves the data plane, replicates.

    ``broker_epoch()`` is the current registration epoch (-1 before registering); ``time_ms``
    the wall clock in milliseconds (tests pass a fake). ``caught_up()`` says the image has
    reached the controller's committed metadata (the metadata follower's ``caught_up``): only
    then is :meth:`reconcile` safe, since an image still replaying the log may not yet show a
    topic or a chunk moved here whose data is on disk. Without it, reconcile runs only when
    called. See the module docstring for the contract; every method must be called on the
    broker's main event loop.
    """

    def __init__(
        self,
        node_id: int,
        logs: LogManager,
        config: ReplicationConfig,
        controller: ControllerChannelLike,
        peers: PeerClientLike,
        broker_epoch: Callable[[], int],
        *,
        time_ms: Callable[[], int] = _now_ms,
        caught_up: Callable[[], bool] | None = None,
    ) -> None:
        self.node_id = node_id
        self.logs = logs
        self.config = config
        self.controller = controller
        self.peers = peers
        self.broker_epoch = broker_epoch
        self.time_ms = time_ms
        self.caught_up = caught_up
        self.registry = PartitionRegistry(node_id, logs)
        self.isr = IsrUpdates(self.registry, config, controller, broker_epoch, time_ms)
        self.reports = ChunkReports(self.registry, controller, broker_epoch,
                                    config.replica_fetch_backoff_ms / 1000)
        self.chunks = ChunkReplicas(self.registry, config, peers, broker_epoch, time_ms,
                                    self.isr, self.reports)
        self.roles = ReplicaRoles(self.registry, config, peers, broker_epoch, time_ms,
                                  self.isr, self.chunks)
        self.configs = EffectiveConfigs(node_id, logs.config, static_values(logs.config, config))
        logs.config_for = self.configs.log_config
        self.size_reports = ChunkSizeReports(self.registry, logs, controller, broker_epoch)
        self._reconciled = False
        self._background: list[asyncio.Task[None]] = []
        self._disk: ThreadPoolExecutor | None = None  # the disk worker, from start() to stop()

    @property
    def image(self) -> MetadataImage:
        """The image the replicas were last made to match."""
        return self.registry.image

    @image.setter
    def image(self, image: MetadataImage) -> None:
        self.registry.image = image

    @property
    def partitions(self) -> dict[tuple[str, int], Partition]:
        """This broker's partitions by (topic, index)."""
        return self.registry.partitions

    @property
    def throttle(self) -> Throttle:
        """The byte rate shared by every chunk copy."""
        return self.chunks.throttle

    # ------------------------------------------------------------------ metadata

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """The metadata follower's listener: same as :meth:`apply_delta`."""
        await self.apply_delta(delta, image)

    async def apply_delta(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Applies what ``delta`` (which produced ``image``) asks of this broker's replicas.

        Idempotent: the same delta again, or the first delta after a restart, gives the same
        state. Once the image has caught up (``caught_up()``), the logs on disk are reconciled
        with it, once (see :meth:`reconcile`).
        """
        changes = compute_local_changes(delta.topics_delta, self.node_id)
        self.image = image
        try:
            self._follow_configs(image)
        except Exception:
            log.exception("applying the configurations of the image failed")
        try:
            self._maybe_reconcile()
        except Exception:
            log.exception("reconciling the logs with the image failed")
        # One failing partition (a disk error) must not keep the others from their changes.
        _each("delete", changes.deletes.items(),
              lambda tp, name: self.roles.delete_partition(name, tp))
        _each("lead", changes.leaders.items(), self.roles.become_leader)
        _each("follow", changes.followers.items(), self.roles.become_follower)
        _each("stop chunk", changes.chunk_stops.items(), self.chunks.stop_chunk)
        _each("create chunk", changes.chunk_creates.items(), self.chunks.create_chunk)
        _each("delete chunk", changes.chunk_deletes.items(), self.chunks.delete_chunk)

    def _follow_configs(self, image: MetadataImage) -> None:
        """Applies the image's configurations live when they changed: every open log takes its
        topic's values (segment size and age for the segments it starts from now, retention
        at its next run, the largest batch at its next append) and chunk copies the broker's
        throttle. Cheap otherwise: one identity check."""
        if not self.configs.refresh(image.configs):
            return
        self.chunks.throttle.set_rate(self.configs.copy_throttle())
        for (name, _), log_ in self.logs.logs().items():
            config = self.configs.log_config(name)
            if log_.config != config:
                log_.config = config

    def topic_config(self, topic: str) -> TopicConfig:
        """Topic ``topic``'s effective values on this broker (cached until configs change)."""
        return self.configs.topic(topic)

    def _maybe_reconcile(self) -> None:
        if not self._reconciled and self.caught_up is not None and self.caught_up():
            self._reconciled = True
            self.reconcile(self.image)

    def reconcile(self, image: MetadataImage) -> None:
        """Removes from disk what no chunk of ``image`` keeps on this broker (see
        :meth:`ChunkReplicas.reconcile`)."""
        self.chunks.reconcile(image)

    def record_follower_fetch(self, partition: Partition, replica_id: int, fetch_offset: int,
                              replica_epoch: int) -> None:
        """A follower fetched: its LEO moves, the HW may advance, the ISR may expand."""
        self.isr.record_follower_fetch(partition, replica_id, fetch_offset, replica_epoch)

    def check_isr(self) -> None:
        """Shrinks the ISR of every led partition whose followers lag (called periodically)."""
        self.isr.check_isr()

    def run_retention(self) -> None:
        """Applies retention to every log; asks to drop chunk replicas it emptied."""
        self.chunks.run_retention()

    # ------------------------------------------------------------------ data plane

    async def produce(self, request: ProduceRequest) -> ProduceResponse:
        """Appends to the active chunks this broker leads (see ``produce_path``)."""
        return await produce_path.produce(self, request)

    async def fetch(self, request: FetchRequest,
                    reads: ConsumerReads | None = None) -> FetchResponse:
        """Consumer, follower and chunk copier reads (see ``fetch_path``); ``reads`` when the
        request is a stock Kafka consumer's (``read_replica``)."""
        return await fetch_path.fetch(self, request, reads)

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        return offsets_path.list_offsets(self, request)

    def offsets_for_leader_epoch(
        self, request: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse:
        return offsets_path.offsets_for_leader_epoch(self, request)

    async def write_txn_markers(self, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        return await produce_path.write_txn_markers(self, request)

    async def roll_chunk(self, topic: str, partition: int, broker_ids: tuple[int, ...],
                         leader: int) -> tuple[int, str | None]:
        """Cuts the active chunk this broker leads (DESIGN.md section 3): error code, message.
        An unexpected failure is a Kafka error too (one log line), never an exception."""
        try:
            return await chunk_roll.roll_chunk(self, topic, partition, broker_ids, leader)
        except Exception as error:
            failure, message = failed(f"chunk roll of {topic}-{partition}", error)
            return failure.code, message

    def after_leader_append(self, partition: Partition) -> None:
        """After an append on a leader: the HW may move (a single-member ISR), waiters wake."""
        self.isr.advance_high_watermark(partition)
        partition.signal.notify()

    def status_counts(self) -> tuple[int, int, int]:
        """(partitions led, partitions followed, inactive chunk replicas) on this broker."""
        leaders = sum(1 for p in self.partitions.values() if p.role is Role.LEADER)
        followers = sum(1 for p in self.partitions.values() if p.role is Role.FOLLOWER)
        inactive = 0
        for partition in self.partitions.values():
            _, chunks = self.registry.image_partition(partition)
            inactive += sum(1 for c in chunks if self.node_id in c.replicas)
        return leaders, followers, inactive

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Starts the periodic work: ISR checks, retention, flushes, HW checkpoints, chunk size
        reports."""
        self.reports.stopped = False
        loop = asyncio.get_running_loop()
        self._disk = ThreadPoolExecutor(max_workers=1,
                                        thread_name_prefix=f"broker-{self.node_id}-disk")
        isr_every = max(self.config.replica_lag_time_max_ms / 2, 10) / 1000
        self._background = [
            loop.create_task(_every(isr_every, self.check_isr, "ISR check")),
            loop.create_task(_every(self.config.retention_check_interval_ms / 1000,
                                    self.run_retention, "retention")),
            loop.create_task(_every(self.config.flush_check_interval_ms / 1000,
                                    self._flush, "flush")),
            loop.create_task(_every_async(self.config.hw_checkpoint_interval_ms / 1000,
                                          self.checkpoint_high_watermarks_off_loop,
                                          "HW checkpoint")),
            # The controller's retention.bytes across chunks needs the chunks' sizes.
            loop.create_task(_every_async(self.config.retention_check_interval_ms / 1000,
                                          self.size_reports.send, "chunk size reports")),
        ]

    async def stop(self) -> None:
        """Stops every task (fetchers, copies, periodic work) and checkpoints HWs; the caller
        closes the logs."""
        self.reports.stopped = True
        tasks: list[asyncio.Task[Any]] = list(self._background)
        for fetcher in self.roles.fetchers.values():
            fetcher.members.clear()
            if fetcher.task is not None:
                tasks.append(fetcher.task)
        self.roles.fetchers.clear()
        for partition in self.partitions.values():
            tasks.extend(partition.copies.values())
            partition.fetcher = None
            partition.copies.clear()
            partition.signal.notify()
        tasks.extend(self.isr.tasks)
        if self.reports.task is not None:
            tasks.append(self.reports.task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background = []
        disk, self._disk = self._disk, None
        if disk is not None:
            # A checkpoint the cancelled task handed over still runs: wait for it, so the one
            # below (and the logs' close after) are the only writers of those files.
            await asyncio.to_thread(disk.shutdown, True)
        self.checkpoint_high_watermarks()

    def checkpoint_high_watermarks(self) -> None:
        """Writes every changed high watermark now, on the calling thread (the loop)."""
        for partition in list(self.partitions.values()):
            if not partition.closed:
                for log_ in partition.all_logs():
                    log_.checkpoint_high_watermark()

    async def checkpoint_high_watermarks_off_loop(self) -> None:
        """Writes every changed high watermark on the disk worker thread.

        Why this is safe while the loop goes on appending, deleting and recreating logs:

        - the values are read on the loop (``high_watermark_checkpoint_due``); the worker only
          writes files and touches no log state; the loop records what was written afterwards;
        - one worker thread, and :meth:`stop` waits for it before the last checkpoint and the
          logs' close, so each checkpoint file has one writer at a time;
        - each directory is opened on the loop, with the value, and the worker writes relative
          to that descriptor: a log deleted meanwhile was renamed before removal, so the file
          goes to the doomed directory (or fails), never into a new log created at the same
          path (a topic recreated under the same name); a doomed directory the write kept from
          being removed is removed at the next start (``LogManager.load_all``);
        - a HW read a moment ago may be older than the current one: a checkpoint may always lag
          (the next one catches up), and it never runs ahead of the HW it was read from.

        Without a worker (not started) it writes on the loop, as :meth:`checkpoint_high_watermarks`.
        """
        disk = self._disk
        if disk is None:
            self.checkpoint_high_watermarks()
            return
        due: list[tuple[UnifiedLog, int, int]] = []
        try:
            for partition in list(self.partitions.values()):
                if partition.closed:
                    continue
                for log_ in partition.all_logs():
                    value = log_.high_watermark_checkpoint_due()
                    if value is None:
                        continue
                    try:
                        dir_fd = os.open(log_.dir, os.O_RDONLY | os.O_DIRECTORY)
                    except OSError as error:
                        log.warning("HW checkpoint of %s: %s", partition.label, error)
                        continue
                    due.append((log_, dir_fd, value))
        except BaseException:
            for _, dir_fd, _ in due:
                os.close(dir_fd)
            raise
        if not due:
            return
        job = asyncio.get_running_loop().run_in_executor(disk, _write_checkpoints, due)
        # Shielded: a cancelled caller (stop) leaves the worker to finish what it was given.
        for log_, value in await asyncio.shield(job):
            log_.high_watermark_checkpointed(value)

    def _flush(self) -> None:
        self._maybe_reconcile()
        now = self.time_ms()
        for partition in list(self.partitions.values()):
            if not partition.closed:
                for log_ in partition.all_logs():
                    log_.maybe_flush(now)


K = TypeVar("K")
V = TypeVar("V")


def _each(what: str, items: Iterable[tuple[K, V]], action: Callable[[K, V], None]) -> None:
    for key, value in items:
        try:
            action(key, value)
        except Exception:
            log.exception("%s %s failed", what, key)


def _write_checkpoints(due: list[tuple[UnifiedLog, int, int]]) -> list[tuple[UnifiedLog, int]]:
    """On the disk worker: writes each (log, directory, HW); closes every directory; returns
    what was written. A failure (the directory deleted meanwhile, a disk error) is one log
    line: the next round tries again if the log still exists."""
    written: list[tuple[UnifiedLog, int]] = []
    for log_, dir_fd, value in due:
        try:
            log_.write_high_watermark_at(dir_fd, value)
            written.append((log_, value))
        except OSError as error:
            log.warning("HW checkpoint in %s failed: %s", log_.dir, error)
        finally:
            os.close(dir_fd)
    return written


async def _every_async(period_s: float, action: Callable[[], Awaitable[None]],
                       name: str) -> None:
    while True:
        await asyncio.sleep(period_s)
        try:
            await action()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s failed", name)


async def _every(period_s: float, action: Callable[[], None], name: str) -> None:
    while True:
        await asyncio.sleep(period_s)
        try:
            action()
        except Exception:
            log.exception("%s failed", name)
