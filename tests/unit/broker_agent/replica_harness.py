"""In-process brokers for ReplicaManager tests: real logs in tmp dirs, an in-memory controller
that runs the real controller operations on its image, and peers that call each other directly.

The fake controller commits each operation's records as one batch (through the record codec, as
the quorum would), builds the MetadataDelta and hands it to every running broker's
``apply_delta`` before answering, like a metadata stream with no lag.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from chunkraft.broker_agent.coordinator.groups.coordinator import OFFSETS_TOPIC
from chunkraft.broker_agent.peer_client import PeerUnavailable
from chunkraft.broker_agent.replica_manager import ReplicaManager
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.storage import LogConfig, LogManager
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.controller.operations.alter_partition import alter_partition
from chunkraft.controller.operations.chunk_sizes import ChunkSizeTable, report_chunk_sizes
from chunkraft.controller.operations.chunks import (
    alter_chunk_assignments,
    chunk_replica_state,
    create_chunks,
)
from chunkraft.controller.result import ControllerResult
from chunkraft.dataplane.record_batch import build_batch, decode_records, iter_batches
from chunkraft.protocol.brokers import AlterPartitionRequest
from chunkraft.protocol.chunk_sizes import ChunkSizesRequest
from chunkraft.protocol.chunks import (
    AlterChunkAssignment,
    AlterChunkAssignmentsRequest,
    ChunkReplicaStateRequest,
    CreateChunksRequest,
)
from chunkraft.protocol.data_plane import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProducePartitionData,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceTopicData,
)
from chunkraft.records import (
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    decode_record,
    encode_record,
)

TOPIC = "orders"
TOPIC_ID = uuid.UUID(int=0xC0FFEE)

FAST = ReplicationConfig(
    replica_lag_time_max_ms=2000,
    replica_fetch_wait_max_ms=50,
    replica_fetch_backoff_ms=20,
    chunk_roll_timeout_ms=3000,
)


class FakeController:
    """The controller as brokers see it: ``call(path, body)`` runs the real operation."""

    def __init__(self) -> None:
        self.image = MetadataImage.EMPTY
        self.brokers: dict[int, ReplicaManager] = {}
        self.calls: list[str] = []
        self.deltas: list[MetadataDelta] = []
        self.apply_twice = False  # as a metadata stream re-delivering each delta
        self.chunk_sizes = ChunkSizeTable()  # the leader's memory of the brokers' size reports

    async def commit(self, records: list[Any]) -> MetadataDelta:
        delta = MetadataDelta(self.image)
        delta.replay_all(decode_record(encode_record(r)) for r in records)
        self.image = delta.apply()
        self.deltas.append(delta)
        for manager in list(self.brokers.values()):
            await manager.apply_delta(delta, self.image)
            if self.apply_twice:
                await manager.apply_delta(delta, self.image)
        return delta

    async def _run(self, result: ControllerResult[Any]) -> dict[str, Any]:
        if result.records:
            await self.commit(list(result.records))
        answer: dict[str, Any] = result.response.model_dump(mode="json")
        return answer

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(path)
        if path.endswith("/alter-partition"):
            return await self._run(alter_partition(
                self.image, AlterPartitionRequest.model_validate(body)))
        if path.endswith("/create-chunks"):
            return await self._run(create_chunks(
                self.image, CreateChunksRequest.model_validate(body)))
        if path.endswith("/chunk-replica-state"):
            return await self._run(chunk_replica_state(
                self.image, ChunkReplicaStateRequest.model_validate(body)))
        if path.endswith("/chunk-sizes"):
            return await self._run(report_chunk_sizes(
                self.image, ChunkSizesRequest.model_validate(body), self.chunk_sizes))
        raise AssertionError(f"unexpected controller call {path}")

    async def move_chunk(self, start: int, broker_ids: tuple[int, ...]) -> None:
        result = alter_chunk_assignments(self.image, AlterChunkAssignmentsRequest(chunks=(
            AlterChunkAssignment(topic_name=TOPIC, partition_id=0, start_offset=start,
                                 broker_ids=broker_ids),)))
        assert result.response.results[0].error_code == 0, result.response
        await self._run(result)


class InMemoryPeers:
    """PeerClientLike calling the other managers directly (through JSON, as over HTTP)."""

    def __init__(self, brokers: dict[int, ReplicaManager]) -> None:
        self.brokers = brokers
        self.down: set[int] = set()

    def _target(self, broker_id: int) -> ReplicaManager:
        manager = self.brokers.get(broker_id)
        if manager is None or broker_id in self.down:
            raise PeerUnavailable(f"broker {broker_id} is down")
        return manager

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        answer = await self._target(broker_id).fetch(
            FetchRequest.model_validate_json(request.model_dump_json()))
        return FetchResponse.model_validate_json(answer.model_dump_json())

    async def offsets_for_leader_epoch(
        self, broker_id: int, request: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse:
        return self._target(broker_id).offsets_for_leader_epoch(request)


BROKER_EPOCH_BASE = 100


class Cluster:
    """Brokers 0..n-1 with logs under ``root``, one FakeController, in-memory peers."""

    def __init__(self, root: Path, count: int = 3, config: ReplicationConfig = FAST,
                 log_config: LogConfig | None = None) -> None:
        self.root = root
        self.config = config
        self.log_config = log_config or LogConfig()
        self.controller = FakeController()
        self.managers: dict[int, ReplicaManager] = {}
        self.peers = InMemoryPeers(self.managers)
        self.count = count

    def log_manager(self, broker_id: int) -> LogManager:
        logs = LogManager(self.root / f"broker-{broker_id}", self.log_config)
        logs.load_all()
        return logs

    async def start_broker(self, broker_id: int) -> ReplicaManager:
        manager = ReplicaManager(broker_id, self.log_manager(broker_id), self.config,
                                 self.controller, self.peers,
                                 lambda: BROKER_EPOCH_BASE + broker_id,
                                 caught_up=lambda: True)
        self.managers[broker_id] = manager
        self.controller.brokers[broker_id] = manager
        await manager.start()
        # The first delta after a start: everything from the empty image.
        delta = MetadataDelta(MetadataImage.EMPTY)
        delta.replay_all(self.controller.image.to_records())
        await manager.apply_delta(delta, self.controller.image)
        return manager

    async def stop_broker(self, broker_id: int) -> None:
        manager = self.managers.pop(broker_id)
        self.controller.brokers.pop(broker_id, None)
        await manager.stop()
        manager.logs.close_all()

    async def start(self, replicas: tuple[int, ...] = (0,)) -> None:
        for broker_id in range(self.count):
            await self.start_broker(broker_id)
        await self.controller.commit(
            [RegisterBrokerRecord(broker_id=b, broker_epoch=BROKER_EPOCH_BASE + b, fenced=False)
             for b in range(self.count)]
            + [TopicRecord(name=TOPIC, topic_id=TOPIC_ID),
               PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=replicas,
                               isr=replicas, leader=replicas[0], leader_epoch=0,
                               partition_epoch=0)])

    async def close(self) -> None:
        for broker_id in list(self.managers):
            await self.stop_broker(broker_id)


def batch(values: list[bytes], **kwargs: Any) -> bytes:
    records = [(b"k" + v, v, 1_000 + i) for i, v in enumerate(values)]
    return build_batch(records, **kwargs)


async def produce(manager: ReplicaManager, values: list[bytes], *, acks: int = -1,
                  timeout_ms: int = 5000, **kwargs: Any) -> ProducePartitionResponse:
    response = await manager.produce(ProduceRequest(acks=acks, timeout_ms=timeout_ms, topics=(
        ProduceTopicData(name=TOPIC, partition_count=1, partitions=(
            ProducePartitionData(index=0, records=batch(values, **kwargs)),)),)))
    return response.topics[0].partitions[0]


async def two_chunks(cluster: Cluster, old: list[bytes], new: list[bytes]) -> None:
    """Partition 0 in two chunks: ``old`` produced on broker 0, the active chunk cut onto
    broker 1 (at epoch 1), then ``new`` produced there."""
    assert (await produce(cluster.managers[0], old)).error_code == 0
    assert await cluster.managers[0].roll_chunk(TOPIC, 0, (1,), 1) == (0, None)
    assert (await produce(cluster.managers[1], new)).error_code == 0


async def consume(manager: ReplicaManager, offset: int, *, isolation_level: int = 0,
                  max_wait_ms: int = 0) -> FetchPartitionResponse:
    response = await manager.fetch(FetchRequest(
        max_wait_ms=max_wait_ms, isolation_level=isolation_level, topics=(
            FetchTopic(topic=TOPIC, partitions=(FetchPartition(partition=0,
                                                               fetch_offset=offset),)),)))
    return response.responses[0].partitions[0]


def values_of(answer: FetchPartitionResponse, *, skip_control: bool = True) -> list[bytes]:
    out: list[bytes] = []
    for header, view in iter_batches(answer.records):
        if skip_control and header.is_control:
            continue
        out.extend(r.value or b"" for r in decode_records(view))
    return out


def offsets_of(answer: FetchPartitionResponse) -> list[int]:
    out: list[int] = []
    for _, view in iter_batches(answer.records):
        out.extend(r.offset for r in decode_records(view))
    return out


def run_scenario(scenario: Coroutine[Any, Any, None], timeout: float = 30.0) -> None:
    """Runs one test's coroutine in a fresh event loop, failing it after ``timeout`` seconds."""
    asyncio.run(asyncio.wait_for(scenario, timeout=timeout))


async def eventually(check: Callable[[], bool | Awaitable[bool]], what: str,
                     timeout_s: float = 5.0) -> None:
    """Polls ``check`` (bounded in time) until it holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        outcome = check()
        if not isinstance(outcome, bool):
            outcome = await outcome
        if outcome:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def offsets_cluster(root: Path) -> Cluster:
    """One broker leading partition 0 of ``__consumer_offsets``: what a group coordinator
    needs to answer."""
    offsets_id = uuid.UUID(int=0x0FF5E77)
    cluster = Cluster(root, count=1)
    await cluster.start(replicas=(0,))
    await cluster.controller.commit([
        TopicRecord(name=OFFSETS_TOPIC, topic_id=offsets_id),
        PartitionRecord(partition_id=0, topic_id=offsets_id, replicas=(0,), isr=(0,),
                        leader=0, leader_epoch=0, partition_epoch=0)])
    return cluster
