import subprocess
import sys

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.records import NoOpRecord
from tests.unit.controller.image.support import broker, chunk, partition, replay, topic


def test_empty_image_has_no_records_and_no_offset() -> None:
    assert MetadataImage.EMPTY.is_empty()
    assert list(MetadataImage.EMPTY.to_records()) == []
    assert MetadataImage.EMPTY.offset == -1


def test_apply_without_provenance_advances_one_offset_per_record() -> None:
    image = replay([broker(0), NoOpRecord()])
    assert image.offset == 1
    delta = MetadataDelta(image)
    delta.replay(NoOpRecord())
    assert delta.apply(MetadataProvenance(41, 3)).provenance == MetadataProvenance(41, 3)


def test_to_records_orders_topic_then_partitions_then_chunks() -> None:
    records = [broker(0), topic(), partition(1), partition(0), chunk(0, 9, 9, (0,), 1)]
    image = replay(records)
    names = [type(r).__name__ for r in image.to_records()]
    assert names == ["RegisterBrokerRecord", "TopicRecord", "PartitionRecord",
                     "PartitionRecord", "ChunkRecord"]


def test_content_hash_ignores_provenance_and_sees_content() -> None:
    image = replay([topic(), partition()])
    same = image.with_provenance(MetadataProvenance(99, 9))
    assert same.content_hash() == image.content_hash()
    other = replay([topic(), partition(replicas=(1,))])
    assert other.content_hash() != image.content_hash()


def test_content_hash_is_stable_across_processes() -> None:
    code = (
        "from tests.unit.controller.image.support import *\n"
        "print(replay([broker(0), topic(), partition(), chunk(0, 9, 9, (0,))]).content_hash())"
    )
    here = replay([broker(0), topic(), partition(), chunk(0, 9, 9, (0,))]).content_hash()
    there = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True, env={"PYTHONHASHSEED": "123"}).stdout.strip()
    assert there == here
