"""The brokers part of the image: registrations keyed by broker id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import immutables

from chunkraft.errors import InvariantError
from chunkraft.records import (
    BrokerRegistrationChangeRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)

__all__ = ["BrokersDelta", "BrokersImage"]

_FENCE = 1
_UNFENCE = -1


class BrokersImage:
    """Immutable map of broker id -> registration (the RegisterBrokerRecord, kept current).

    Thread-safe: never changes after construction.
    """

    __slots__ = ("registrations",)
    EMPTY: ClassVar[BrokersImage]

    def __init__(self, registrations: immutables.Map[int, RegisterBrokerRecord]) -> None:
        self.registrations = registrations

    def get(self, broker_id: int) -> RegisterBrokerRecord | None:
        return self.registrations.get(broker_id)

    def __len__(self) -> int:
        return len(self.registrations)

    def __iter__(self) -> Iterator[RegisterBrokerRecord]:
        for broker_id in sorted(self.registrations):
            yield self.registrations[broker_id]

    def unfenced_ids(self) -> list[int]:
        return sorted(b.broker_id for b in self.registrations.values() if not b.fenced)

    def to_records(self) -> Iterator[RegisterBrokerRecord]:
        return iter(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BrokersImage) and self.registrations == other.registrations

    __hash__ = None  # type: ignore[assignment]


BrokersImage.EMPTY = BrokersImage(immutables.Map())


class BrokersDelta:
    """Broker changes replayed on top of a base image; not thread-safe (one replayer)."""

    def __init__(self, base: BrokersImage) -> None:
        self._base = base
        self._changed: dict[int, RegisterBrokerRecord | None] = {}

    def _current(self, broker_id: int) -> RegisterBrokerRecord | None:
        if broker_id in self._changed:
            return self._changed[broker_id]
        return self._base.get(broker_id)

    def replay_register(self, record: RegisterBrokerRecord) -> None:
        self._changed[record.broker_id] = record

    def replay_unregister(self, record: UnregisterBrokerRecord) -> None:
        current = self._current(record.broker_id)
        if current is None:
            raise InvariantError(f"UnregisterBrokerRecord for unknown broker {record.broker_id}")
        if current.broker_epoch != record.broker_epoch:
            raise InvariantError(
                f"UnregisterBrokerRecord for broker {record.broker_id} epoch "
                f"{record.broker_epoch}, but its registration has epoch {current.broker_epoch}"
            )
        self._changed[record.broker_id] = None

    def replay_change(self, record: BrokerRegistrationChangeRecord) -> None:
        current = self._current(record.broker_id)
        if current is None:
            raise InvariantError(
                f"BrokerRegistrationChangeRecord for unknown broker {record.broker_id}"
            )
        if current.broker_epoch != record.broker_epoch:
            raise InvariantError(
                f"BrokerRegistrationChangeRecord for broker {record.broker_id} epoch "
                f"{record.broker_epoch}, but its registration has epoch {current.broker_epoch}"
            )
        fenced = current.fenced
        if record.fenced == _FENCE:
            fenced = True
        elif record.fenced == _UNFENCE:
            fenced = False
        shutdown = current.in_controlled_shutdown or record.in_controlled_shutdown == 1
        log_dirs = record.log_dirs or current.log_dirs
        self._changed[record.broker_id] = current._replace(
            fenced=fenced, in_controlled_shutdown=shutdown, log_dirs=log_dirs
        )

    def apply(self) -> BrokersImage:
        if not self._changed:
            return self._base
        registrations = self._base.registrations.mutate()
        for broker_id, registration in self._changed.items():
            if registration is None:
                registrations.pop(broker_id, None)
            else:
                registrations[broker_id] = registration
        return BrokersImage(registrations.finish())
