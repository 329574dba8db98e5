"""The ACL part of the image: ACL bindings keyed by id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import ClassVar

import immutables

from chunkraft.errors import InvariantError
from chunkraft.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

__all__ = ["AclsDelta", "AclsImage"]


class AclsImage:
    """Immutable map of ACL id -> binding (the AccessControlEntryRecord). Thread-safe."""

    __slots__ = ("by_id",)
    EMPTY: ClassVar[AclsImage]

    def __init__(self, by_id: immutables.Map[uuid.UUID, AccessControlEntryRecord]) -> None:
        self.by_id = by_id

    def __len__(self) -> int:
        return len(self.by_id)

    def __iter__(self) -> Iterator[AccessControlEntryRecord]:
        for acl_id in sorted(self.by_id, key=lambda u: u.bytes):
            yield self.by_id[acl_id]

    def to_records(self) -> Iterator[AccessControlEntryRecord]:
        return iter(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AclsImage) and self.by_id == other.by_id

    __hash__ = None  # type: ignore[assignment]


AclsImage.EMPTY = AclsImage(immutables.Map())


class AclsDelta:
    """ACL changes on top of a base image; not thread-safe (one replayer)."""

    def __init__(self, base: AclsImage) -> None:
        self._base = base
        self._changed: dict[uuid.UUID, AccessControlEntryRecord | None] = {}

    def replay_add(self, record: AccessControlEntryRecord) -> None:
        self._changed[record.id] = record

    def replay_remove(self, record: RemoveAccessControlEntryRecord) -> None:
        exists = (
            self._changed[record.id] is not None
            if record.id in self._changed
            else record.id in self._base.by_id
        )
        if not exists:
            raise InvariantError(f"RemoveAccessControlEntryRecord for unknown ACL {record.id}")
        self._changed[record.id] = None

    def apply(self) -> AclsImage:
        if not self._changed:
            return self._base
        by_id = self._base.by_id.mutate()
        for acl_id, acl in self._changed.items():
            if acl is None:
                by_id.pop(acl_id, None)
            else:
                by_id[acl_id] = acl
        return AclsImage(by_id.finish())
