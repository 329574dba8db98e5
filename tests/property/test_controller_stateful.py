"""A stateful property: the real controller operations, at random, against a committed image.

A Hypothesis state machine registers, unfences and fences brokers, creates, expands and deletes
topics, cuts, moves and drops chunks, shrinks and grows ISRs, hands out producer ids and changes
ACLs, each through the operation the controller runs (``chunkraft.controller.operations``), and
commits every result as one batch the way the quorum does (``tests.support.controller.commit``:
through the codec, then replay). Requests are a mix of valid ones and the ways they go wrong:
bad names, duplicates, not-an-increase, stale epochs, fenced or unknown brokers, empty chunks,
inconsistent offsets. After every step the image is checked against the whole record history
and against the invariants of DESIGN.md sections 3 to 5.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from pydantic import BaseModel

from chunkraft.controller.image import (
    PRODUCER_ID_BLOCK_SIZE,
    MetadataDelta,
    MetadataImage,
    TopicImage,
)
from chunkraft.controller.operations import (
    allocate_producer_ids,
    alter_chunk_assignments,
    alter_partition,
    broker_heartbeat,
    chunk_replica_state,
    create_acls,
    create_chunks,
    create_partitions,
    create_topics,
    delete_acls,
    delete_topics,
    fence_broker,
    register_broker,
)
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import (
    AclCreation,
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    CreateAclsRequest,
    DeleteAclsFilter,
    DeleteAclsRequest,
)
from chunkraft.protocol.brokers import (
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopicData,
    BrokerHeartbeatRequest,
    BrokerRegistrationListener,
    BrokerRegistrationRequest,
)
from chunkraft.protocol.chunks import (
    AlterChunkAssignment,
    AlterChunkAssignmentsRequest,
    ChunkReplicaState,
    ChunkReplicaStateItem,
    ChunkReplicaStateRequest,
    CreateChunksPartition,
    CreateChunksRequest,
    CreateChunksTopic,
)
from chunkraft.protocol.producer_ids import AllocateProducerIdsRequest
from chunkraft.protocol.topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DeleteTopicState,
)
from chunkraft.records import (
    ChunkChangeRecord,
    ChunkRecord,
    PriorPartitionEpoch,
    TopicRecord,
    decode_record,
    encode_record,
)
from chunkraft.records.uuids import kafka_uuid_str
from tests.support.controller import commit

CLUSTER_ID = "stateful-test-cluster"
BROKER_IDS = (1, 2, 3, 4, 5)
UNREGISTERED_BROKER = 9
RACKS = ("a", "b", None)
GOOD_NAMES = ("alpha", "beta", "t.one", "t_one")
BAD_NAMES = ("", ".", "..", "x" * 250, "bad name", "caf\u00e9")
PRINCIPALS = ("User:alice", "User:bob")

ChunkKey = tuple[uuid.UUID, int, int]  # topic id, partition id, start offset


class _NoSessions:
    """Every earlier registration's session has expired: a new incarnation may always register."""

    def has_valid_session(self, broker_id: int, broker_epoch: int, now: float) -> bool:
        return False


