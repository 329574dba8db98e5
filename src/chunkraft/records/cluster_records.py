"""Records about the cluster as a whole: ACLs, producer id blocks, controller registrations and
the no-op barrier."""

from __future__ import annotations

import uuid
from typing import Annotated, NamedTuple

from chunkraft.records.schema import (
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    ZERO_UUID,
    Check,
    metadata_record,
)

__all__ = [
    "AccessControlEntryRecord",
    "ControllerRegistrationRecord",
    "NoOpRecord",
    "ProducerIdsRecord",
    "RemoveAccessControlEntryRecord",
]


@metadata_record(6, "0", "An ACL was added.")
class AccessControlEntryRecord(NamedTuple):
    """Full state of one ACL binding, keyed by its id."""

    id: Annotated[uuid.UUID, UUID("0+", "The ACL id.", check=Check.TOPIC_ID)] = ZERO_UUID
    resource_type: Annotated[int, INT8("0+", "The resource type.")] = 0
    resource_name: Annotated[str, STRING("0+", "The resource name.")] = ""
    pattern_type: Annotated[int, INT8("0+", "The pattern type (literal, prefixed).")] = 0
    principal: Annotated[str, STRING("0+", "The principal, e.g. User:alice.")] = ""
    host: Annotated[str, STRING("0+", "The host, or * for any.")] = "*"
    operation: Annotated[int, INT8("0+", "The operation.")] = 0
    permission_type: Annotated[int, INT8("0+", "Allow or deny.")] = 0


@metadata_record(7, "0", "An ACL was removed.")
class RemoveAccessControlEntryRecord(NamedTuple):
    """Removes one ACL binding by id."""

    id: Annotated[uuid.UUID, UUID("0+", "The ACL id.", check=Check.TOPIC_ID)] = ZERO_UUID


@metadata_record(15, "0", "A block of producer ids was allocated to a broker.")
class ProducerIdsRecord(NamedTuple):
    """The block ends at ``next_producer_id`` (exclusive) and starts where the previous ended."""

    broker_id: Annotated[
        int, INT32("0+", "The broker the block went to, or -1.", check=Check.LEADER)
    ] = -1
    broker_epoch: Annotated[
        int, INT64("0+", "That broker's epoch, or -1.", check=Check.EPOCH)
    ] = -1
    next_producer_id: Annotated[
        int, INT64("0+", "The next producer id not yet allocated.", check=Check.NON_NEGATIVE)
    ] = 0


@metadata_record(20, "0", "A record that changes nothing: a barrier for linearizable reads.")
class NoOpRecord(NamedTuple):
    """Changes nothing; the controller commits one to learn that its log is current."""


@metadata_record(27, "0", "A controller's endpoints: its Raft and HTTP listeners.")
class ControllerRegistrationRecord(NamedTuple):
    """Full state of one controller's registration (Kafka's ControllerRegistrationRecord),
    replacing any earlier one of the id. Written when a voter is added to the quorum
    (``chunkraft quorum add-controller``), so that every node can map the Raft address of a
    voter that no static ``controller.quorum.voters`` names to its id, and forward writes to
    its HTTP URL. Which controllers vote is Raft's membership, not this record."""

    controller_id: Annotated[
        int, INT32("0+", "The controller's node id.", check=Check.NON_NEGATIVE)
    ] = 0
    incarnation_id: Annotated[
        uuid.UUID, UUID("0+", "A random id of this registration.", check=Check.TOPIC_ID)
    ] = ZERO_UUID
    raft_address: Annotated[str, STRING("0+", "The Raft listener, host:port.")] = ""
    http_url: Annotated[str, STRING("0+", "The HTTP listener, as a URL.")] = ""
