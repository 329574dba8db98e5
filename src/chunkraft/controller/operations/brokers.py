"""Broker lifecycle operations: register, heartbeat, unregister, and fencing on session expiry.

Each operation is a pure function of the committed image (and, where Kafka needs it, the leader's
heartbeat tracker) that returns the records to commit and the response; none changes state. The
broker state machine is Kafka's (``BrokerHeartbeatManager.calculateNextBrokerState``), read from
the image instead of leader-local memory: a broker is FENCED, UNFENCED or in CONTROLLED_SHUTDOWN,
and a heartbeat may move it to another state or tell it to shut down now.

Inactive chunks are left alone by every operation here: a chunk has no leader, its replicas
hold immutable copies that fencing does not damage, and a client reading a chunk skips replicas
on fenced brokers using the brokers image. See docs/controller.md.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.heartbeats import BrokerSessions
from chunkraft.controller.operations.leader_election import (
    ElectLeader,
    active_broker_acceptor,
    build_partition_change,
    remove_from_isr_and_leadership,
)
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.brokers import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from chunkraft.records import (
    NO_LEADER,
    ZERO_UUID,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid

__all__ = [
    "SECURITY_PROTOCOLS",
    "BrokerControlState",
    "broker_heartbeat",
    "fence_broker",
    "register_broker",
    "shut_down_cleanly",
    "unregister_broker",
]

SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
"""Kafka's security protocol ids, as a listener's ``security_protocol`` gives them."""

_FENCE = 1
_UNFENCE = -1
_IN_CONTROLLED_SHUTDOWN = 1


class BrokerControlState(enum.Enum):
    """Kafka's ``BrokerControlState``: where a broker is, or is told to go, on a heartbeat."""

    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    SHUTDOWN_NOW = "shutdown_now"

    @property
    def fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)


# ------------------------------------------------------------------ register


def register_broker(
    image: MetadataImage,
    request: BrokerRegistrationRequest,
    *,
    cluster_id: str,
    sessions: BrokerSessions,
    now: float,
) -> ControllerResult[BrokerRegistrationResponse]:
    """Registers a broker process; its epoch is the offset of its RegisterBrokerRecord.

    Checks, in Kafka's order: INCONSISTENT_CLUSTER_ID if ``request.cluster_id`` differs from
    ``cluster_id``; INVALID_REQUEST for an incarnation id that is not a (non-zero) uuid;
    DUPLICATE_BROKER_REGISTRATION if the id is registered with another incarnation whose
    session (``sessions``, at ``now``) is still valid, unless that incarnation finished a
    controlled shutdown (:func:`shut_down_cleanly`); INVALID_REQUEST for duplicate listener or
    feature names, an unknown security protocol or a feature range with min > max. The same
    incarnation registering again, any incarnation after the old session expired, or any
    incarnation after the old one shut down cleanly, succeeds.

    The RegisterBrokerRecord is the batch's first record, so it takes offset ``image.offset + 1``
    (the quorum commits the batch there or not at all) and that is the broker epoch. The broker
    starts fenced; its heartbeats unfence it once it has caught up to its registration. When a
    new incarnation replaces a registration, the same batch takes the old incarnation out of
    every ISR and leadership (it may have lost data it had acknowledged), as fencing does.
    """

    def fail(error: Errors, message: str) -> ControllerResult[BrokerRegistrationResponse]:
        return ControllerResult.of(
            BrokerRegistrationResponse(error_code=error.code, error_message=message)
        )

    broker_id = request.broker_id
    if request.cluster_id != cluster_id:
        return fail(
            Errors.INCONSISTENT_CLUSTER_ID,
            f"Expected cluster ID {cluster_id}, but got cluster ID {request.cluster_id}",
        )
    try:
        incarnation_id = parse_kafka_uuid(request.incarnation_id)
    except ValueError:
        incarnation_id = ZERO_UUID
    if incarnation_id == ZERO_UUID:
        return fail(
            Errors.INVALID_REQUEST,
            f"incarnation id {request.incarnation_id!r} is not a non-zero uuid",
        )
    existing = image.brokers.get(broker_id)
    if (
        existing is not None
        and existing.incarnation_id != incarnation_id
        and not shut_down_cleanly(existing)
        and sessions.has_valid_session(broker_id, existing.broker_epoch, now)
    ):
        return fail(
            Errors.DUPLICATE_BROKER_REGISTRATION,
            f"Another broker is registered with broker id {broker_id} (incarnation "
            f"{kafka_uuid_str(existing.incarnation_id)}) and its session has not expired.",
        )
    problem = _listener_and_feature_problem(request)
    if problem is not None:
        return fail(Errors.INVALID_REQUEST, problem)

    broker_epoch = image.offset + 1
    registration = RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=incarnation_id,
        broker_epoch=broker_epoch,
        end_points=tuple(
            BrokerEndpoint(
                name=listener.name,
                host=listener.host,
                port=listener.port,
                security_protocol=listener.security_protocol,
            )
            for listener in request.listeners
        ),
        features=tuple(
            BrokerFeature(
                name=feature.name,
                min_supported_version=feature.min_supported_version,
                max_supported_version=feature.max_supported_version,
            )
            for feature in request.features
        ),
        rack=request.rack,
        fenced=True,
        in_controlled_shutdown=False,
    )
    records: list[object] = [registration]
    if existing is not None and existing.incarnation_id != incarnation_id:
        records.extend(_leave_isrs_and_leadership(image, broker_id))
    return ControllerResult.of(BrokerRegistrationResponse(broker_epoch=broker_epoch), records)


