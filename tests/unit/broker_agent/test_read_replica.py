"""Which broker a stock consumer is sent to for an offset this broker does not hold."""

from __future__ import annotations

import uuid

from chunkraft.broker_agent.chunk_lookup import locate_for_consumer
from chunkraft.broker_agent.read_replica import (
    NO_BROKER,
    ConsumerReads,
    is_live,
    live_holders,
    serving_broker,
)
from chunkraft.controller.image import MetadataImage
from chunkraft.records import BrokerEndpoint, PartitionRecord, RegisterBrokerRecord
from tests.unit.controller.operations.topic_support import apply, chunk, partition

LISTENER = "SASL_PLAINTEXT"


def broker(broker_id: int, *, fenced: bool = False, kafka: bool = True) -> RegisterBrokerRecord:
    endpoints = [BrokerEndpoint("HTTP", "127.0.0.1", 9190 + broker_id, 0)]
    if kafka:
        endpoints.append(BrokerEndpoint(LISTENER, "127.0.0.1", 9090 + broker_id, 2))
    return RegisterBrokerRecord(broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id + 1),
                                broker_epoch=100 + broker_id, end_points=tuple(endpoints),
                                fenced=fenced)


# Broker 1 live, 2 fenced, 3 live without a Kafka listener, 4 live, 9 never registered.
IMAGE = apply(MetadataImage.EMPTY, broker(1), broker(2, fenced=True), broker(3, kafka=False),
              broker(4))
ACTIVE = partition(0, (4, 1), start_offset=30)
CHUNKS = (chunk(0, 9, 9, (2, 1)), chunk(10, 19, 19, (3, 4)), chunk(20, 29, 29, (9, 2)))


def where(offset: int, listener: str | None = LISTENER, active: PartitionRecord = ACTIVE
          ) -> int:
    return serving_broker(locate_for_consumer(offset, active, CHUNKS), active, IMAGE, listener)


def test_live_is_registered_unfenced_and_on_the_listener_when_one_is_named() -> None:
    assert is_live(IMAGE, 1, LISTENER) and is_live(IMAGE, 1)
    assert not is_live(IMAGE, 2) and not is_live(IMAGE, 9) and not is_live(IMAGE, -1)
    assert is_live(IMAGE, 3) and not is_live(IMAGE, 3, LISTENER)


def test_holders_are_the_live_isr_members_in_isr_order() -> None:
    assert live_holders(CHUNKS[0], IMAGE) == (1,)
    assert live_holders(CHUNKS[1], IMAGE) == (3, 4)
    assert live_holders(CHUNKS[1], IMAGE, LISTENER) == (4,)
    assert live_holders(CHUNKS[2], IMAGE) == ()
    only_replica = chunk(0, 9, 9, (4, 1), isr=(1,))  # 4 is still copying: not a holder yet
    assert live_holders(only_replica, IMAGE) == (1,)


def test_an_inactive_chunk_is_served_by_its_first_live_holder() -> None:
    assert where(0) == where(9) == 1  # 2 is fenced
    assert where(10) == where(19) == 4  # 3 has no endpoint the client could reach
    assert where(10, listener=None) == 3  # the brokers' own choice: any live holder
    assert where(20) == NO_BROKER  # one holder never registered, the other fenced


def test_the_active_chunk_is_served_by_its_leader_when_live() -> None:
    assert where(30) == where(10_000) == 4
    fenced_leader = partition(0, (2, 1), start_offset=30)
    assert where(30, active=fenced_leader) == NO_BROKER


def test_an_offset_in_no_chunk_has_no_broker() -> None:
    cut_late = CHUNKS[1:]
    located = locate_for_consumer(5, ACTIVE, cut_late)
    assert not located.found
    assert serving_broker(located, ACTIVE, IMAGE, LISTENER) == NO_BROKER


def test_consumer_reads_redirect_only_from_v11_and_not_the_partitions_set_aside() -> None:
    assert not ConsumerReads(preferred_replica=False).redirects("orders", 0)
    reads = ConsumerReads(preferred_replica=True, listener=LISTENER,
                          not_redirected=frozenset({("orders", 1)}))
    assert reads.redirects("orders", 0) and reads.redirects("other", 1)
    assert not reads.redirects("orders", 1)
