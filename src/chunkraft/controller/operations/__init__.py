"""Controller operations: pure functions of (committed image, request) -> ControllerResult.

An operation validates a request against the committed image and returns the records to commit
and the response; it never changes state (only replay of committed records does).
"""

from chunkraft.controller.operations.acls import create_acls, delete_acls, describe_acls
from chunkraft.controller.operations.alter_partition import alter_partition
from chunkraft.controller.operations.brokers import (
    broker_heartbeat,
    fence_broker,
    register_broker,
    unregister_broker,
)
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker, BrokerSessions
from chunkraft.controller.operations.leader_election import (
    ElectLeader,
    build_partition_change,
    elect_leader,
    remove_from_isr_and_leadership,
)
from chunkraft.controller.operations.producer_ids import allocate_producer_ids

__all__ = [
    "BrokerHeartbeatTracker",
    "BrokerSessions",
    "ElectLeader",
    "allocate_producer_ids",
    "alter_partition",
    "broker_heartbeat",
    "build_partition_change",
    "create_acls",
    "delete_acls",
    "describe_acls",
    "elect_leader",
    "fence_broker",
    "register_broker",
    "remove_from_isr_and_leadership",
    "unregister_broker",
]