def shut_down_cleanly(registration: RegisterBrokerRecord) -> bool:
    """Whether the registration's process finished a controlled shutdown.

    A heartbeat answered ``should_shut_down`` commits, in the same batch, the registration as
    fenced and in controlled shutdown (:func:`broker_heartbeat`), and nothing but a new
    registration clears that pair. So a registration in that state is one whose process was
    told to stop and holds no session worth protecting: Kafka lets such a broker register again
    at once instead of refusing it until the old session times out (``broker.session.timeout.ms``,
    9 s by default). Because the fact is in the image, not in the leader's memory, a controller
    failover between the shutdown and the restart changes nothing.
    """
    return registration.fenced and registration.in_controlled_shutdown


def _listener_and_feature_problem(request: BrokerRegistrationRequest) -> str | None:
    names: set[str] = set()
    for listener in request.listeners:
        if listener.name in names:
            return f"listener name {listener.name!r} appears more than once"
        names.add(listener.name)
        if listener.security_protocol not in SECURITY_PROTOCOLS:
            return (
                f"listener {listener.name!r} has unknown security protocol "
                f"{listener.security_protocol}; known: {SECURITY_PROTOCOLS}"
            )
    names.clear()
    for feature in request.features:
        if feature.name in names:
            return f"feature {feature.name!r} appears more than once"
        names.add(feature.name)
        if feature.min_supported_version > feature.max_supported_version:
            return (
                f"feature {feature.name!r} has min supported version "
                f"{feature.min_supported_version} above max {feature.max_supported_version}"
            )
    return None


# ------------------------------------------------------------------ heartbeat


