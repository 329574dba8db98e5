"""A small controller image with every kind of exported record and every kind of field
(struct lists, nullable strings and lists, UUID lists, KIP-253 prior epochs), as records and as
snapshot files, for the export tests."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.records import (
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerFeature,
    ChunkRecord,
    ConfigRecord,
    ControllerRegistrationRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    encode_record,
)
from chunkraft.records.files import write_snapshot

CLUSTER_ID = uuid.UUID("6d2a4f0e-0000-4000-8000-00000000c0de")
TOPIC_A = uuid.UUID(int=(1 << 64) | 1)
TOPIC_B = uuid.UUID(int=(2 << 64) | 2)
DIR = uuid.UUID(int=(3 << 64) | 3)
APPEND_TIME_MS = 1_763_700_000_000


def sample_records() -> list[Any]:
    """Records of a valid image (brokers first, then topics with partitions and chunks)."""
    return [
        RegisterBrokerRecord(broker_id=1, incarnation_id=uuid.UUID(int=11), broker_epoch=5,
                             end_points=(BrokerEndpoint("PLAINTEXT", "h1", 9092, 0),),
                             features=(BrokerFeature("metadata.version", 1, 7),),
                             rack="r1", fenced=False, log_dirs=(DIR,)),
        RegisterBrokerRecord(broker_id=2, incarnation_id=uuid.UUID(int=12), broker_epoch=6,
                             rack=None, fenced=True),
        RegisterBrokerRecord(broker_id=3, incarnation_id=uuid.UUID(int=13), broker_epoch=7,
                             fenced=False),
        TopicRecord(name="orders", topic_id=TOPIC_A),
        PartitionRecord(partition_id=0, topic_id=TOPIC_A, replicas=(1, 2), isr=(1,), leader=1,
                        leader_epoch=3, partition_epoch=4, start_offset=100,
                        start_timestamp=APPEND_TIME_MS, directories=(DIR, DIR)),
        ChunkRecord(partition_id=0, topic_id=TOPIC_A, start_offset=0, start_timestamp=1,
                    stop_offset=49, end_offset=52, chunk_epoch=0, replicas=(2, 3),
                    directories=(DIR, DIR), isr=(2, 3), epoch=0),
        ChunkRecord(partition_id=0, topic_id=TOPIC_A, start_offset=50, start_timestamp=2,
                    stop_offset=99, end_offset=99, chunk_epoch=1, replicas=(1, 3), isr=(1,),
                    adding_replicas=(1,), removing_replicas=(3,), epoch=1),
        PartitionRecord(partition_id=1, topic_id=TOPIC_A, replicas=(2, 3), isr=(2, 3),
                        leader=2, start_offset=0, start_timestamp=-1,
                        prior_partition_epochs=(PriorPartitionEpoch(0, 3),),
                        eligible_leader_replicas=(3,), last_known_elr=()),
        TopicRecord(name="events", topic_id=TOPIC_B),
        PartitionRecord(partition_id=0, topic_id=TOPIC_B, replicas=(3,), isr=(3,), leader=3),
        AccessControlEntryRecord(id=uuid.UUID(int=99), resource_type=2, resource_name="orders",
                                 pattern_type=3, principal="User:alice", host="*",
                                 operation=3, permission_type=3),
        ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=2000),
        ControllerRegistrationRecord(controller_id=4, incarnation_id=uuid.UUID(int=44),
                                     raft_address="h4:9093", http_url="http://h4:9090"),
        ConfigRecord(2, "orders", "retention.ms", "86400000"),
        ConfigRecord(4, "", "min.insync.replicas", "2"),
    ]


def sample_image(records: list[Any] | None = None, offset: int = 41,
                 epoch: int = 2) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay_all(sample_records() if records is None else records)
    return delta.apply(MetadataProvenance(offset, epoch))


def write_sample_snapshot(directory: Path, records: list[Any] | None = None, *,
                          end_offset: int = 42, epoch: int = 2, records_per_batch: int = 3,
                          append_time_ms: int = APPEND_TIME_MS) -> Path:
    """The image of ``records`` written as snapshot ``(end_offset, epoch)`` in small batches."""
    image = sample_image(records, end_offset - 1, epoch)
    return write_snapshot(directory, end_offset=end_offset, epoch=epoch, cluster_id=CLUSTER_ID,
                          records=image.encoded_records(), records_per_batch=records_per_batch,
                          append_time_ms=append_time_ms)


def by_type(records: list[Any], cls: type) -> list[Any]:
    return [record for record in records if type(record) is cls]


def as_map(image: MetadataImage) -> list[Any]:
    return list(map(encode_record, image.to_records()))
