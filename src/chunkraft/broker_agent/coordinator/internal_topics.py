"""The internal topics of the coordinators, created on first use, and where a key's
coordinator is.

``__transaction_state`` (transactional ids) and ``__consumer_offsets`` (group ids) are ordinary
topics whose partitions hold the coordinators' state. The coordinator of key ``k`` is the leader
of partition ``positive_hash(k.encode()) % partitions`` (Kafka's
``Utils.abs(key.hashCode) % partitions`` with murmur2). A broker asked to find a coordinator
creates the topic when the image does not have it yet (``/controller/v1/create-topics`` with
the broker's own token, replication factor min(3, unfenced brokers); TOPIC_ALREADY_EXISTS is
fine), and answers COORDINATOR_NOT_AVAILABLE (retriable) until the topic has a leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from chunkraft.broker_agent.peer_client import ControllerChannelLike
from chunkraft.controller.image import MetadataImage
from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import GROUP_KEY, TRANSACTION_KEY
from chunkraft.protocol.topics import CreatableTopic, CreateTopicsRequest, CreateTopicsResponse

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "CREATE_TOPICS_PATH",
    "DEFAULT_PARTITIONS",
    "TRANSACTION_STATE_TOPIC",
    "CoordinatorLocation",
    "InternalTopics",
    "is_internal_topic",
    "partition_for_key",
    "topic_for_key_type",
]

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_PARTITIONS = 3
"""``transaction.state.log.num.partitions`` and ``offsets.topic.num.partitions`` (both 3 here:
Kafka's 50 would only slow down small clusters)."""
MAX_REPLICATION_FACTOR = 3
CREATE_TOPICS_PATH = "/controller/v1/create-topics"


def topic_for_key_type(key_type: int) -> str:
    """The internal topic of FindCoordinator's ``key_type`` (0 group, 1 transactional id)."""
    if key_type == GROUP_KEY:
        return CONSUMER_OFFSETS_TOPIC
    if key_type == TRANSACTION_KEY:
        return TRANSACTION_STATE_TOPIC
    raise ValueError(f"unknown coordinator key type {key_type}")


def is_internal_topic(name: str) -> bool:
    return name in (TRANSACTION_STATE_TOPIC, CONSUMER_OFFSETS_TOPIC)


def partition_for_key(key: str, partitions: int) -> int:
    """The internal partition holding ``key``'s state: ``positive murmur2(utf-8) % partitions``."""
    return positive_hash(key.encode()) % partitions


@dataclass(frozen=True)
class CoordinatorLocation:
    """Where the coordinator of one key is, as the image says now.

    ``error`` is NONE with ``leader`` >= 0, or COORDINATOR_NOT_AVAILABLE (the topic is being
    created, or the partition has no leader yet).
    """

    topic: str
    partition: int
    leader: int
    error: Errors = Errors.NONE

    @property
    def found(self) -> bool:
        return self.error is Errors.NONE


class InternalTopics:
    """Creates the internal topics on demand and locates coordinators; one per broker.

    ``image()`` is the broker's current metadata image; ``controller`` its controller channel
    (calls carry the broker's token, whose principal needs CREATE on the topics: LocalCluster
    grants topics PREFIXED ``__``). ``partitions`` overrides the partition count per internal
    topic (default :data:`DEFAULT_PARTITIONS`). Used on the broker's event loop only; at most
    one creation per topic is in flight.
    """

    def __init__(self, controller: ControllerChannelLike, image: Callable[[], MetadataImage],
                 partitions: dict[str, int] | None = None) -> None:
        self.controller = controller
        self.image = image
        self.partitions = {TRANSACTION_STATE_TOPIC: DEFAULT_PARTITIONS,
                           CONSUMER_OFFSETS_TOPIC: DEFAULT_PARTITIONS, **(partitions or {})}
        self._creating: dict[str, asyncio.Task[None]] = {}

    def partition_count(self, topic: str) -> int | None:
        """The topic's partition count in the image, None while it does not exist."""
        image_topic = self.image().topics.get_by_name(topic)
        return len(image_topic.partitions) if image_topic is not None else None

    def locate(self, topic: str, key: str) -> CoordinatorLocation:
        """Where ``key``'s coordinator is now (no creation; see :meth:`find`)."""
        count = self.partition_count(topic)
        if count is None or count == 0:
            return CoordinatorLocation(topic, -1, -1, Errors.COORDINATOR_NOT_AVAILABLE)
        index = partition_for_key(key, count)
        image_topic = self.image().topics.get_by_name(topic)
        record = image_topic.partition(index) if image_topic is not None else None
        leader = record.leader if record is not None else -1
        if leader < 0:
            return CoordinatorLocation(topic, index, -1, Errors.COORDINATOR_NOT_AVAILABLE)
        return CoordinatorLocation(topic, index, leader)

    async def find(self, topic: str, key: str, *, wait_s: float = 5.0) -> CoordinatorLocation:
        """:meth:`locate`, creating ``topic`` first when the image lacks it and waiting up to
        ``wait_s`` for the image to show it with a leader."""
        location = self.locate(topic, key)
        if location.found:
            return location
        await self.ensure(topic)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while loop.time() < deadline:
            await asyncio.sleep(0.05)
            location = self.locate(topic, key)
            if location.found:
                break
        return location

    async def ensure(self, topic: str) -> None:
        """Creates ``topic`` unless the image has it (one request in flight per topic; errors
        are logged: the caller answers COORDINATOR_NOT_AVAILABLE and the client retries)."""
        if self.partition_count(topic) is not None:
            return
        task = self._creating.get(topic)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._create(topic))
            self._creating[topic] = task
        with contextlib.suppress(Exception):
            await asyncio.shield(task)

    def replication_factor(self) -> int:
        live = len(self.image().brokers.unfenced_ids())
        return max(1, min(MAX_REPLICATION_FACTOR, live))

    async def _create(self, topic: str) -> None:
        request = CreateTopicsRequest(topics=(CreatableTopic(
            name=topic, num_partitions=self.partitions.get(topic, DEFAULT_PARTITIONS),
            replication_factor=self.replication_factor()),))
        try:
            answer = CreateTopicsResponse.model_validate(await self.controller.call(
                CREATE_TOPICS_PATH, request.model_dump(mode="json")))
        except Exception as error:
            log.warning("creating internal topic %s failed: %s", topic, error)
            return
        for result in answer.topics:
            if result.error_code not in (0, Errors.TOPIC_ALREADY_EXISTS.code):
                log.warning("creating internal topic %s refused: %s %s", topic,
                            Errors.for_code(result.error_code).name, result.error_message)
            else:
                log.info("internal topic %s created (or already there)", topic)
