"""``chunkraft demo``: the KIP-1114 chunk lifecycle, told through records, images and a snapshot.

The record and image layers alone, in this process (``chunkraft cluster --demo`` tells the
story against a real quorum): it builds the metadata a controller would commit for the KIP's
scenario (a topic
on broker 0, a chunk cut to broker 1, the first chunk moved to broker 2, an expansion with
KIP-253's epochs), shows what each broker's ReplicaManager would be asked to do, then writes a
snapshot, loads it back and compares hashes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from chunkraft.controller.image import (
    LocalReplicaChanges,
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
)
from chunkraft.controller.image.snapshot import load_image_snapshot, write_image_snapshot
from chunkraft.records import (
    BrokerEndpoint,
    ChunkChangeRecord,
    ChunkRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    RegisterBrokerRecord,
    TopicRecord,
    validate_record,
)
from chunkraft.records.uuids import kafka_uuid_str

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["register", "run_demo"]

CLUSTER_ID = uuid.UUID("9d3f2c4e-5b6a-4c7d-8e9f-0a1b2c3d4e5f")
TOPIC_ID = uuid.UUID("5f0c9a6e-2b1d-4e3f-9a8b-7c6d5e4f3a2b")
BROKERS = (0, 1, 2)
START_MS = 1_763_700_000_000


class _Story:
    """Commits record batches to an in-process image and narrates each step."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.image = MetadataImage.EMPTY
        self.epoch = 1

    def say(self, text: str = "") -> None:
        print(text, file=self.out)

    def commit(self, title: str, records: list[Any]) -> MetadataDelta:
        for record in records:
            validate_record(record)  # the controller refuses anything out of range
        delta = MetadataDelta(self.image)
        for record in records:
            delta.replay(record)
        first = self.image.offset + 1
        self.image = delta.apply(MetadataProvenance(self.image.offset + len(records), self.epoch))
        self.say(f"\n== {title}")
        for offset, record in enumerate(records, start=first):
            self.say(f"  @{offset:<3} {_describe(record)}")
        return delta

    def show_local_changes(self, delta: MetadataDelta) -> None:
        for broker_id in BROKERS:
            changes = delta.topics_delta.local_changes(broker_id)
            self.say(f"  broker {broker_id}: {_summarize(changes)}")

    def describe_topic(self) -> None:
        topic = self.image.topics.get_by_name("orders")
        assert topic is not None
        self.say(f"  Topic: orders  TopicId: {kafka_uuid_str(topic.topic_id)}  "
                 f"PartitionCount: {len(topic.partitions)}")
        for partition_id in sorted(topic.partitions):
            p = topic.partitions[partition_id]
            self.say(f"    Partition: {partition_id}  Leader: {p.leader}  "
                     f"LeaderEpoch: {p.leader_epoch}  Replicas: {_ids(p.replicas)}  "
                     f"Isr: {_ids(p.isr)}  ActiveChunkStart: {p.start_offset}")
            for c in topic.chunks_of(partition_id):
                self.say(f"      Chunk start={c.start_offset} stop={c.stop_offset} "
                         f"end={c.end_offset} epoch={c.epoch} replicas={_ids(c.replicas)} "
                         f"isr={_ids(c.isr)}")


def _ids(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values)) or "-"


def _describe(record: Any) -> str:
    name = type(record).__name__
    if isinstance(record, RegisterBrokerRecord):
        return f"{name} broker={record.broker_id} rack={record.rack}"
    if isinstance(record, TopicRecord):
        return f"{name} name={record.name} id={kafka_uuid_str(record.topic_id)}"
    if isinstance(record, PartitionRecord):
        priors = "".join(f" prior[{p.partition_id}]={p.leader_epoch}"
                         for p in record.prior_partition_epochs)
        return (f"{name} partition={record.partition_id} replicas={_ids(record.replicas)} "
                f"leader={record.leader} start={record.start_offset}{priors}")
    if isinstance(record, PartitionChangeRecord):
        parts = [f"partition={record.partition_id}"]
        if record.replicas is not None:
            parts.append(f"replicas={_ids(record.replicas)}")
        if record.leader != -2:
            parts.append(f"leader={record.leader} (epoch bump)")
        if record.start_offset != -1:
            parts.append(f"start={record.start_offset}")
        return f"{name} " + " ".join(parts)
    if isinstance(record, ChunkRecord):
        return (f"{name} start={record.start_offset} stop={record.stop_offset} "
                f"end={record.end_offset} replicas={_ids(record.replicas)}")
    if isinstance(record, ChunkChangeRecord):
        return (f"{name} start={record.start_offset} replicas={_ids(record.replicas)} "
                f"adding={_ids(record.adding_replicas)} removing={_ids(record.removing_replicas)} "
                f"epoch={record.epoch}")
    return name