def replay(records: list[Any], base: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    delta = MetadataDelta(base)
    delta.replay_all(records)
    return delta.apply()


def error_codes(response: BaseModel) -> tuple[int, list[int]]:
    """The response's own error code and those of every item inside it."""
    items: list[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "error_code" in value:
                items.append(value["error_code"])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list | tuple):
            for inner in value:
                walk(inner)

    data = response.model_dump()
    top = data.pop("error_code", 0)
    walk(data)
    return top, items


def outcome(operation: str, code: int, records: tuple[Any, ...] = ()) -> None:
    """Reports what a step did (``--hypothesis-show-statistics`` lists how often)."""
    event(f"{operation}: {Errors.for_code(code).name}" + (" +records" if records else ""))


def chunk_target(chunk: ChunkRecord) -> tuple[int, ...]:
    return tuple(r for r in chunk.replicas if r not in chunk.removing_replicas)


class ControllerMachine(RuleBasedStateMachine):
    """The committed image, the whole record history and a small model of what must hold."""

    def __init__(self) -> None:
        super().__init__()
        self.image = MetadataImage.EMPTY
        self.history: list[Any] = []
        self.epochs: dict[int, int] = {}  # broker id -> epoch of its current registration
        self.incarnations = itertools.count(1)
        self.topic_ids = itertools.count(1)
        self.acl_ids = itertools.count(1)
        self.replication: dict[uuid.UUID, int] = {}  # topic id -> replication factor
        # Every chunk ever cut, per partition, as (start, stop, end): contiguous from offset 0.
        self.cuts: dict[tuple[uuid.UUID, int], list[tuple[int, int, int]]] = {}
        self.dropped: set[ChunkKey] = set()  # chunks a replica dropped itself from
        self.removed: set[ChunkKey] = set()  # chunks whose last replica dropped
        self.blocks: list[tuple[int, int]] = []  # producer id blocks, [start, end)
        self.acl_bindings: set[tuple[Any, ...]] = set()

    # ------------------------------------------------------------------ helpers

    def _new_topic_id(self) -> uuid.UUID:
        return uuid.UUID(int=(0x70 << 120) | next(self.topic_ids))

    def _new_acl_id(self) -> uuid.UUID:
        return uuid.UUID(int=(0xAC << 120) | next(self.acl_ids))

    def _commit(self, result: ControllerResult[Any]) -> MetadataImage:
        """Checks the result's records against its response, then commits them as one batch."""
        if isinstance(result.response, BaseModel):
            top, items = error_codes(result.response)
            if top != 0 or (items and all(code != 0 for code in items)):
                assert result.records == (), (result.response, result.records)
        before = self.image
        self.image = commit(before, result)
        self.history.extend(result.records)
        assert self.image.offset == before.offset + len(result.records)
        return before

    def _topic(self, topic_id: uuid.UUID) -> TopicImage:
        topic = self.image.topics.get(topic_id)
        assert topic is not None
        return topic

    def _chunk(self, topic_id: uuid.UUID, partition_id: int, start: int) -> ChunkRecord | None:
        return self._topic(topic_id).chunk(partition_id, start)

    def _usable(self) -> list[int]:
        return [b.broker_id for b in self.image.brokers
                if not b.fenced and not b.in_controlled_shutdown]

    def _registered(self) -> list[int]:
        return [b.broker_id for b in self.image.brokers]

    def _topics(self) -> list[TopicImage]:
        return list(self.image.topics)

    def _chunks(self) -> list[tuple[TopicImage, ChunkRecord]]:
        return [(topic, chunk) for topic in self.image.topics
                for partition_id in sorted(topic.chunks) for chunk in topic.chunks[partition_id]]

    def _replica_set(self, data: st.DataObject, size: int, prefer_usable: bool) -> tuple[int, ...]:
        """``size`` distinct brokers: usable ones when asked and possible, else any registered
        (possibly fenced) or, rarely, an unregistered one."""
        pool = self._usable() if prefer_usable else self._registered()
        if len(pool) < size:
            pool = self._registered()
        if len(pool) < size or data.draw(st.integers(0, 9), label="unregistered") == 0:
            pool = [*pool, UNREGISTERED_BROKER]
        size = min(size, len(pool))
        return tuple(data.draw(st.permutations(pool), label="brokers")[:size])

    # ------------------------------------------------------------------ brokers

    def _register(self, broker_id: int, rack: str | None) -> None:
        request = BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=CLUSTER_ID,
            incarnation_id=str(uuid.UUID(int=next(self.incarnations))), rack=rack,
            listeners=(BrokerRegistrationListener(name="PLAINTEXT", host="localhost",
                                                  port=9000 + broker_id, security_protocol=0),))
        result = register_broker(self.image, request, cluster_id=CLUSTER_ID,
                                 sessions=_NoSessions(), now=0.0)
        assert result.response.error_code == 0, result.response
        assert result.response.broker_epoch == self.image.offset + 1
        self._commit(result)
        self.epochs[broker_id] = result.response.broker_epoch
        registration = self.image.brokers.get(broker_id)
        assert registration is not None and registration.fenced
        assert registration.broker_epoch == self.epochs[broker_id]
        for topic in self.image.topics:  # a new incarnation leaves every ISR it could
            for partition in topic.partitions.values():
                assert partition.leader != broker_id
                assert broker_id not in partition.isr or partition.isr == (broker_id,)

    def _unfence(self, broker_id: int) -> None:
        request = BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=self.epochs[broker_id],
                                         current_metadata_offset=self.image.offset)
        result = broker_heartbeat(self.image, request)
        assert result.response.error_code == 0 and not result.response.is_fenced, result.response
        self._commit(result)
        registration = self.image.brokers.get(broker_id)
        assert registration is not None and not registration.fenced

    @initialize(count=st.integers(3, 5),
                racks=st.lists(st.sampled_from(RACKS), min_size=5, max_size=5),
                partitions=st.integers(1, 3), replication=st.integers(1, 3))
    def start_cluster(self, count: int, racks: list[str | None], partitions: int,
                      replication: int) -> None:
        """Some unfenced brokers and a first topic, so most steps have something to act on."""
        for broker_id in BROKER_IDS[:count]:
            self._register(broker_id, racks[broker_id - 1])
        for broker_id in BROKER_IDS[:count]:
            self._unfence(broker_id)
        result = create_topics(self.image, CreateTopicsRequest(topics=(CreatableTopic(
            name="orders", num_partitions=partitions, replication_factor=replication),)),
            new_topic_id=self._new_topic_id)
        assert result.response.topics[0].error_code == 0, result.response
        self._commit(result)
        orders = self.image.topics.get_by_name("orders")
        assert orders is not None and len(orders.partitions) == partitions
        self.replication[orders.topic_id] = replication

    @rule(broker_id=st.sampled_from(BROKER_IDS), rack=st.sampled_from(RACKS),
          other_cluster=st.integers(0, 4).map(lambda n: n == 0))
    def register(self, broker_id: int, rack: str | None, other_cluster: bool) -> None:
        if not other_cluster:
            self._register(broker_id, rack)
            return
        request = BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id="another-cluster",
            incarnation_id=str(uuid.UUID(int=next(self.incarnations))))
        result = register_broker(self.image, request, cluster_id=CLUSTER_ID,
                                 sessions=_NoSessions(), now=0.0)
        assert result.response.error_code == Errors.INCONSISTENT_CLUSTER_ID.code
        self._commit(result)

    @precondition(lambda self: self.epochs)
    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        broker_id = data.draw(st.sampled_from(sorted(self.epochs)), label="broker")
        mode = data.draw(st.sampled_from(["unfence", "behind", "stale", "fence"]), label="mode")
        epoch = self.epochs[broker_id]
        registration = self.image.brokers.get(broker_id)
        assert registration is not None
        was_fenced = registration.fenced
        request = BrokerHeartbeatRequest(
            broker_id=broker_id,
            broker_epoch=epoch - 1 if mode == "stale" else epoch,
            current_metadata_offset=epoch - 1 if mode == "behind" else self.image.offset,
            want_fence=mode == "fence",
        )
        result = broker_heartbeat(self.image, request)
        self._commit(result)
        registration = self.image.brokers.get(broker_id)
        assert registration is not None
        if mode == "stale":
            assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
        elif mode == "behind":
            assert not result.response.is_caught_up
            assert registration.fenced == was_fenced
        elif mode == "unfence":
            assert not registration.fenced and not result.response.is_fenced
        else:
            assert registration.fenced and result.response.is_fenced

    @precondition(lambda self: self.epochs)
    @rule(data=st.data())
    def fence(self, data: st.DataObject) -> None:
        broker_id = data.draw(st.sampled_from(sorted(self.epochs)), label="broker")
        self._commit(fence_broker(self.image, broker_id))
        registration = self.image.brokers.get(broker_id)
        assert registration is not None and registration.fenced
        for topic in self.image.topics:
            for partition in topic.partitions.values():
                assert partition.leader != broker_id
                assert broker_id not in partition.isr or partition.isr == (broker_id,)

    # ------------------------------------------------------------------ topics

    def _creatable(self, data: st.DataObject) -> CreatableTopic:
        name = data.draw(st.sampled_from(GOOD_NAMES * 3 + BAD_NAMES), label="name")
        if data.draw(st.booleans(), label="explicit"):
            replication = data.draw(st.integers(1, 3), label="rf")
            count = data.draw(st.integers(1, 3), label="partitions")
            assignments = tuple(
                CreatableReplicaAssignment(
                    partition_index=index,
                    broker_ids=self._replica_set(data, replication, prefer_usable=True))
                for index in range(count))
            return CreatableTopic(name=name, assignments=assignments)
        return CreatableTopic(name=name,
                              num_partitions=data.draw(st.sampled_from([1, 2, 3, 4, 2, -1, 0]),
                                                       label="num_partitions"),
                              replication_factor=data.draw(st.sampled_from([1, 2, 3, 2, -1, 0]),
                                                           label="replication_factor"))

    @rule(data=st.data())
    def create_topics(self, data: st.DataObject) -> None:
        topics = [self._creatable(data) for _ in range(data.draw(st.integers(1, 2)))]
        if data.draw(st.integers(0, 7), label="duplicate") == 0:
            topics.append(topics[0])
        request = CreateTopicsRequest(topics=tuple(topics))
        validate_only = data.draw(st.booleans(), label="validate_only")
        result = create_topics(self.image, request, new_topic_id=self._new_topic_id)
        if validate_only:
            checked = create_topics(self.image, request.model_copy(update={"validate_only": True}),
                                    new_topic_id=self._new_topic_id)
            assert checked.records == ()
            assert [(t.name, t.error_code, t.num_partitions) for t in checked.response.topics] == \
                   [(t.name, t.error_code, t.num_partitions) for t in result.response.topics]
            self._commit(checked)
            return
        succeeded = {t.name: t for t in result.response.topics if t.error_code == 0}
        for answer in result.response.topics:
            outcome("create_topics", answer.error_code)
        assert {r.name for r in result.records if isinstance(r, TopicRecord)} == set(succeeded)
        for topic in result.response.topics:
            if topic.name in BAD_NAMES:
                assert topic.error_code in (Errors.INVALID_TOPIC_EXCEPTION.code,
                                            Errors.INVALID_REQUEST.code)
            if [t.name for t in topics].count(topic.name) > 1:
                assert topic.error_code == Errors.INVALID_REQUEST.code
        before = self._commit(result)
        requested = {t.name: t for t in topics}
        for name, answer in succeeded.items():
            assert before.topics.get_by_name(name) is None
            created = self.image.topics.get_by_name(name)
            assert created is not None and kafka_uuid_str(created.topic_id) == answer.topic_id
            assert len(created.partitions) == answer.num_partitions
            self.replication[created.topic_id] = answer.replication_factor
            wanted = requested[name]
            for partition_id, partition in created.partitions.items():
                assert partition.isr == partition.replicas
                assert partition.leader == partition.replicas[0]
                assert (partition.leader_epoch, partition.start_offset) == (0, 0)
                assert len(partition.replicas) == answer.replication_factor
                if wanted.assignments:
                    assert partition.replicas == wanted.assignments[partition_id].broker_ids

    @rule(data=st.data())
    def delete_topics(self, data: st.DataObject) -> None:
        existing = [t.name for t in self.image.topics]
        names = data.draw(st.lists(st.sampled_from([*existing, "missing"]), min_size=1,
                                   max_size=2, unique=True), label="names")
        by_id = data.draw(st.booleans(), label="by_id")
        if by_id:
            ids = {t.name: t.topic_id for t in self.image.topics}
            request = DeleteTopicsRequest(topics=tuple(
                DeleteTopicState(topic_id=kafka_uuid_str(ids.get(n, uuid.UUID(int=77))))
                for n in names))
        else:
            request = DeleteTopicsRequest(topic_names=tuple(names))
        result = delete_topics(self.image, request)
        before = self._commit(result)
        for answer, name in zip(result.response.responses, names, strict=True):
            if name in existing:
                assert answer.error_code == 0
                topic = before.topics.get_by_name(name)
                assert topic is not None and self.image.topics.get(topic.topic_id) is None
                for key in [k for k in self.cuts if k[0] == topic.topic_id]:
                    del self.cuts[key]
            else:
                expected = Errors.UNKNOWN_TOPIC_ID if by_id else Errors.UNKNOWN_TOPIC_OR_PARTITION
                assert answer.error_code == expected.code

    # ------------------------------------------------------------------ createPartitions

    @rule(data=st.data())
    def create_partitions(self, data: st.DataObject) -> None:
        topics = self._topics()
        name = data.draw(st.sampled_from([*[t.name for t in topics] * 4, "missing"]),
                         label="topic")
        topic = self.image.topics.get_by_name(name)
        existing = len(topic.partitions) if topic is not None else 1
        mode = data.draw(st.sampled_from(["increase", "increase", "same", "decrease"]),
                         label="mode")
        count = {"increase": existing + data.draw(st.integers(1, 3), label="added"),
                 "same": existing, "decrease": existing - 1}[mode]
        assignments = None
        if mode == "increase" and topic is not None and data.draw(st.booleans(), label="manual"):
            replication = self.replication[topic.topic_id]
            size = replication + data.draw(st.sampled_from([0, 0, 0, 1, -1]), label="size")
            assignments = tuple(
                CreatePartitionsAssignment(
                    broker_ids=self._replica_set(data, max(size, 0), prefer_usable=True))
                for _ in range(count - existing))
            if data.draw(st.integers(0, 5), label="short") == 0:
                assignments = assignments[1:]
        entry = CreatePartitionsTopic(name=name, count=count, assignments=assignments)
        duplicate = data.draw(st.integers(0, 6), label="duplicate") == 0
        request = CreatePartitionsRequest(topics=(entry, entry) if duplicate else (entry,))
        result = create_partitions(self.image, request)
        answer = result.response.results[0]
        outcome(f"create_partitions {mode}", answer.error_code, result.records)
        checked = create_partitions(self.image, request.model_copy(update={"validate_only": True}))
        assert checked.records == ()
        assert checked.response == result.response
        if duplicate:
            assert answer.error_code == Errors.INVALID_REQUEST.code
        elif topic is None:
            assert answer.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
        elif mode in ("same", "decrease"):
            assert answer.error_code == Errors.INVALID_PARTITIONS.code
        if data.draw(st.booleans(), label="validate_only"):
            self._commit(checked)
            return
        before = self._commit(result)
        if answer.error_code != 0:
            return
        assert topic is not None
        old = before.topics.get(topic.topic_id)
        new = self.image.topics.get(topic.topic_id)
        assert old is not None and new is not None
        assert len(new.partitions) == count
        # KIP-253: every existing partition's leader epoch grew by exactly one, nothing else ...
        prior = tuple(PriorPartitionEpoch(partition_id=p, leader_epoch=old.partitions[p]
                                          .leader_epoch) for p in sorted(old.partitions))
        for partition_id, was in old.partitions.items():
            now = new.partitions[partition_id]
            assert now.leader_epoch == was.leader_epoch + 1
            assert now.partition_epoch == was.partition_epoch + 1
            assert (now.leader, now.replicas, now.isr, now.start_offset) == \
                   (was.leader, was.replicas, was.isr, was.start_offset)
        # ... and every new partition maps each older one to its epoch before the bump.
        for index, partition_id in enumerate(range(existing, count)):
            partition = new.partitions[partition_id]
            assert partition.prior_partition_epochs == prior
            assert (partition.leader_epoch, partition.start_offset) == (0, 0)
            assert partition.isr == partition.replicas
            assert partition.leader == partition.replicas[0]
            assert len(partition.replicas) == self.replication[topic.topic_id]
            if assignments is not None:
                assert partition.replicas == assignments[index].broker_ids

    # ------------------------------------------------------------------ chunks

    @precondition(lambda self: len(self.image.topics) > 0)
    @rule(data=st.data())
    def cut_chunk(self, data: st.DataObject) -> None:
        self._create_chunks(data, "valid")

    @precondition(lambda self: len(self.image.topics) > 0)
    @rule(data=st.data(), mode=st.sampled_from(["empty", "inconsistent", "stop_after_end"]))
    def create_chunks_refused(self, data: st.DataObject, mode: str) -> None:
        self._create_chunks(data, mode)

    def _create_chunks(self, data: st.DataObject, mode: str) -> None:
        topic = data.draw(st.sampled_from(self._topics()), label="topic")
        partition_id = data.draw(st.sampled_from(sorted(topic.partitions)), label="partition")
        partition = topic.partitions[partition_id]
        active = max(partition.start_offset, 0)
        written = data.draw(st.integers(1, 100), label="written")
        prev_stop = {"empty": active - 1}.get(mode, active + written - 1)
        prev_end = prev_stop + data.draw(st.integers(0, 5), label="open")
        if mode == "stop_after_end":
            prev_end = prev_stop - 1
        start = prev_stop + (2 if mode == "inconsistent" else 1)
        replicas = self._replica_set(data, len(partition.replicas), prefer_usable=True)
        leader = data.draw(st.sampled_from([-1, *replicas]), label="leader")
        by_leader = partition.leader != -1 and data.draw(st.booleans(), label="by_leader")
        timestamp = max(partition.start_timestamp, 0) + data.draw(st.integers(0, 1000))
        request = CreateChunksRequest(
            broker_id=partition.leader if by_leader else -1,
            broker_epoch=self.epochs[partition.leader] if by_leader else -1,
            validate_only=data.draw(st.booleans(), label="validate_only"),
            topics=(CreateChunksTopic(name=topic.name, partitions=(CreateChunksPartition(
                partition_index=partition_id, broker_ids=replicas, leader=leader,
                leader_epoch=data.draw(st.sampled_from([-1, partition.leader_epoch])),
                prev_stop_offset=prev_stop, prev_end_offset=prev_end, start_offset=start,
                start_timestamp=timestamp),)),))
        result = create_chunks(self.image, request)
        code = result.response.topics[0].partitions[0].error_code
        outcome(f"create_chunks {mode}", code, result.records)
        if request.validate_only:
            assert result.records == ()
            real = create_chunks(self.image, request.model_copy(update={"validate_only": False}))
            assert real.response == result.response
        usable = set(self._usable())
        if set(replicas) <= usable and len(set(replicas)) == len(partition.replicas):
            expected = {"valid": Errors.NONE, "empty": Errors.INVALID_REQUEST,
                        "inconsistent": Errors.INVALID_CHUNK_OFFSETS,
                        "stop_after_end": Errors.INVALID_CHUNK_OFFSETS}[mode]
            assert code == expected.code, result.response
        else:
            assert code == Errors.INVALID_REPLICA_ASSIGNMENT.code, result.response
        chunk_keys = {(r.topic_id, r.partition_id) for r in result.records
                      if isinstance(r, ChunkRecord)}
        assert chunk_keys == ({(topic.topic_id, partition_id)}
                              if code == 0 and not request.validate_only else set())
        self._commit(result)
        if code != 0 or request.validate_only:
            return
        self.cuts.setdefault((topic.topic_id, partition_id), []).append(
            (active, prev_stop, prev_end))
        now_topic = self.image.topics.get(topic.topic_id)
        assert now_topic is not None
        chunk = now_topic.chunk(partition_id, active)
        assert chunk is not None
        assert (chunk.stop_offset, chunk.end_offset, chunk.chunk_epoch, chunk.epoch) == \
               (prev_stop, prev_end, 0, 0)
        assert (chunk.replicas, chunk.isr) == (partition.replicas, partition.isr)
        cut = now_topic.partitions[partition_id]
        assert cut.start_offset == start and cut.replicas == cut.isr == replicas
        assert cut.leader == (leader if leader != -1 else replicas[0])
        assert cut.leader_epoch == partition.leader_epoch + 1

    @precondition(lambda self: any(t.chunks for t in self.image.topics))
    @rule(data=st.data())
    def alter_chunk_assignments(self, data: st.DataObject) -> None:
        chunks = self._chunks()
        unknown = not chunks or data.draw(st.integers(0, 5), label="unknown") == 0
        if unknown:
            topic = data.draw(st.sampled_from(self._topics()), label="topic")
            partition_id = data.draw(st.sampled_from(sorted(topic.partitions)))
            start = data.draw(st.sampled_from([topic.partitions[partition_id].start_offset,
                                               10**9]), label="start")
            epoch = -1
            target = self._replica_set(data, self.replication[topic.topic_id], True)
            chunk = None
        else:
            topic, chunk = data.draw(st.sampled_from(chunks), label="chunk")
            partition_id, start = chunk.partition_id, chunk.start_offset
            epoch = data.draw(st.sampled_from([-1, chunk.epoch, chunk.epoch, chunk.epoch + 1]),
                              label="epoch")
            target = self._replica_set(data, self.replication[topic.topic_id], True)
        request = AlterChunkAssignmentsRequest(
            validate_only=data.draw(st.booleans(), label="validate_only"),
            chunks=(AlterChunkAssignment(topic_name=topic.name, partition_id=partition_id,
                                         start_offset=start, chunk_epoch=epoch,
                                         broker_ids=target),))
        result = alter_chunk_assignments(self.image, request)
        code = result.response.results[0].error_code
        outcome("alter_chunk_assignments", code, result.records)
        if request.validate_only:
            assert result.records == ()
            real = alter_chunk_assignments(
                self.image, request.model_copy(update={"validate_only": False}))
            assert real.response == result.response
        if chunk is None:
            assert code == Errors.UNKNOWN_CHUNK.code
        elif epoch not in (-1, chunk.epoch):
            assert code == Errors.FENCED_CHUNK_EPOCH.code
        elif set(target) <= set(self._usable()) and (chunk.adding_replicas
                                                      or chunk.removing_replicas):
            in_progress_to = chunk_target(chunk)
            expected = Errors.NONE if target == in_progress_to else Errors.REASSIGNMENT_IN_PROGRESS
            assert code == expected.code, result.response
        elif set(target) <= set(self._usable()):
            adding = [b for b in target if b not in chunk.replicas]
            keeps_isr = bool(set(target) & set(chunk.isr))
            if (adding and chunk.isr) or (not adding and keeps_isr):
                assert code == 0, result.response
        if code != 0:
            assert result.records == ()
        self._commit(result)
        if chunk is None or code != 0 or request.validate_only or not result.records:
            return
        (record,) = result.records
        assert isinstance(record, ChunkChangeRecord) and record.epoch == chunk.epoch + 1
        moved = self._chunk(topic.topic_id, partition_id, start)
        assert moved is not None and moved.epoch == moved.chunk_epoch == chunk.epoch + 1
        assert chunk_target(moved) == target
        current = chunk.replicas
        if moved.adding_replicas:
            assert moved.adding_replicas == tuple(b for b in target if b not in current)
            assert moved.removing_replicas == tuple(b for b in current if b not in target)
            assert set(moved.replicas) == set(target) | set(current)
            assert moved.isr == chunk.isr
        else:
            assert moved.replicas == target and not moved.removing_replicas

    @precondition(lambda self: any(c.adding_replicas for _, c in self._chunks()))
    @rule(data=st.data())
    def complete_chunk_move(self, data: st.DataObject) -> None:
        moving = [(t, c) for t, c in self._chunks() if c.adding_replicas]
        self._chunk_replica_state(data, data.draw(st.sampled_from(moving), label="chunk"),
                                  "complete")

    @precondition(lambda self: any(t.chunks for t in self.image.topics))
    @rule(data=st.data(), mode=st.sampled_from(["drop", "stranger", "stale"]))
    def chunk_replica_state(self, data: st.DataObject, mode: str) -> None:
        self._chunk_replica_state(data, data.draw(st.sampled_from(self._chunks()),
                                                  label="chunk"), mode)

    def _chunk_replica_state(self, data: st.DataObject, picked: tuple[TopicImage, ChunkRecord],
                             mode: str) -> None:
        topic, chunk = picked
        key = (topic.topic_id, chunk.partition_id, chunk.start_offset)
        strangers = [b for b in sorted(self.epochs) if b not in chunk.replicas]
        if mode == "complete" and not chunk.adding_replicas:
            mode = "stranger"
        if mode in ("stranger", "stale") and not strangers:
            mode = "drop"
        if mode == "complete":
            brokers = list(chunk.adding_replicas)
        elif mode == "drop":
            brokers = [data.draw(st.sampled_from(chunk.replicas), label="dropping")]
        else:
            brokers = [data.draw(st.sampled_from(strangers), label="stranger")]
        state = ChunkReplicaState.DROPPED if mode == "drop" else ChunkReplicaState.IN_SYNC
        every_report_succeeded = True
        for broker_id in brokers:
            current = self._chunk(topic.topic_id, chunk.partition_id, chunk.start_offset)
            assert current is not None
            epoch = data.draw(st.sampled_from([-1, current.epoch, current.epoch + 1]),
                              label="chunk_epoch")
            request = ChunkReplicaStateRequest(
                broker_id=broker_id,
                broker_epoch=self.epochs[broker_id] - (1 if mode == "stale" else 0),
                chunks=(ChunkReplicaStateItem(
                    topic_name=topic.name, partition_id=chunk.partition_id,
                    start_offset=chunk.start_offset, chunk_epoch=epoch, state=state),))
            result = chunk_replica_state(self.image, request)
            code = result.response.results[0].error_code
            outcome(f"chunk_replica_state {mode}", code or result.response.error_code,
                    result.records)
            if mode == "stale":
                assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
            elif epoch not in (-1, current.epoch):
                assert code == Errors.FENCED_CHUNK_EPOCH.code
            elif mode == "stranger":
                assert code == Errors.NO_REASSIGNMENT_IN_PROGRESS.code
            else:
                assert code == 0, result.response
            self._commit(result)
            if code != 0 or result.response.error_code != 0:
                every_report_succeeded = False
                continue
            after = self._chunk(topic.topic_id, chunk.partition_id, chunk.start_offset)
            if mode == "drop":
                self.dropped.add(key)
                if after is None:  # the last replica left: the chunk leaves the image
                    assert current.replicas == (broker_id,)
                    self.removed.add(key)
                else:
                    assert broker_id not in after.replicas and broker_id not in after.isr
                    assert after.epoch == current.epoch + 1
            else:
                assert after is not None and broker_id in after.isr
        if mode == "complete" and every_report_succeeded and key not in self.dropped:
            done = self._chunk(topic.topic_id, chunk.partition_id, chunk.start_offset)
            assert done is not None
            assert done.replicas == chunk_target(chunk)
            assert not done.adding_replicas and not done.removing_replicas
            assert set(done.isr) == set(chunk.isr) & set(done.replicas) | set(
                chunk.adding_replicas)

    # ------------------------------------------------------------------ ISR, producer ids, ACLs

    @precondition(lambda self: any(p.leader != -1 for t in self.image.topics
                                   for p in t.partitions.values()))
    @rule(data=st.data())
    def alter_partition(self, data: st.DataObject) -> None:
        led = [(t, p) for t in self.image.topics for p in t.partitions.values() if p.leader != -1]
        topic, partition = data.draw(st.sampled_from(led), label="partition")
        others = [r for r in partition.replicas if r != partition.leader]
        chosen = data.draw(st.lists(st.sampled_from(others), unique=True) if others
                           else st.just([]), label="isr")
        new_isr = (partition.leader, *chosen)
        mode = data.draw(st.sampled_from(["current", "current", "old_leader_epoch",
                                          "old_partition_epoch"]), label="mode")
        leader_epoch = partition.leader_epoch - (mode == "old_leader_epoch")
        partition_epoch = partition.partition_epoch - (mode == "old_partition_epoch")
        request = AlterPartitionRequest(
            broker_id=partition.leader, broker_epoch=self.epochs[partition.leader],
            topics=(AlterPartitionTopicData(
                topic_id=kafka_uuid_str(topic.topic_id),
                partitions=(AlterPartitionPartitionData(
                    partition_index=partition.partition_id, leader_epoch=leader_epoch,
                    partition_epoch=partition_epoch, new_isr=new_isr),)),))
        result = alter_partition(self.image, request)
        code = result.response.topics[0].partitions[0].error_code
        outcome(f"alter_partition {mode}", code, result.records)
        usable = set(self._usable())
        if mode == "old_leader_epoch":
            assert code == Errors.FENCED_LEADER_EPOCH.code
        elif mode == "old_partition_epoch":
            assert code == Errors.INVALID_UPDATE_VERSION.code
        elif mode == "current":
            expected = Errors.NONE if set(new_isr) <= usable else Errors.INELIGIBLE_REPLICA
            assert code == expected.code, result.response
        self._commit(result)
        if code != 0:
            return
        now = self._topic(topic.topic_id).partitions[partition.partition_id]
        assert now.isr == new_isr
        assert (now.leader, now.leader_epoch) == (partition.leader, partition.leader_epoch)
        changed = new_isr != partition.isr
        assert now.partition_epoch == partition.partition_epoch + changed

    @precondition(lambda self: self.epochs)
    @rule(data=st.data())
    def allocate_producer_ids(self, data: st.DataObject) -> None:
        broker_id = data.draw(st.sampled_from(sorted(self.epochs)), label="broker")
        stale = data.draw(st.integers(0, 4), label="stale") == 0
        request = AllocateProducerIdsRequest(broker_id=broker_id,
                                             broker_epoch=self.epochs[broker_id] - stale)
        result = allocate_producer_ids(self.image, request)
        self._commit(result)
        response = result.response
        if stale:
            assert response.error_code == Errors.STALE_BROKER_EPOCH.code
            return
        assert response.error_code == 0
        assert response.producer_id_len == PRODUCER_ID_BLOCK_SIZE
        self.blocks.append((response.producer_id_start,
                            response.producer_id_start + response.producer_id_len))

    @rule(data=st.data(), delete=st.booleans())
    def change_acls(self, data: st.DataObject, delete: bool) -> None:
        if delete:
            self._delete_acls(data.draw(st.sampled_from(PRINCIPALS), label="principal"))
        else:
            self._create_acls(data)

    def _create_acls(self, data: st.DataObject) -> None:
        creations = []
        for _ in range(data.draw(st.integers(1, 3), label="count")):
            creations.append(AclCreation(
                resource_type=data.draw(st.sampled_from([AclResourceType.TOPIC,
                                                         AclResourceType.GROUP,
                                                         AclResourceType.ANY])),
                resource_name=data.draw(st.sampled_from(["alpha", "beta", ""])),
                principal=data.draw(st.sampled_from(PRINCIPALS)),
                operation=data.draw(st.sampled_from([AclOperation.READ, AclOperation.WRITE,
                                                     AclOperation.ANY])),
                permission_type=AclPermissionType.ALLOW))
        result = create_acls(self.image, CreateAclsRequest(creations=tuple(creations)),
                             new_id=self._new_acl_id)
        for creation, answer in zip(creations, result.response.results, strict=True):
            valid = (creation.resource_type is not AclResourceType.ANY
                     and creation.resource_name != ""
                     and creation.operation is not AclOperation.ANY)
            assert (answer.error_code == 0) == valid, answer
            if valid:
                self.acl_bindings.add((int(creation.resource_type), creation.resource_name,
                               creation.principal, int(creation.operation)))
        self._commit(result)

    def _delete_acls(self, principal: str) -> None:
        acl_filter = DeleteAclsFilter(
            resource_type_filter=AclResourceType.ANY, pattern_type_filter=AclPatternType.ANY,
            principal_filter=principal, operation=AclOperation.ANY,
            permission_type=AclPermissionType.ANY)
        result = delete_acls(self.image, DeleteAclsRequest(filters=(acl_filter,)))
        matched = {(int(m.resource_type), m.resource_name, m.principal, int(m.operation))
                   for m in result.response.filter_results[0].matching_acls}
        assert matched == {acl for acl in self.acl_bindings if acl[2] == principal}
        self.acl_bindings -= matched
        self._commit(result)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def image_is_the_replay_of_the_history(self) -> None:
        replayed = replay(self.history)
        assert replayed == self.image
        assert replayed.content_hash() == self.image.content_hash()

    @invariant()
    def image_round_trips_through_its_records(self) -> None:
        records = [decode_record(encode_record(r)) for r in self.image.to_records()]
        rebuilt = replay(records)
        assert rebuilt.content_hash() == self.image.content_hash()
        assert rebuilt.with_provenance(self.image.provenance) == self.image

    @invariant()
    def partitions_are_consistent(self) -> None:
        registered = set(self._registered())
        unfenced = set(self._usable())
        for topic in self.image.topics:
            assert sorted(topic.partitions) == list(range(len(topic.partitions)))
            replication = self.replication[topic.topic_id]
            for partition in topic.partitions.values():
                assert len(partition.replicas) == len(set(partition.replicas)) == replication
                assert set(partition.replicas) <= registered
                assert partition.isr and set(partition.isr) <= set(partition.replicas)
                assert partition.leader == -1 or partition.leader in partition.isr
                assert partition.leader == -1 or partition.leader in unfenced
                assert partition.leader_epoch >= 0 and partition.partition_epoch >= 0

    @invariant()
    def chunks_are_consistent(self) -> None:
        registered = set(self._registered())
        for topic in self.image.topics:
            replication = self.replication[topic.topic_id]
            for partition_id, partition in topic.partitions.items():
                cuts = self.cuts.get((topic.topic_id, partition_id), [])
                # Every chunk ever cut: contiguous from 0, the active chunk right after them.
                expected_start = 0
                for start, stop, end in cuts:
                    assert start == expected_start and start <= stop <= end
                    expected_start = stop + 1
                assert max(partition.start_offset, 0) == expected_start
                present = {(start, stop, end) for start, stop, end in cuts
                           if (topic.topic_id, partition_id, start) not in self.removed}
                chunks = topic.chunks_of(partition_id)
                assert {(c.start_offset, c.stop_offset, c.end_offset) for c in chunks} == present
                starts = [c.start_offset for c in chunks]
                assert starts == sorted(starts)
                for previous, chunk in itertools.pairwise(chunks):
                    # start = previous stop + 1, unless the chunks between were dropped
                    between = [c for c in cuts
                               if previous.stop_offset < c[0] < chunk.start_offset]
                    if between:
                        assert all((topic.topic_id, partition_id, c[0]) in self.removed
                                   for c in between)
                    else:
                        assert chunk.start_offset == previous.stop_offset + 1
                for chunk in chunks:
                    key = (topic.topic_id, partition_id, chunk.start_offset)
                    assert chunk.replicas and set(chunk.replicas) <= registered
                    assert len(chunk.replicas) == len(set(chunk.replicas))
                    assert set(chunk.isr) <= set(chunk.replicas)
                    assert set(chunk.adding_replicas) <= set(chunk.replicas)
                    assert set(chunk.removing_replicas) <= set(chunk.replicas)
                    assert not set(chunk.adding_replicas) & set(chunk.removing_replicas)
                    assert chunk.epoch == chunk.chunk_epoch >= 0
                    target = chunk_target(chunk)
                    if key in self.dropped:
                        assert len(target) <= replication
                        continue
                    assert chunk.isr
                    assert len(target) == replication
                    if chunk.adding_replicas or chunk.removing_replicas:
                        # a move: replicas = target + (current - target)
                        assert chunk.replicas == target + chunk.removing_replicas
                    else:
                        assert len(chunk.replicas) == replication

    @invariant()
    def producer_id_blocks_grow_without_overlap(self) -> None:
        for (_, end), (start, _) in itertools.pairwise(self.blocks):
            assert start == end
        expected_next = self.blocks[-1][1] if self.blocks else 0
        assert self.image.producer_ids.next_producer_id == expected_next
        assert all(end - start == PRODUCER_ID_BLOCK_SIZE for start, end in self.blocks)

    @invariant()
    def acls_are_the_model(self) -> None:
        assert {(acl.resource_type, acl.resource_name, acl.principal, acl.operation)
                for acl in self.image.acls} == self.acl_bindings
        assert len(self.image.acls) == len(self.acl_bindings)

    @invariant()
    def brokers_are_the_model(self) -> None:
        assert {b.broker_id: b.broker_epoch for b in self.image.brokers} == self.epochs


ControllerMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestControllerStateful = ControllerMachine.TestCase

