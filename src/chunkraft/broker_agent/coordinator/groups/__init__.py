"""The group coordinator: consumer groups' committed offsets (kept in ``__consumer_offsets``)
and their membership; see :mod:`.coordinator`."""

from chunkraft.broker_agent.coordinator.groups.coordinator import OFFSETS_TOPIC, GroupCoordinator

__all__ = ["OFFSETS_TOPIC", "GroupCoordinator"]
