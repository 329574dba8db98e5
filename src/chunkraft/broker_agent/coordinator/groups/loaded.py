"""What the group coordinator keeps per offsets partition it leads, and how a failed write of
coordinator state is told to clients."""

from __future__ import annotations

import asyncio

from chunkraft.broker_agent.coordinator.groups.offsets_state import OffsetsState
from chunkraft.error_codes import Errors

__all__ = ["WRITE_ERRORS", "LeadershipLost", "Loaded"]

# What a failed append of coordinator state tells the client (Kafka's
# GroupMetadataManager: the coordinator moved, or it cannot write right now).
WRITE_ERRORS = {
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.INVALID_PRODUCER_EPOCH: Errors.PRODUCER_FENCED,
}



class LeadershipLost(Exception):
    """A read of an offsets partition this broker loaded was refused NOT_LEADER_OR_FOLLOWER:
    its leadership moved (a controlled shutdown moves every one away) before the broker's
    replica state said so. Expected, not a failure: the partition is unloaded and its groups
    answered NOT_COORDINATOR, so their clients find the new coordinator."""


class Loaded:
    """One offsets partition this broker leads: its state, the leader epoch it was loaded
    at, and a lock so that folds and appends do not interleave."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.state = OffsetsState()
        self.lock = asyncio.Lock()
