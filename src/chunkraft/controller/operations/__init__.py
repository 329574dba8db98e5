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
from chunkraft.controller.operations.chunks import (
    alter_chunk_assignments,
    check_broker_epoch,
    chunk_replica_state,
    create_chunks,
)
from chunkraft.controller.operations.configs import (
    alter_configs,
    describe_configs,
    incremental_alter_configs,
)
from chunkraft.controller.operations.create_partitions import create_partitions
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker, BrokerSessions
from chunkraft.controller.operations.leader_election import (
    ElectLeader,
    build_partition_change,
    elect_leader,
    remove_from_isr_and_leadership,
)
from chunkraft.controller.operations.placement import (
    StripedReplicaPlacer,
    UsableBroker,
    place_replicas,
    usable_brokers,
)
from chunkraft.controller.operations.producer_ids import allocate_producer_ids
from chunkraft.controller.operations.record_budget import MAX_RECORDS_PER_USER_OP, RecordBudget
from chunkraft.controller.operations.topics import create_topics, delete_topics, describe

__all__ = [
    "MAX_RECORDS_PER_USER_OP",
    "BrokerHeartbeatTracker",
    "BrokerSessions",
    "ElectLeader",
    "RecordBudget",
    "StripedReplicaPlacer",
    "UsableBroker",
    "allocate_producer_ids",
    "alter_chunk_assignments",
    "alter_configs",
    "alter_partition",
    "broker_heartbeat",
    "build_partition_change",
    "check_broker_epoch",
    "chunk_replica_state",
    "create_acls",
    "create_chunks",
    "create_partitions",
    "create_topics",
    "delete_acls",
    "delete_topics",
    "describe",
    "describe_acls",
    "describe_configs",
    "elect_leader",
    "fence_broker",
    "incremental_alter_configs",
    "place_replicas",
    "register_broker",
    "remove_from_isr_and_leadership",
    "unregister_broker",
    "usable_brokers",
]
