"""The controllers part of the image: each controller's registration, keyed by id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import immutables

from chunkraft.records import ControllerRegistrationRecord

__all__ = ["ControllersImage", "replay_controller_registration"]


class ControllersImage:
    """Immutable map of controller id -> its latest ControllerRegistrationRecord. Thread-safe.

    Only controllers added while the quorum served (``chunkraft quorum add-controller``) are
    here; the voters a node was configured with (``controller.quorum.voters``,
    ``controller.http.urls``) are not, and a registration wins over them for its id."""

    __slots__ = ("by_id",)
    EMPTY: ClassVar[ControllersImage]

    def __init__(self, by_id: immutables.Map[int, ControllerRegistrationRecord]) -> None:
        self.by_id = by_id

    def __len__(self) -> int:
        return len(self.by_id)

    def __iter__(self) -> Iterator[ControllerRegistrationRecord]:
        for controller_id in sorted(self.by_id):
            yield self.by_id[controller_id]

    def get(self, controller_id: int) -> ControllerRegistrationRecord | None:
        return self.by_id.get(controller_id)

    def by_raft_address(self, address: str) -> ControllerRegistrationRecord | None:
        """The registration whose Raft listener is ``address`` (the latest, if several were:
        an address reused by a new id)."""
        found = [r for r in self.by_id.values() if r.raft_address == address]
        return max(found, key=lambda r: r.controller_id) if found else None

    def to_records(self) -> Iterator[ControllerRegistrationRecord]:
        return iter(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ControllersImage) and self.by_id == other.by_id

    __hash__ = None  # type: ignore[assignment]


ControllersImage.EMPTY = ControllersImage(immutables.Map())


def replay_controller_registration(image: ControllersImage,
                               record: ControllerRegistrationRecord) -> ControllersImage:
    """A registration replaces any earlier one of its id."""
    return ControllersImage(image.by_id.set(record.controller_id, record))
