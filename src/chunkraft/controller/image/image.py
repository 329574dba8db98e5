"""MetadataImage: the whole committed metadata state at one log offset."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, ClassVar

from chunkraft.controller.image.acls import AclsImage
from chunkraft.controller.image.brokers import BrokersImage
from chunkraft.controller.image.configs import ConfigsImage
from chunkraft.controller.image.controllers import ControllersImage
from chunkraft.controller.image.producer_ids import ProducerIdsImage
from chunkraft.controller.image.provenance import MetadataProvenance
from chunkraft.controller.image.topics import TopicsImage
from chunkraft.records import encode_record

__all__ = ["MetadataImage"]


class MetadataImage:
    """Brokers, topics (partitions and chunks), producer ids, ACLs, controller registrations
    and configurations at ``provenance``.

    Immutable and thread-safe: replay builds a new image through a MetadataDelta and the holder
    swaps one reference, so readers never lock. ``to_records()`` writes the image back out as
    records (a snapshot); replaying them onto ``EMPTY`` gives an equal image.
    """

    EMPTY: ClassVar[MetadataImage]

    __slots__ = ("_hash", "acls", "brokers", "configs", "controllers", "producer_ids",
                 "provenance", "topics")

    def __init__(
        self,
        provenance: MetadataProvenance,
        brokers: BrokersImage,
        topics: TopicsImage,
        producer_ids: ProducerIdsImage,
        acls: AclsImage,
        controllers: ControllersImage = ControllersImage.EMPTY,
        configs: ConfigsImage = ConfigsImage.EMPTY,
    ) -> None:
        self.provenance = provenance
        self.brokers = brokers
        self.topics = topics
        self.producer_ids = producer_ids
        self.acls = acls
        self.controllers = controllers
        self.configs = configs
        self._hash: str | None = None

    @property
    def offset(self) -> int:
        """The last log offset this image contains (-1: none)."""
        return self.provenance.offset

    @property
    def epoch(self) -> int:
        """The Raft epoch of that offset."""
        return self.provenance.epoch

    def is_empty(self) -> bool:
        return (
            not len(self.brokers)
            and not len(self.topics)
            and not len(self.acls)
            and not len(self.controllers)
            and not len(self.configs)
            and self.producer_ids == ProducerIdsImage()
        )

    def to_records(self) -> Iterator[Any]:
        """Brokers, topics (each with its partitions and chunks), ACLs, producer ids,
        controller registrations, configurations (after their topics: a snapshot replays a
        topic's configurations once the topic exists)."""
        yield from self.brokers.to_records()
        yield from self.topics.to_records()
        yield from self.acls.to_records()
        yield from self.producer_ids.to_records()
        yield from self.controllers.to_records()
        yield from self.configs.to_records()

    def encoded_records(self) -> Iterator[bytes]:
        """:meth:`to_records`, encoded (what a snapshot holds); caches topic digests too."""
        yield from map(encode_record, self.brokers.to_records())
        for topic in self.topics:
            yield from topic.encoded_records()
        yield from map(encode_record, self.acls.to_records())
        yield from map(encode_record, self.producer_ids.to_records())
        yield from map(encode_record, self.controllers.to_records())
        yield from map(encode_record, self.configs.to_records())

    def content_hash(self) -> str:
        """Hex SHA-256 of the content (not the provenance): equal on every node at one offset.

        Topic digests are cached on the immutable topic images, so after the first call (or a
        snapshot write) only topics changed since cost anything.
        """
        if self._hash is None:
            h = hashlib.sha256()
            sections = [self.brokers.to_records(), self.acls.to_records(),
                        self.producer_ids.to_records()]
            # Sections added later count only when present: the hashes of older images hold.
            if len(self.controllers):
                sections.append(self.controllers.to_records())
            if len(self.configs):
                sections.append(self.configs.to_records())
            for section in sections:
                h.update(b"".join(map(encode_record, section)))
                h.update(b"|")  # an empty record encoding is impossible: separates sections
            for topic in self.topics:
                h.update(topic.digest())
            self._hash = h.hexdigest()
        return self._hash

    def with_provenance(self, provenance: MetadataProvenance) -> MetadataImage:
        image = MetadataImage(provenance, self.brokers, self.topics, self.producer_ids, self.acls,
                              self.controllers, self.configs)
        image._hash = self._hash
        return image

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetadataImage):
            return NotImplemented
        return (
            self.provenance == other.provenance
            and self.producer_ids == other.producer_ids
            and self.brokers == other.brokers
            and self.acls == other.acls
            and self.topics == other.topics
            and self.controllers == other.controllers
            and self.configs == other.configs
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"MetadataImage(offset={self.offset}, epoch={self.epoch}, brokers={len(self.brokers)}, "
            f"topics={len(self.topics)}, acls={len(self.acls)}, "
            f"next_producer_id={self.producer_ids.next_producer_id})"
        )


MetadataImage.EMPTY = MetadataImage(
    MetadataProvenance(),
    BrokersImage.EMPTY,
    TopicsImage.EMPTY,
    ProducerIdsImage(),
    AclsImage.EMPTY,
)