def broker_heartbeat(
    image: MetadataImage, request: BrokerHeartbeatRequest
) -> ControllerResult[BrokerHeartbeatResponse]:
    """Answers a broker heartbeat and moves the broker between states (Kafka's rules).

    BROKER_ID_NOT_REGISTERED for an unknown broker id; STALE_BROKER_EPOCH when the epoch is not
    the registration's. Then, from the broker's state in ``image``:

    - FENCED: ``want_shut_down`` -> shut down now (the registration is marked in controlled
      shutdown, so the next incarnation may register at once). Otherwise, unless
      ``want_fence``, unfence once ``current_metadata_offset`` >= the broker epoch (the offset of
      its registration): a BrokerRegistrationChangeRecord (fenced=-1) and elections for
      leaderless partitions whose ISR now has an acceptable leader. A broker that was fenced at
      the end of a controlled shutdown is not unfenced again: it must register anew.
    - UNFENCED: ``want_fence`` -> fence (with ``want_shut_down``: and shut down now).
      ``want_shut_down`` -> if it leads a partition, controlled shutdown: the change record
      (in_controlled_shutdown=1), and the broker leaves every ISR it is not the last member of,
      with new leaders elected from the remaining ISR (-1 when none is acceptable), as Kafka's
      ``handleBrokerInControlledShutdown`` does; else shut down now (fenced).
    - CONTROLLED_SHUTDOWN: once it leads no partition, shut down now (fenced).

    Fencing takes the broker out of every ISR (keeping a last member) and leadership. Every
    "shut down now" leaves the registration fenced and in controlled shutdown, the mark that
    lets :func:`register_broker` accept the broker's next incarnation at once. The
    response tells whether the broker has caught up, is fenced and should shut down after the
    records commit. The caller records the contact in its heartbeat tracker.
    """
    registration = image.brokers.get(request.broker_id)
    if registration is None:
        return ControllerResult.of(BrokerHeartbeatResponse(
            error_code=Errors.BROKER_ID_NOT_REGISTERED.code,
            error_message=f"Broker ID {request.broker_id} is not currently registered",
        ))
    if registration.broker_epoch != request.broker_epoch:
        return ControllerResult.of(BrokerHeartbeatResponse(
            error_code=Errors.STALE_BROKER_EPOCH.code,
            error_message=f"Expected broker epoch {registration.broker_epoch}, but got broker "
            f"epoch {request.broker_epoch}",
        ))
    broker_id = registration.broker_id
    caught_up = request.current_metadata_offset >= registration.broker_epoch
    current = _current_state(image, broker_id)
    next_state = current
    records: list[object] = []
    State = BrokerControlState
    if current is State.FENCED:
        if request.want_shut_down:
            next_state = State.SHUTDOWN_NOW
            records = _shutdown_now_records(image, broker_id)
        elif not request.want_fence and caught_up and not registration.in_controlled_shutdown:
            next_state = State.UNFENCED
            records = _unfence_records(image, broker_id)
    elif current is State.UNFENCED:
        if request.want_fence and not request.want_shut_down:
            next_state = State.FENCED
            records = _fence_records(image, broker_id)
        elif request.want_fence:
            next_state = State.SHUTDOWN_NOW
            records = _shutdown_now_records(image, broker_id)
        elif request.want_shut_down:
            if _leads_a_partition(image, broker_id):
                next_state = State.CONTROLLED_SHUTDOWN
                records = _controlled_shutdown_records(image, broker_id)
            else:
                next_state = State.SHUTDOWN_NOW
                records = _shutdown_now_records(image, broker_id)
    elif not _leads_a_partition(image, broker_id):  # in controlled shutdown
        next_state = State.SHUTDOWN_NOW
        records = _shutdown_now_records(image, broker_id)
    return ControllerResult.non_atomic(
        BrokerHeartbeatResponse(
            is_caught_up=caught_up,
            is_fenced=next_state.fenced,
            should_shut_down=next_state is State.SHUTDOWN_NOW,
        ),
        records,
    )


def _current_state(image: MetadataImage, broker_id: int) -> BrokerControlState:
    registration = image.brokers.get(broker_id)
    assert registration is not None
    if registration.fenced:
        return BrokerControlState.FENCED
    if registration.in_controlled_shutdown:
        return BrokerControlState.CONTROLLED_SHUTDOWN
    return BrokerControlState.UNFENCED


# ------------------------------------------------------------------ fence, unregister


def fence_broker(image: MetadataImage, broker_id: int) -> ControllerResult[None]:
    """Fences a broker whose session expired (the quorum layer calls this for each id
    ``BrokerHeartbeatTracker.expired`` names).

    Records, as Kafka's ``handleBrokerFenced``: for every partition whose ISR holds the broker
    (or that it leads), a PartitionChangeRecord taking it out of the ISR (unless it is the last
    member, which stays) and electing a new leader from the remaining ISR among active brokers
    (-1 when none); then BrokerRegistrationChangeRecord fenced=1. No records for an unknown or
    already fenced broker. Inactive chunks keep the broker in their replica lists.
    """
    registration = image.brokers.get(broker_id)
    if registration is None or registration.fenced:
        return ControllerResult.of(None)
    return ControllerResult.non_atomic(None, _fence_records(image, broker_id))


