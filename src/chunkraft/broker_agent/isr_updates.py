"""IsrUpdates: the leader's high watermark and ISR changes (Kafka's ``Partition.maybeExpandIsr``,
``maybeShrinkIsr`` and ``AlterPartitionManager`` in one small place).

The HW of a led partition is the minimum LEO over the maximal ISR and never goes back. A
follower fetch moves its LEO and may expand the ISR; a periodic check shrinks it of followers
that lag more than ``replica.lag.time.max.ms``. Each change is one AlterPartition to the
controller (one in flight per partition); the answer, or later the image, confirms it. A refused
or failed change is not retried before ``replica.fetch.backoff.ms``: otherwise every follower
fetch would be a controller call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from chunkraft.broker_agent.background import logged
from chunkraft.broker_agent.partition import Partition
from chunkraft.broker_agent.partition_registry import PartitionRegistry
from chunkraft.broker_agent.peer_client import ControllerChannelLike
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.error_codes import Errors
from chunkraft.protocol.brokers import (
    AlterPartitionBrokerState,
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionTopicData,
)
from chunkraft.records.uuids import kafka_uuid_str

__all__ = ["ALTER_PARTITION_PATH", "IsrUpdates"]

log = logging.getLogger(__name__)

ALTER_PARTITION_PATH = "/controller/v1/alter-partition"


class IsrUpdates:
    """High watermarks and ISR changes of the partitions this broker leads.

    Not thread-safe: every method runs on the broker's main event loop; AlterPartition calls
    run as tasks of that loop (:attr:`tasks`, cancelled by the ReplicaManager's stop).
    """

    def __init__(self, registry: PartitionRegistry, config: ReplicationConfig,
                 controller: ControllerChannelLike, broker_epoch: Callable[[], int],
                 time_ms: Callable[[], int]) -> None:
        self.registry = registry
        self.config = config
        self.controller = controller
        self.broker_epoch = broker_epoch
        self.time_ms = time_ms
        self.tasks: set[asyncio.Task[None]] = set()

    def advance_high_watermark(self, partition: Partition) -> None:
        """Leader: HW = min LEO over the maximal ISR, never backwards."""
        tracker = partition.tracker
        if tracker is None or not partition.is_leader:
            return
        log_ = partition.log
        new_hw = tracker.high_watermark(log_.log_end_offset, log_.high_watermark)
        new_hw = min(new_hw, log_.log_end_offset)
        if new_hw > log_.high_watermark:
            log_.update_high_watermark(new_hw)
            partition.signal.notify()

    def record_follower_fetch(self, partition: Partition, replica_id: int, fetch_offset: int,
                              replica_epoch: int) -> None:
        """A follower fetched: its LEO moves, the HW may advance, the ISR may expand."""
        tracker = partition.tracker
        if tracker is None:
            return
        tracker.record_fetch(replica_id, fetch_offset, partition.log.log_end_offset,
                             replica_epoch, self.time_ms())
        self.advance_high_watermark(partition)
        if replica_id not in tracker.isr and not partition.alter_in_flight and \
                self.time_ms() >= partition.alter_retry_at_ms:
            expand = tracker.expand_candidates(partition.log.high_watermark,
                                               partition.leader_epoch_start)
            if replica_id in expand:
                self.alter_isr(partition, (*tracker.isr, replica_id))

    def check_isr(self) -> None:
        """Shrinks the ISR of every led partition whose followers lag (called periodically)."""
        now = self.time_ms()
        for partition in self.registry.partitions.values():
            tracker = partition.tracker
            if tracker is None or not partition.is_leader or partition.alter_in_flight \
                    or now < partition.alter_retry_at_ms:
                continue
            out = tracker.shrink_candidates(partition.log.log_end_offset,
                                            self.config.replica_lag_time_max_ms, now)
            if out:
                self.alter_isr(partition, tuple(b for b in tracker.isr if b not in out))

    def alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        """Sends one AlterPartition (one in flight per partition); the image confirms it."""
        tracker = partition.tracker
        record = partition.record
        if tracker is None or record is None:
            return
        partition.alter_in_flight = True
        tracker.pending_isr = new_isr
        states = tuple(AlterPartitionBrokerState(
            broker_id=b,
            broker_epoch=self.broker_epoch() if b == self.registry.node_id
            else tracker.broker_epoch_of(b),
        ) for b in new_isr)
        request = AlterPartitionRequest(
            broker_id=self.registry.node_id,
            broker_epoch=self.broker_epoch(),
            topics=(AlterPartitionTopicData(
                topic_id=kafka_uuid_str(partition.topic_id),
                partitions=(AlterPartitionPartitionData(
                    partition_index=partition.index,
                    leader_epoch=record.leader_epoch,
                    new_isr_with_epochs=states,
                    partition_epoch=record.partition_epoch,
                ),),
            ),),
        )
        task = asyncio.get_running_loop().create_task(
            logged(lambda: self._send_alter(partition, record.leader_epoch, request),
                   f"AlterPartition {partition.label}"))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _send_alter(self, partition: Partition, leader_epoch: int,
                          request: AlterPartitionRequest) -> None:
        try:
            answer = AlterPartitionResponse.model_validate(
                await self.controller.call(ALTER_PARTITION_PATH, request.model_dump(mode="json")))
        except Exception as error:
            log.info("AlterPartition for %s failed: %s", partition.label, error)
            answer = None
        if partition.closed or not partition.is_leader or partition.leader_epoch != leader_epoch:
            return
        tracker = partition.tracker
        assert tracker is not None
        result = None
        if answer is not None and answer.error_code == 0 and answer.topics and \
                answer.topics[0].partitions:
            result = answer.topics[0].partitions[0]
        if result is not None and result.error_code == 0 and partition.record is not None:
            if result.partition_epoch >= partition.record.partition_epoch:
                partition.record = partition.record._replace(
                    isr=result.isr, partition_epoch=result.partition_epoch)
                tracker.set_isr(result.isr)
        else:
            if result is not None:
                log.info("AlterPartition for %s refused: %s %s", partition.label,
                         Errors.for_code(result.error_code).name, result.error_message)
            tracker.pending_isr = None
            # A refused or failed change (an ineligible replica, a controller away) is not
            # retried on every follower fetch: that would be a controller call per fetch.
            partition.alter_retry_at_ms = self.time_ms() + self.config.replica_fetch_backoff_ms
        partition.alter_in_flight = False
        self.advance_high_watermark(partition)
        partition.signal.notify()
