import uuid

import pytest

from chunkraft.controller.image import ProducerIdsImage
from chunkraft.errors import InvariantError
from chunkraft.records import (
    AccessControlEntryRecord,
    ProducerIdsRecord,
    RemoveAccessControlEntryRecord,
)
from tests.unit.controller.image.support import replay

ACL_ID = uuid.UUID(int=5)


def test_acls_are_added_and_removed_by_id() -> None:
    acl = AccessControlEntryRecord(id=ACL_ID, resource_type=2, resource_name="orders",
                                   pattern_type=3, principal="User:alice", operation=3,
                                   permission_type=3)
    image = replay([acl])
    assert list(image.acls) == [acl]
    assert len(replay([RemoveAccessControlEntryRecord(id=ACL_ID)], image).acls) == 0
    with pytest.raises(InvariantError, match="unknown ACL"):
        replay([RemoveAccessControlEntryRecord(id=uuid.UUID(int=6))], image)


def test_producer_id_blocks_only_grow() -> None:
    image = replay([ProducerIdsRecord(broker_id=1, broker_epoch=3, next_producer_id=1000)])
    assert image.producer_ids == ProducerIdsImage(1000, 1, 3)
    with pytest.raises(InvariantError, match="only grow"):
        replay([ProducerIdsRecord(broker_id=2, broker_epoch=0, next_producer_id=1000)], image)
    assert ProducerIdsImage().to_records() == []