def _summarize(changes: LocalReplicaChanges) -> str:
    parts: list[str] = []
    parts += [f"lead orders-{tp.partition_id}" for tp in changes.leaders]
    parts += [f"follow orders-{tp.partition_id}" for tp in changes.followers]
    parts += [f"delete orders-{tp.partition_id}" for tp in changes.deletes]
    parts += [f"stop chunk {k.start_offset} (keep, serve to {c.stop_offset})"
              for k, c in changes.chunk_stops.items()]
    for key, create in changes.chunk_creates.items():
        kind = "active chunk" if create.active else "chunk"
        copy = (f"copy {create.start_offset}..{create.end_offset} from {_ids(create.sources)}"
                if create.end_offset >= create.start_offset else "no overlap to copy")
        parts.append(f"create {kind} {key.start_offset}: {copy}")
    parts += [f"delete chunk {k.start_offset}" for k in changes.chunk_deletes]
    return "; ".join(parts) or "nothing to do"


def run_demo(data_dir: Path, out: TextIO) -> int:
    """Runs the story; writes the snapshot under ``data_dir``. Returns an exit status."""
    story = _Story(out)
    story.say("chunkraft demo: the record and image layers, in one process (`chunkraft cluster")
    story.say("--demo` runs the story against a real controller quorum).")

    story.commit("Three brokers register", [
        RegisterBrokerRecord(broker_id=b, broker_epoch=b, rack=f"rack-{b}", fenced=False,
                             incarnation_id=uuid.UUID(int=b + 1),
                             end_points=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9092 + b, 0),))
        for b in BROKERS
    ])
    delta = story.commit("Create topic orders with 1 partition on broker 0", [
        TopicRecord(name="orders", topic_id=TOPIC_ID),
        PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(0,), isr=(0,), leader=0,
                        leader_epoch=0, partition_epoch=0, start_offset=0,
                        start_timestamp=START_MS),
    ])
    story.show_local_changes(delta)

    story.say("\n  (10 messages are produced: offsets 0..9, HW = LSO = 10)")
    delta = story.commit("CreateChunks orders-0 -> broker 1 (stop = LSO-1, end = HW-1)", [
        ChunkRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0, start_timestamp=START_MS,
                    stop_offset=9, end_offset=9, chunk_epoch=0, epoch=0, replicas=(0,),
                    isr=(0,)),
        PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1,), isr=(1,),
                              leader=1, start_offset=10, start_timestamp=START_MS + 10_000),
    ])
    story.show_local_changes(delta)

    story.say("\n  (10 more messages: offsets 10..19 on broker 1)")
    delta = story.commit("AlterChunkAssignments: move chunk 0 to broker 2 (copy begins)", [
        ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0, replicas=(2, 0),
                          isr=(0,), adding_replicas=(2,), removing_replicas=(0,), epoch=1),
    ])
    story.show_local_changes(delta)
    delta = story.commit("Broker 2 caught up: the move completes", [
        ChunkChangeRecord(partition_id=0, topic_id=TOPIC_ID, start_offset=0, replicas=(2,),
                          isr=(2,), epoch=2),
    ])
    story.show_local_changes(delta)

    before = story.image.topics.get_by_name("orders")
    assert before is not None
    epoch_before = before.partitions[0].leader_epoch
    delta = story.commit("createPartitions orders -> 2 (KIP-195 + KIP-253, one atomic batch)", [
        PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=1),
        PartitionRecord(partition_id=1, topic_id=TOPIC_ID, replicas=(0,), isr=(0,), leader=0,
                        leader_epoch=0, partition_epoch=0, start_offset=0,
                        prior_partition_epochs=(PriorPartitionEpoch(0, epoch_before),)),
    ])
    story.show_local_changes(delta)

    story.say("\n== kafka-topics --describe, with chunks")
    story.describe_topic()

    path = write_image_snapshot(story.image, data_dir, CLUSTER_ID)
    loaded = load_image_snapshot(path, freeze=False)
    same = loaded.content_hash() == story.image.content_hash() and loaded == story.image
    story.say(f"\n== Snapshot {path}")
    story.say(f"  {len(list(story.image.to_records()))} records; image hash "
              f"{story.image.content_hash()[:16]}...; reloaded: "
              f"{'identical' if same else 'DIFFERENT'}")
    story.say(f"  inspect it with: chunkraft records dump {path}")
    return 0 if same else 1


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft demo``."""
    parser = commands.add_parser(
        "demo",
        help="the chunk lifecycle told through records and images, in one process",
        description=__doc__,
    )
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where to write the snapshot (default: a new temporary directory)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.data_dir is not None:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        return run_demo(args.data_dir, sys.stdout)
    data_dir = Path(tempfile.mkdtemp(prefix="chunkraft-demo-"))
    return run_demo(data_dir, sys.stdout)
