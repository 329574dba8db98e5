"""The configurations part of the image: each resource's keys set in the metadata log."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

import immutables

from chunkraft.records import BROKER_RESOURCE, TOPIC_RESOURCE, ConfigRecord

__all__ = ["ConfigsDelta", "ConfigsImage", "Resource"]

Resource = tuple[int, str]
"""(resource type, resource name): ``(2, "orders")``, ``(4, "1")``, ``(4, "")`` (the cluster
default of every broker)."""

_NONE: Mapping[str, str] = immutables.Map()


class ConfigsImage:
    """Immutable map of resource -> {key: value} (text, as set), only the keys set in the log.
    Thread-safe. Effective values, with their sources, are :mod:`chunkraft.configs.resolve`'s."""

    __slots__ = ("by_resource",)
    EMPTY: ClassVar[ConfigsImage]

    def __init__(self, by_resource: immutables.Map[Resource, immutables.Map[str, str]]) -> None:
        self.by_resource = by_resource

    def values(self, resource_type: int, name: str) -> Mapping[str, str]:
        return self.by_resource.get((resource_type, name), _NONE)

    def topic(self, name: str) -> Mapping[str, str]:
        return self.values(TOPIC_RESOURCE, name)

    def broker(self, broker_id: int) -> Mapping[str, str]:
        return self.values(BROKER_RESOURCE, str(broker_id))

    def cluster_default(self) -> Mapping[str, str]:
        """What every broker takes unless set for it (Kafka's ``--entity-default``)."""
        return self.values(BROKER_RESOURCE, "")

    def __len__(self) -> int:
        return len(self.by_resource)

    def to_records(self) -> Iterator[ConfigRecord]:
        for resource in sorted(self.by_resource):
            values = self.by_resource[resource]
            for name in sorted(values):
                yield ConfigRecord(resource[0], resource[1], name, values[name])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigsImage) and self.by_resource == other.by_resource

    __hash__ = None  # type: ignore[assignment]


ConfigsImage.EMPTY = ConfigsImage(immutables.Map())


class ConfigsDelta:
    """Config changes on top of a base image; not thread-safe (one replayer)."""

    def __init__(self, base: ConfigsImage) -> None:
        self._base = base
        self._changed: dict[Resource, dict[str, str]] = {}

    def _resource(self, resource: Resource) -> dict[str, str]:
        current = self._changed.get(resource)
        if current is None:
            current = dict(self._base.by_resource.get(resource, _NONE))
            self._changed[resource] = current
        return current

    def replay(self, record: ConfigRecord) -> None:
        """Sets the key, or deletes it (a null value)."""
        values = self._resource((record.resource_type, record.resource_name))
        if record.value is None:
            values.pop(record.name, None)
        else:
            values[record.name] = record.value

    def remove_topic(self, name: str) -> None:
        """A deleted topic's configurations go with it (as Kafka's do)."""
        self._resource((TOPIC_RESOURCE, name)).clear()

    def apply(self) -> ConfigsImage:
        if not self._changed:
            return self._base
        by_resource = self._base.by_resource.mutate()
        for resource, values in self._changed.items():
            if values:
                by_resource[resource] = immutables.Map(values)
            else:
                by_resource.pop(resource, None)
        return ConfigsImage(by_resource.finish())