def unregister_broker(
    image: MetadataImage, request: UnregisterBrokerRequest
) -> ControllerResult[UnregisterBrokerResponse]:
    """Removes a broker's registration (Kafka's ``unregisterBroker``).

    BROKER_ID_NOT_REGISTERED for an unknown id. Otherwise the broker leaves every ISR and
    leadership as when fenced, then an UnregisterBrokerRecord with its epoch. Its partitions and
    inactive chunks keep it in their replica lists (reassignment moves replicas, not this). The
    caller also forgets the broker in its heartbeat tracker.
    """
    registration = image.brokers.get(request.broker_id)
    if registration is None:
        return ControllerResult.of(UnregisterBrokerResponse(
            error_code=Errors.BROKER_ID_NOT_REGISTERED.code,
            error_message=f"Broker ID {request.broker_id} is not currently registered",
        ))
    records: list[object] = list(_leave_isrs_and_leadership(image, request.broker_id))
    records.append(UnregisterBrokerRecord(
        broker_id=request.broker_id, broker_epoch=registration.broker_epoch
    ))
    return ControllerResult.non_atomic(UnregisterBrokerResponse(), records)


# ------------------------------------------------------------------ the records of transitions


def _partitions(image: MetadataImage) -> Iterator[PartitionRecord]:
    """Every partition, by topic name then partition id (a deterministic record order).

    A scan: transitions are rare (fencing, shutdown), so the image keeps no broker -> partition
    index; a steady heartbeat never scans.
    """
    for topic in image.topics:
        partitions = topic.partitions
        for partition_id in sorted(partitions):
            yield partitions[partition_id]


def _leads_a_partition(image: MetadataImage, broker_id: int) -> bool:
    return any(partition.leader == broker_id for partition in _partitions(image))


def _leave_isrs_and_leadership(
    image: MetadataImage, broker_id: int
) -> Iterator[PartitionChangeRecord]:
    is_acceptable = active_broker_acceptor(image.brokers, excluding=broker_id)
    for partition in _partitions(image):
        if broker_id in partition.isr or partition.leader == broker_id:
            change = remove_from_isr_and_leadership(partition, broker_id, is_acceptable)
            if change is not None:
                yield change


def _fence_records(image: MetadataImage, broker_id: int) -> list[object]:
    registration = image.brokers.get(broker_id)
    assert registration is not None
    records: list[object] = list(_leave_isrs_and_leadership(image, broker_id))
    if not registration.fenced:
        records.append(BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=registration.broker_epoch, fenced=_FENCE
        ))
    return records


def _shutdown_now_records(image: MetadataImage, broker_id: int) -> list[object]:
    """The broker leaves every ISR and leadership, then one change record leaves it fenced and
    in controlled shutdown (:func:`shut_down_cleanly`); fields already so are left unchanged."""
    registration = image.brokers.get(broker_id)
    assert registration is not None
    records: list[object] = list(_leave_isrs_and_leadership(image, broker_id))
    if not registration.fenced or not registration.in_controlled_shutdown:
        records.append(BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=registration.broker_epoch,
            fenced=0 if registration.fenced else _FENCE,
            in_controlled_shutdown=0 if registration.in_controlled_shutdown
            else _IN_CONTROLLED_SHUTDOWN,
        ))
    return records


def _controlled_shutdown_records(image: MetadataImage, broker_id: int) -> list[object]:
    registration = image.brokers.get(broker_id)
    assert registration is not None
    records: list[object] = []
    if not registration.in_controlled_shutdown:
        records.append(BrokerRegistrationChangeRecord(
            broker_id=broker_id,
            broker_epoch=registration.broker_epoch,
            in_controlled_shutdown=_IN_CONTROLLED_SHUTDOWN,
        ))
    records.extend(_leave_isrs_and_leadership(image, broker_id))
    return records


def _unfence_records(image: MetadataImage, broker_id: int) -> list[object]:
    registration = image.brokers.get(broker_id)
    assert registration is not None
    records: list[object] = [BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=registration.broker_epoch, fenced=_UNFENCE
    )]
    election = ElectLeader(active_broker_acceptor(image.brokers, including=broker_id))
    for partition in _partitions(image):
        if partition.leader == NO_LEADER:
            change = build_partition_change(partition, leader=election)
            if change is not None:
                records.append(change)
    return records

