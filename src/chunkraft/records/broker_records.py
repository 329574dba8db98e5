"""Records about brokers: registration, registration changes and unregistration."""

from __future__ import annotations

import uuid
from typing import Annotated, NamedTuple

from chunkraft.records.common_fields import BrokerIdField
from chunkraft.records.schema import (
    BOOL,
    INT8,
    INT16,
    INT64,
    STRING,
    STRUCT_ARRAY,
    UINT16,
    UUID,
    UUID_ARRAY,
    ZERO_UUID,
    Check,
    metadata_record,
    record_struct,
)

__all__ = [
    "BrokerEndpoint",
    "BrokerFeature",
    "BrokerRegistrationChangeRecord",
    "RegisterBrokerRecord",
    "UnregisterBrokerRecord",
]


@record_struct
class BrokerEndpoint(NamedTuple):
    """One listener of a broker."""

    name: Annotated[str, STRING("0+", "The name of the endpoint.")] = ""
    host: Annotated[str, STRING("0+", "The hostname.")] = ""
    port: Annotated[int, UINT16("0+", "The port.")] = 0
    security_protocol: Annotated[int, INT16("0+", "The security protocol.")] = 0


@record_struct
class BrokerFeature(NamedTuple):
    """A feature and the range of its levels that a broker supports."""

    name: Annotated[str, STRING("0+", "The feature name.")] = ""
    min_supported_version: Annotated[
        int, INT16("0+", "The minimum supported feature level.")
    ] = 0
    max_supported_version: Annotated[
        int, INT16("0+", "The maximum supported feature level.")
    ] = 0


@metadata_record(0, "0-3", "A broker registered; its epoch is the offset of this record.")
class RegisterBrokerRecord(NamedTuple):
    """Full state of a broker registration (replaces any earlier registration of the id)."""

    broker_id: BrokerIdField = -1
    is_migrating_zk_broker: Annotated[
        bool, BOOL("2+", "True if the broker is a ZK broker in migration mode.")
    ] = False
    incarnation_id: Annotated[
        uuid.UUID, UUID("0+", "The incarnation id of the broker process.")
    ] = ZERO_UUID
    broker_epoch: Annotated[
        int, INT64("0+", "The broker epoch assigned by the controller.", check=Check.EPOCH)
    ] = -1
    end_points: Annotated[
        tuple[BrokerEndpoint, ...],
        STRUCT_ARRAY(BrokerEndpoint, "0+", "The endpoints that reach this broker."),
    ] = ()
    features: Annotated[
        tuple[BrokerFeature, ...],
        STRUCT_ARRAY(BrokerFeature, "0+", "The features this broker supports."),
    ] = ()
    rack: Annotated[
        str | None, STRING("0+", "The broker rack, or null.", nullable="0+")
    ] = None
    fenced: Annotated[bool, BOOL("0+", "True if the broker is fenced.")] = True
    in_controlled_shutdown: Annotated[
        bool, BOOL("1+", "True if the broker is in controlled shutdown.")
    ] = False
    log_dirs: Annotated[
        tuple[uuid.UUID, ...],
        UUID_ARRAY("3+", "The log directories of this broker that are available.", tag=0),
    ] = ()


@metadata_record(1, "0", "A broker registration was removed.")
class UnregisterBrokerRecord(NamedTuple):
    """Removes the registration of a broker id, if its epoch matches."""

    broker_id: BrokerIdField = -1
    broker_epoch: Annotated[
        int, INT64("0+", "The epoch of the registration removed.", check=Check.EPOCH)
    ] = -1


@metadata_record(17, "0-2", "A broker was fenced, unfenced or began a controlled shutdown.")
class BrokerRegistrationChangeRecord(NamedTuple):
    """Changes one registration; 0 in a change field means unchanged."""

    broker_id: BrokerIdField = -1
    broker_epoch: Annotated[
        int, INT64("0+", "The broker epoch this change applies to.", check=Check.EPOCH)
    ] = -1
    fenced: Annotated[
        int, INT8("0+", "-1: unfenced; 0: unchanged; 1: fenced.", tag=0)
    ] = 0
    in_controlled_shutdown: Annotated[
        int, INT8("1+", "0: unchanged; 1: the broker is in controlled shutdown.", tag=1)
    ] = 0
    log_dirs: Annotated[
        tuple[uuid.UUID, ...],
        UUID_ARRAY("2+", "The log directories of this broker that are available.", tag=2),
    ] = ()
