"""Broker lifecycle and ISR messages: registration, heartbeat, unregistration, AlterPartition.

Shaped like Kafka's BrokerRegistration, BrokerHeartbeat, UnregisterBroker and AlterPartition
(KIP-497, with KIP-841's broker epochs in the new ISR) messages, with Kafka's field names in
snake_case. Uuids travel as text (Kafka's 22-character base64 form, or the hex form); the
operations parse them and answer INVALID_REQUEST for one that is not a uuid. Structural problems
(a missing field, a negative broker id, both or neither of two alternative fields) fail model
validation, which the HTTP layer answers with 400.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import ConfigDict, Field, Strict, model_validator

from chunkraft.protocol.base import (
    Int16,
    Int32,
    Int64,
    Message,
    StrictBool,
    StrictInt,
    exactly_one_of,
)

__all__ = [
    "AlterPartitionBrokerState",
    "AlterPartitionPartitionData",
    "AlterPartitionPartitionResult",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterPartitionTopicData",
    "AlterPartitionTopicResult",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerRegistrationFeature",
    "BrokerRegistrationListener",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "UnregisterBrokerRequest",
    "UnregisterBrokerResponse",
]

BrokerId = Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]
BrokerEpoch = Annotated[int, Strict(), Field(ge=-1, le=2**63 - 1)]


# ------------------------------------------------------------------ BrokerRegistration


class BrokerRegistrationListener(Message):
    """One listener of the registering broker (Kafka's ``Listener``)."""

    name: str
    host: str
    port: Annotated[int, Strict(), Field(ge=0, le=65535)]
    security_protocol: Int16 = Field(
        description="Kafka's protocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL."
    )


class BrokerRegistrationFeature(Message):
    """A feature and the range of levels the broker supports (Kafka's ``Feature``)."""

    name: str
    min_supported_version: Int16
    max_supported_version: Int16


class BrokerRegistrationRequest(Message):
    """A broker process asks to (re)join the cluster; the answer carries its broker epoch."""

    broker_id: BrokerId
    cluster_id: str
    incarnation_id: str = Field(description="A uuid, new for every start of the broker process.")
    listeners: tuple[BrokerRegistrationListener, ...] = ()
    features: tuple[BrokerRegistrationFeature, ...] = ()
    rack: str | None = None
    previous_broker_epoch: BrokerEpoch = Field(
        default=-1,
        description="The epoch before a clean shutdown, or -1 (informational in chunkraft).",
    )


class BrokerRegistrationResponse(Message):
    """``broker_epoch`` is the offset of the broker's RegisterBrokerRecord, or -1 on an error."""

    error_code: StrictInt = 0
    error_message: str | None = None
    broker_epoch: StrictInt = -1


# ------------------------------------------------------------------ BrokerHeartbeat


class BrokerHeartbeatRequest(Message):
    """A registered broker reports that it is alive, how far it has read, and what it wants."""

    broker_id: BrokerId
    broker_epoch: BrokerEpoch
    current_metadata_offset: Int64 = -1
    want_fence: StrictBool = False
    want_shut_down: StrictBool = False


class BrokerHeartbeatResponse(Message):
    """The broker's state after the heartbeat's records (if any) commit."""

    error_code: StrictInt = 0
    error_message: str | None = None
    is_caught_up: StrictBool = False
    is_fenced: StrictBool = True
    should_shut_down: StrictBool = False


# ------------------------------------------------------------------ UnregisterBroker


class UnregisterBrokerRequest(Message):
    """An operator removes a broker's registration (the broker is gone for good)."""

    broker_id: BrokerId


class UnregisterBrokerResponse(Message):
    """``error_code`` 0 once the UnregisterBrokerRecord commits."""

    error_code: StrictInt = 0
    error_message: str | None = None


# ------------------------------------------------------------------ AlterPartition


class AlterPartitionBrokerState(Message):
    """A member of a proposed ISR and the broker epoch the leader saw (-1: not checked)."""

    broker_id: BrokerId
    broker_epoch: BrokerEpoch = -1


class AlterPartitionPartitionData(Message):
    """A leader's proposed ISR for one partition, made against ``partition_epoch``.

    Exactly one of ``new_isr`` (plain broker ids) and ``new_isr_with_epochs`` (KIP-841) is given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid",
                              json_schema_extra=exactly_one_of("new_isr", "new_isr_with_epochs"))

    partition_index: Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]
    leader_epoch: Int32
    new_isr: tuple[Int32, ...] | None = None
    new_isr_with_epochs: tuple[AlterPartitionBrokerState, ...] | None = None
    leader_recovery_state: Annotated[int, Strict(), Field(ge=-128, le=127)] = 0
    partition_epoch: Int32

    @model_validator(mode="after")
    def _one_isr_form(self) -> Self:
        if (self.new_isr is None) == (self.new_isr_with_epochs is None):
            raise ValueError("give exactly one of new_isr and new_isr_with_epochs")
        return self

    def isr_states(self) -> tuple[AlterPartitionBrokerState, ...]:
        """The proposed ISR as broker states (a plain ``new_isr`` has epochs -1)."""
        if self.new_isr_with_epochs is not None:
            return self.new_isr_with_epochs
        assert self.new_isr is not None
        return tuple(AlterPartitionBrokerState.model_construct(broker_id=b, broker_epoch=-1)
                     for b in self.new_isr)


class AlterPartitionTopicData(Message):
    """The partitions of one topic, named by ``topic_id`` (preferred) or ``topic_name``."""

    model_config = ConfigDict(frozen=True, extra="forbid",
                              json_schema_extra=exactly_one_of("topic_id", "topic_name"))

    topic_id: str | None = None
    topic_name: str | None = None
    partitions: tuple[AlterPartitionPartitionData, ...] = ()

    @model_validator(mode="after")
    def _one_name(self) -> Self:
        if (self.topic_id is None) == (self.topic_name is None):
            raise ValueError("give exactly one of topic_id and topic_name")
        return self


class AlterPartitionRequest(Message):
    """A partition leader asks the controller to change ISRs (KIP-497)."""

    broker_id: BrokerId
    broker_epoch: BrokerEpoch
    topics: tuple[AlterPartitionTopicData, ...] = ()


class AlterPartitionPartitionResult(Message):
    """One partition's outcome; on success the partition's state after the change."""

    partition_index: StrictInt
    error_code: StrictInt = 0
    error_message: str | None = None
    leader_id: StrictInt = -1
    leader_epoch: StrictInt = -1
    isr: tuple[StrictInt, ...] = ()
    leader_recovery_state: StrictInt = 0
    partition_epoch: StrictInt = -1


class AlterPartitionTopicResult(Message):
    """The results for one topic of the request, named as the request named it."""

    topic_id: str | None = None
    topic_name: str | None = None
    partitions: tuple[AlterPartitionPartitionResult, ...] = ()


class AlterPartitionResponse(Message):
    """A top-level error (a stale broker epoch) or one result per requested partition."""

    error_code: StrictInt = 0
    error_message: str | None = None
    topics: tuple[AlterPartitionTopicResult, ...] = ()
