import uuid
from pathlib import Path

import pytest

from chunkraft.controller.image import MetadataImage, MetadataProvenance
from chunkraft.controller.image.snapshot import load_image_snapshot, write_image_snapshot
from chunkraft.errors import SnapshotError
from tests.unit.controller.image.support import broker, chunk, partition, replay, topic

CLUSTER = uuid.UUID(int=77)


def _image() -> MetadataImage:
    image = replay([broker(0), broker(1), topic(), partition(replicas=(0, 1)),
                    chunk(0, 9, 12, (0, 1))])
    return image.with_provenance(MetadataProvenance(41, 3))


def test_snapshot_is_named_after_the_next_offset_and_loads_back_equal(tmp_path: Path) -> None:
    image = _image()
    path = write_image_snapshot(image, tmp_path, CLUSTER)
    assert path.name == "00000000000000000042-0000000003.checkpoint"
    loaded = load_image_snapshot(path)
    assert loaded == image
    assert loaded.content_hash() == image.content_hash()
    assert not list(tmp_path.glob("*.part"))


def test_a_torn_snapshot_gives_no_image(tmp_path: Path) -> None:
    path = write_image_snapshot(_image(), tmp_path, CLUSTER)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 5])
    with pytest.raises(SnapshotError, match="incomplete snapshot"):
        load_image_snapshot(path)


def test_images_not_from_the_log_cannot_be_snapshotted(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only an image read from the log"):
        write_image_snapshot(replay([topic()]), tmp_path, CLUSTER)
