"""The producer ids part of the image: the next id not yet handed out."""

from __future__ import annotations

from typing import NamedTuple

from chunkraft.errors import InvariantError
from chunkraft.records import ProducerIdsRecord

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ProducerIdsImage", "replay_producer_ids"]

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdsImage(NamedTuple):
    """The next producer id and the broker that received the last block. Immutable."""

    next_producer_id: int = 0
    last_broker_id: int = -1
    last_broker_epoch: int = -1

    def to_records(self) -> list[ProducerIdsRecord]:
        if self.next_producer_id == 0:
            return []
        return [
            ProducerIdsRecord(
                broker_id=self.last_broker_id,
                broker_epoch=self.last_broker_epoch,
                next_producer_id=self.next_producer_id,
            )
        ]


def replay_producer_ids(image: ProducerIdsImage, record: ProducerIdsRecord) -> ProducerIdsImage:
    """A block ends at ``next_producer_id``; ids only ever grow."""
    if record.next_producer_id <= image.next_producer_id:
        raise InvariantError(
            f"ProducerIdsRecord next id {record.next_producer_id} does not exceed the current "
            f"{image.next_producer_id}: producer ids only grow"
        )
    return ProducerIdsImage(record.next_producer_id, record.broker_id, record.broker_epoch)
