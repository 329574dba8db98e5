"""controller/image/controllers: a registration replaces its id's earlier one; lookups by id
and by Raft address; the image writes them back out."""

from __future__ import annotations

import uuid

from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.controller.image.controllers import ControllersImage, replay_controller_registration
from chunkraft.records import ControllerRegistrationRecord


def registration(node: int, port: int) -> ControllerRegistrationRecord:
    return ControllerRegistrationRecord(controller_id=node, incarnation_id=uuid.uuid4(),
                                        raft_address=f"198.18.0.{node}:{port}",
                                        http_url=f"http://198.18.0.{node}:9090")


def test_a_registration_replaces_the_earlier_one_of_its_id() -> None:
    first, moved = registration(4, 9093), registration(4, 9193)
    image = replay_controller_registration(ControllersImage.EMPTY, first)
    image = replay_controller_registration(image, moved)
    assert len(image) == 1 and image.get(4) == moved
    assert image.by_raft_address("198.18.0.4:9193") == moved
    assert image.by_raft_address("198.18.0.4:9093") is None  # the old address is gone
    assert ControllersImage.EMPTY.get(4) is None


def test_the_image_holds_registrations_and_writes_them_back() -> None:
    records = [registration(5, 9093), registration(4, 9093)]
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay_all(records)
    image = delta.apply()
    assert not image.is_empty()
    assert [r.controller_id for r in image.to_records()] == [4, 5]
    again = MetadataDelta(MetadataImage.EMPTY)
    again.replay_all(image.to_records())
    assert again.apply().with_provenance(image.provenance) == image
    assert image.content_hash() != MetadataImage.EMPTY.content_hash()
