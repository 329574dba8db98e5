"""MetadataDelta: replays records on top of an image and applies them into a new one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from chunkraft.controller.image.acls import AclsDelta
from chunkraft.controller.image.brokers import BrokersDelta
from chunkraft.controller.image.configs import ConfigsDelta
from chunkraft.controller.image.controllers import replay_controller_registration
from chunkraft.controller.image.image import MetadataImage
from chunkraft.controller.image.producer_ids import replay_producer_ids
from chunkraft.controller.image.provenance import MetadataProvenance
from chunkraft.controller.image.topics_delta import TopicsDelta
from chunkraft.errors import InvariantError
from chunkraft.records import (
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ChunkChangeRecord,
    ChunkRecord,
    ConfigRecord,
    ControllerRegistrationRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)

__all__ = ["MetadataDelta"]


class MetadataDelta:
    """Records replayed on top of ``image``; :meth:`apply` returns the new image.

    Replay is deterministic and the only way state changes. A record that cannot apply to the
    current state (a change for a chunk that does not exist, a partition of an unknown topic)
    raises :class:`InvariantError`, and the delta must then be discarded. Not thread-safe: one
    replayer; the images it reads and builds are immutable.
    """

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._brokers: BrokersDelta | None = None
        self._topics: TopicsDelta | None = None
        self._acls: AclsDelta | None = None
        self._producer_ids = image.producer_ids
        self._controllers = image.controllers
        self._configs: ConfigsDelta | None = None
        self.replayed = 0

    @property
    def topics_delta(self) -> TopicsDelta:
        if self._topics is None:
            self._topics = TopicsDelta(self.image.topics)
        return self._topics

    @property
    def brokers_delta(self) -> BrokersDelta:
        if self._brokers is None:
            self._brokers = BrokersDelta(self.image.brokers)
        return self._brokers

    @property
    def configs_delta(self) -> ConfigsDelta:
        if self._configs is None:
            self._configs = ConfigsDelta(self.image.configs)
        return self._configs

    @property
    def acls_delta(self) -> AclsDelta:
        if self._acls is None:
            self._acls = AclsDelta(self.image.acls)
        return self._acls

    def replay(self, record: Any) -> None:
        """Applies one record to the delta (one switch on the record type)."""
        handler = _HANDLERS.get(type(record))
        if handler is None:
            raise InvariantError(f"no replay for {type(record).__name__}")
        handler(self, record)
        self.replayed += 1

    def replay_all(self, records: Iterable[Any]) -> None:
        handlers = _HANDLERS
        count = 0
        try:
            for record in records:
                handler = handlers.get(type(record))
                if handler is None:
                    raise InvariantError(f"no replay for {type(record).__name__}")
                handler(self, record)
                count += 1
        finally:
            self.replayed += count

    def apply(self, provenance: MetadataProvenance | None = None) -> MetadataImage:
        """The new image; without a provenance, the offset advances by one per record."""
        if provenance is None:
            base = self.image.provenance
            provenance = MetadataProvenance(base.offset + self.replayed, base.epoch)
        image = self.image
        return MetadataImage(
            provenance,
            self._brokers.apply() if self._brokers is not None else image.brokers,
            self._topics.apply() if self._topics is not None else image.topics,
            self._producer_ids,
            self._acls.apply() if self._acls is not None else image.acls,
            self._controllers,
            self._configs.apply() if self._configs is not None else image.configs,
        )

    # ------------------------------------------------------------ replay, by record type

    def _topic(self, record: TopicRecord) -> None:
        self.topics_delta.replay_topic(record)

    def _remove_topic(self, record: RemoveTopicRecord) -> None:
        name = self.topics_delta.name_of(record.topic_id)
        self.topics_delta.replay_remove_topic(record)
        if name is not None:
            self.configs_delta.remove_topic(name)

    def _partition(self, record: PartitionRecord) -> None:
        self.topics_delta.replay_partition(record)

    def _partition_change(self, record: PartitionChangeRecord) -> None:
        self.topics_delta.replay_partition_change(record)

    def _chunk(self, record: ChunkRecord) -> None:
        self.topics_delta.replay_chunk(record)

    def _chunk_change(self, record: ChunkChangeRecord) -> None:
        self.topics_delta.replay_chunk_change(record)

    def _register_broker(self, record: RegisterBrokerRecord) -> None:
        self.brokers_delta.replay_register(record)

    def _unregister_broker(self, record: UnregisterBrokerRecord) -> None:
        self.brokers_delta.replay_unregister(record)

    def _broker_change(self, record: BrokerRegistrationChangeRecord) -> None:
        self.brokers_delta.replay_change(record)

    def _acl(self, record: AccessControlEntryRecord) -> None:
        self.acls_delta.replay_add(record)

    def _remove_acl(self, record: RemoveAccessControlEntryRecord) -> None:
        self.acls_delta.replay_remove(record)

    def _producer_ids_block(self, record: ProducerIdsRecord) -> None:
        self._producer_ids = replay_producer_ids(self._producer_ids, record)

    def _controller_registration(self, record: ControllerRegistrationRecord) -> None:
        self._controllers = replay_controller_registration(self._controllers, record)

    def _config(self, record: ConfigRecord) -> None:
        self.configs_delta.replay(record)

    def _no_op(self, record: NoOpRecord) -> None:
        pass


_HANDLERS: dict[type, Callable[[MetadataDelta, Any], None]] = {
    TopicRecord: MetadataDelta._topic,
    RemoveTopicRecord: MetadataDelta._remove_topic,
    PartitionRecord: MetadataDelta._partition,
    PartitionChangeRecord: MetadataDelta._partition_change,
    ChunkRecord: MetadataDelta._chunk,
    ChunkChangeRecord: MetadataDelta._chunk_change,
    RegisterBrokerRecord: MetadataDelta._register_broker,
    UnregisterBrokerRecord: MetadataDelta._unregister_broker,
    BrokerRegistrationChangeRecord: MetadataDelta._broker_change,
    AccessControlEntryRecord: MetadataDelta._acl,
    RemoveAccessControlEntryRecord: MetadataDelta._remove_acl,
    ProducerIdsRecord: MetadataDelta._producer_ids_block,
    ControllerRegistrationRecord: MetadataDelta._controller_registration,
    ConfigRecord: MetadataDelta._config,
    NoOpRecord: MetadataDelta._no_op,
}
