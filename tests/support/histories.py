"""Hypothesis strategies for valid metadata histories: record sequences a controller could commit.

A small model of the cluster (brokers, topics, partitions, chunks) keeps each drawn record
valid for the state before it, so replay never meets an invariant error; properties then check
what replay, snapshots and local_changes make of the history.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from chunkraft.records import (
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ChunkChangeRecord,
    ChunkRecord,
    ConfigRecord,
    ControllerRegistrationRecord,
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
)

BROKERS = range(5)
TOPIC_NAMES = ("alpha", "beta", "gamma", "delta")


@dataclass
class _Partition:
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    start_offset: int
    chunks: dict[int, list[Any]] = field(default_factory=dict)  # start -> [record, epoch]


@dataclass
class _Topic:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, _Partition] = field(default_factory=dict)


@dataclass
class _Model:
    brokers: dict[int, int] = field(default_factory=dict)  # id -> epoch
    topics: dict[uuid.UUID, _Topic] = field(default_factory=dict)
    acls: list[uuid.UUID] = field(default_factory=list)
    next_producer_id: int = 0
    offset: int = 0


def _replica_set(draw: st.DrawFn, size: int | None = None) -> tuple[int, ...]:
    count = size if size is not None else draw(st.integers(1, 3))
    return tuple(draw(st.permutations(list(BROKERS)))[:count])


_ids = iter(range(1, 2**62))


def _uuid(draw: st.DrawFn) -> uuid.UUID:
    # Unique by construction (a counter in the low bits), random enough in the high bits.
    return uuid.UUID(int=(draw(st.integers(0, 2**64 - 1)) << 64) | next(_ids))


def _register(draw: st.DrawFn, m: _Model) -> list[Any]:
    broker_id = draw(st.sampled_from(BROKERS))
    m.brokers[broker_id] = m.offset
    return [
        RegisterBrokerRecord(
            broker_id=broker_id,
            broker_epoch=m.offset,
            incarnation_id=_uuid(draw),
            rack=draw(st.sampled_from([None, "r0", "r1"])),
            fenced=draw(st.booleans()),
        )
    ]


def _broker_change(draw: st.DrawFn, m: _Model) -> list[Any]:
    if not m.brokers:
        return []
    broker_id = draw(st.sampled_from(sorted(m.brokers)))
    if draw(st.booleans()):
        epoch = m.brokers.pop(broker_id)
        return [UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch)]
    return [
        BrokerRegistrationChangeRecord(
            broker_id=broker_id,
            broker_epoch=m.brokers[broker_id],
            fenced=draw(st.sampled_from([-1, 0, 1])),
            in_controlled_shutdown=draw(st.sampled_from([0, 1])),
        )
    ]


def _create_topic(draw: st.DrawFn, m: _Model) -> list[Any]:
    used = {t.name for t in m.topics.values()}
    free = [n for n in TOPIC_NAMES if n not in used]
    if not free:
        return []
    topic = _Topic(draw(st.sampled_from(free)), _uuid(draw))
    m.topics[topic.topic_id] = topic
    records: list[Any] = [TopicRecord(name=topic.name, topic_id=topic.topic_id)]
    rf = draw(st.integers(1, 3))
    for partition_id in range(draw(st.integers(1, 3))):
        replicas = _replica_set(draw, rf)
        topic.partitions[partition_id] = _Partition(replicas, replicas[0], 0, 0)
        records.append(
            PartitionRecord(
                partition_id=partition_id,
                topic_id=topic.topic_id,
                replicas=replicas,
                isr=replicas,
                leader=replicas[0],
                leader_epoch=0,
                partition_epoch=0,
                start_offset=0,
                start_timestamp=draw(st.integers(-1, 10**12)),
            )
        )
    return records


def _pick_partition(draw: st.DrawFn, m: _Model) -> tuple[_Topic, int, _Partition] | None:
    if not m.topics:
        return None
    topic = m.topics[draw(st.sampled_from(sorted(m.topics, key=lambda u: u.int)))]
    partition_id = draw(st.sampled_from(sorted(topic.partitions)))
    return topic, partition_id, topic.partitions[partition_id]


def _delete_topic(draw: st.DrawFn, m: _Model) -> list[Any]:
    if not m.topics:
        return []
    topic_id = draw(st.sampled_from(sorted(m.topics, key=lambda u: u.int)))
    del m.topics[topic_id]
    return [RemoveTopicRecord(topic_id=topic_id)]


def _partition_change(draw: st.DrawFn, m: _Model) -> list[Any]:
    picked = _pick_partition(draw, m)
    if picked is None:
        return []
    topic, partition_id, p = picked
    kind = draw(st.sampled_from(["leader", "isr", "reassign"]))
    if kind == "leader":
        p.leader = draw(st.sampled_from(p.replicas))
        p.leader_epoch += 1
        return [PartitionChangeRecord(partition_id=partition_id, topic_id=topic.topic_id,
                                      leader=p.leader)]
    if kind == "isr":
        isr = tuple(b for b in p.replicas if b == p.leader or draw(st.booleans()))
        return [PartitionChangeRecord(partition_id=partition_id, topic_id=topic.topic_id, isr=isr)]
    p.replicas = _replica_set(draw, len(p.replicas))
    p.leader = p.replicas[0]
    p.leader_epoch += 1
    return [
        PartitionChangeRecord(
            partition_id=partition_id,
            topic_id=topic.topic_id,
            replicas=p.replicas,
            isr=p.replicas,
            leader=p.leader,
        )
    ]


def _cut_chunk(draw: st.DrawFn, m: _Model) -> list[Any]:
    picked = _pick_partition(draw, m)
    if picked is None:
        return []
    topic, partition_id, p = picked
    written = draw(st.integers(1, 50))
    stop = p.start_offset + written - 1
    end = stop + draw(st.integers(0, 5))  # an open transaction keeps end beyond stop
    chunk = ChunkRecord(
        partition_id=partition_id,
        topic_id=topic.topic_id,
        start_offset=p.start_offset,
        start_timestamp=1000 + p.start_offset,
        stop_offset=stop,
        end_offset=end,
        chunk_epoch=0,
        epoch=0,
        replicas=p.replicas,
        isr=p.replicas,
    )
    p.chunks[p.start_offset] = [chunk, 0]
    p.replicas = _replica_set(draw, len(p.replicas))
    p.leader = p.replicas[0]
    p.leader_epoch += 1
    p.start_offset = stop + 1
    change = PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic.topic_id,
        replicas=p.replicas,
        isr=p.replicas,
        leader=p.leader,
        start_offset=p.start_offset,
        start_timestamp=1000 + p.start_offset,
    )
    return [chunk, change]


def _move_chunk(draw: st.DrawFn, m: _Model) -> list[Any]:
    picked = _pick_partition(draw, m)
    if picked is None or not picked[2].chunks:
        return []
    topic, partition_id, p = picked
    start = draw(st.sampled_from(sorted(p.chunks)))
    entry = p.chunks[start]
    chunk, epoch = entry
    current = chunk.replicas
    kind = draw(st.sampled_from(["begin", "complete", "remove"]))
    epoch += 1
    if kind == "remove":
        del p.chunks[start]
        return [ChunkChangeRecord(partition_id=partition_id, topic_id=topic.topic_id,
                                  start_offset=start, replicas=(), epoch=epoch)]
    target = _replica_set(draw, len(current))
    if kind == "begin":
        replicas = tuple(dict.fromkeys(target + current))
        adding = tuple(b for b in target if b not in current)
        removing = tuple(b for b in current if b not in target)
        isr = current
    else:
        replicas, adding, removing, isr = target, (), (), target
    record = ChunkChangeRecord(
        partition_id=partition_id,
        topic_id=topic.topic_id,
        start_offset=start,
        replicas=replicas,
        isr=isr,
        adding_replicas=adding,
        removing_replicas=removing,
        epoch=epoch,
    )
    entry[0] = chunk._replace(replicas=replicas, isr=isr, adding_replicas=adding,
                              removing_replicas=removing, chunk_epoch=epoch, epoch=epoch)
    entry[1] = epoch
    return [record]


def _expand(draw: st.DrawFn, m: _Model) -> list[Any]:
    """KIP-195 + KIP-253: bump every existing leader epoch, map priors on new partitions."""
    if not m.topics:
        return []
    topic = m.topics[draw(st.sampled_from(sorted(m.topics, key=lambda u: u.int)))]
    priors = tuple(
        PriorPartitionEpoch(partition_id=pid, leader_epoch=p.leader_epoch)
        for pid, p in sorted(topic.partitions.items())
    )
    records: list[Any] = []
    for pid, p in sorted(topic.partitions.items()):
        p.leader_epoch += 1
        records.append(PartitionChangeRecord(partition_id=pid, topic_id=topic.topic_id,
                                             leader=p.leader))
    for _ in range(draw(st.integers(1, 2))):
        pid = len(topic.partitions)
        replicas = _replica_set(draw)
        topic.partitions[pid] = _Partition(replicas, replicas[0], 0, 0)
        records.append(
            PartitionRecord(
                partition_id=pid, topic_id=topic.topic_id, replicas=replicas, isr=replicas,
                leader=replicas[0], leader_epoch=0, partition_epoch=0, start_offset=0,
                prior_partition_epochs=priors,
            )
        )
    return records


def _cluster_records(draw: st.DrawFn, m: _Model) -> list[Any]:
    kind = draw(st.sampled_from(["acl", "remove_acl", "producer_ids", "controller", "config",
                                 "noop"]))
    if kind == "acl":
        acl_id = _uuid(draw)
        m.acls.append(acl_id)
        return [AccessControlEntryRecord(id=acl_id, resource_type=2, resource_name="alpha",
                                         pattern_type=3, principal="User:alice", host="*",
                                         operation=draw(st.integers(0, 12)), permission_type=3)]
    if kind == "remove_acl" and m.acls:
        index = draw(st.integers(0, len(m.acls) - 1))
        return [RemoveAccessControlEntryRecord(id=m.acls.pop(index))]
    if kind == "producer_ids":
        m.next_producer_id += 1000
        return [ProducerIdsRecord(broker_id=0, broker_epoch=0, next_producer_id=m.next_producer_id)]
    if kind == "controller":  # a voter added (or added again at a new address)
        controller_id = draw(st.integers(1, 5))
        port = draw(st.integers(9093, 9095))
        return [ControllerRegistrationRecord(
            controller_id=controller_id, incarnation_id=_uuid(draw),
            raft_address=f"198.18.0.{controller_id}:{port}",
            http_url=f"http://198.18.0.{controller_id}:9090")]
    if kind == "config":  # a topic's (live or not: replay does not care), a broker's, the default
        resource = draw(st.sampled_from([*((2, name) for name in TOPIC_NAMES), (4, "0"),
                                         (4, "")]))
        name = draw(st.sampled_from(["retention.ms", "min.insync.replicas"]))
        value = draw(st.one_of(st.none(), st.integers(1, 10**6).map(str)))
        return [ConfigRecord(resource[0], resource[1], name, value)]
    return [NoOpRecord()]


_STEPS = [_register, _broker_change, _create_topic, _delete_topic, _partition_change,
          _cut_chunk, _cut_chunk, _move_chunk, _move_chunk, _expand, _cluster_records]


@st.composite
def metadata_histories(draw: st.DrawFn, max_steps: int = 25) -> list[Any]:
    """A list of records, valid in order, as a controller could commit them."""
    model = _Model()
    records: list[Any] = []
    for _ in range(draw(st.integers(1, max_steps))):
        step = draw(st.sampled_from(_STEPS))
        produced = step(draw, model)
        model.offset += len(produced)
        records.extend(produced)
    return records
