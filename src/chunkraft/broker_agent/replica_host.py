"""ReplicaHost: what the data-plane paths (produce, fetch, chunk roll) need of the replica code.

The paths take this small Protocol instead of the ReplicaManager, so the manager imports them
and nothing imports it back (the import cycle the manager had with ``produce_path``,
``fetch_path`` and ``chunk_roll``). The ReplicaManager is the implementation; a test may pass
any object with these members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from chunkraft.broker_agent.partition import Partition
from chunkraft.broker_agent.peer_client import ControllerChannelLike, PeerClientLike
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.topic_configs import TopicConfig
from chunkraft.controller.image import MetadataImage

__all__ = ["ReplicaHost"]


class ReplicaHost(Protocol):
    """This broker's replicas as the data plane sees them; used on the broker's main loop."""

    @property
    def node_id(self) -> int: ...

    @property
    def image(self) -> MetadataImage:
        """The metadata image the replicas were last made to match."""
        ...

    @property
    def partitions(self) -> dict[tuple[str, int], Partition]:
        """This broker's partitions by (topic, index)."""
        ...

    @property
    def config(self) -> ReplicationConfig: ...

    @property
    def controller(self) -> ControllerChannelLike: ...

    @property
    def peers(self) -> PeerClientLike:
        """The other brokers (the leader reads a chunk it does not hold from a holder)."""
        ...

    @property
    def time_ms(self) -> Callable[[], int]:
        """The wall clock in milliseconds."""
        ...

    @property
    def broker_epoch(self) -> Callable[[], int]:
        """The broker's registration epoch (-1 before registering)."""
        ...

    def topic_config(self, topic: str) -> TopicConfig:
        """The topic's effective configuration on this broker (cached: cheap per produce)."""
        ...

    def after_leader_append(self, partition: Partition) -> None:
        """After an append on a leader: the HW may move, waiters wake."""
        ...

    def record_follower_fetch(self, partition: Partition, replica_id: int, fetch_offset: int,
                              replica_epoch: int) -> None:
        """A follower fetched at ``fetch_offset``: its LEO, the HW and the ISR may move."""
        ...
