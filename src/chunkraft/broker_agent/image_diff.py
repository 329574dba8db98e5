"""delta_between: the MetadataDelta that takes one image to another, for a snapshot load.

A broker that loads a snapshot jumps from its image to the snapshot's without the records in
between; its ReplicaManager still needs a delta (``local_changes``) to act on. This builds one
from the two images: topics removed, added or changed (only the partitions and chunks that
differ), brokers, ACLs, producer ids, controller registrations and configurations, so that
``delta.apply(new.provenance)`` equals ``new``.
Cost grows with the differences, plus one comparison per topic (topic images are shared
between images that did not change them, so most comparisons are identity checks).
"""

from __future__ import annotations

from chunkraft.controller.image import MetadataDelta, MetadataImage, TopicDelta, TopicImage
from chunkraft.records import (
    ChunkRecord,
    ConfigRecord,
    RemoveAccessControlEntryRecord,
    UnregisterBrokerRecord,
)

__all__ = ["delta_between"]


def delta_between(old: MetadataImage, new: MetadataImage) -> MetadataDelta:
    """A delta on ``old`` whose :meth:`~MetadataDelta.apply` gives ``new``'s content.

    Pure; neither image is changed. ``compute_local_changes(delta.topics_delta, b)`` is what a
    broker must do to go from ``old`` to ``new``.
    """
    delta = MetadataDelta(old)
    _brokers(delta, old, new)
    _topics(delta, old, new)
    _acls(delta, old, new)
    if new.producer_ids != old.producer_ids:
        for record in new.producer_ids.to_records():
            delta.replay(record)
    # A registration is never removed, only replaced by a newer one of its id.
    for registration in new.controllers:
        if old.controllers.get(registration.controller_id) != registration:
            delta.replay(registration)
    _configs(delta, old, new)
    return delta


def _configs(delta: MetadataDelta, old: MetadataImage, new: MetadataImage) -> None:
    if old.configs is new.configs or old.configs == new.configs:
        return
    for resource in set(old.configs.by_resource) | set(new.configs.by_resource):
        before, after = old.configs.values(*resource), new.configs.values(*resource)
        for name in sorted(set(before) | set(after)):
            if before.get(name) != after.get(name):
                delta.replay(ConfigRecord(resource[0], resource[1], name, after.get(name)))


def _brokers(delta: MetadataDelta, old: MetadataImage, new: MetadataImage) -> None:
    if old.brokers is new.brokers or old.brokers == new.brokers:
        return
    for registration in new.brokers:
        if old.brokers.get(registration.broker_id) != registration:
            delta.replay(registration)
    for registration in old.brokers:
        if new.brokers.get(registration.broker_id) is None:
            delta.replay(UnregisterBrokerRecord(broker_id=registration.broker_id,
                                                broker_epoch=registration.broker_epoch))


def _acls(delta: MetadataDelta, old: MetadataImage, new: MetadataImage) -> None:
    if old.acls is new.acls or old.acls == new.acls:
        return
    for acl_id, acl in new.acls.by_id.items():
        if old.acls.by_id.get(acl_id) != acl:
            delta.replay(acl)
    for acl_id in old.acls.by_id:
        if acl_id not in new.acls.by_id:
            delta.replay(RemoveAccessControlEntryRecord(id=acl_id))


def _topics(delta: MetadataDelta, old: MetadataImage, new: MetadataImage) -> None:
    if old.topics is new.topics:
        return
    topics = delta.topics_delta
    for topic_id, topic in old.topics.by_id.items():
        if new.topics.get(topic_id) is None:
            topics.deleted[topic_id] = topic
    for topic_id, topic in new.topics.by_id.items():
        before = old.topics.get(topic_id)
        if before is topic:
            continue
        if before is None:
            created = TopicDelta(None, topic.name, topic_id)
            created.partition_changes.update(topic.partitions.items())
            for partition_id, chunks in topic.chunks.items():
                created.chunk_changes[partition_id] = {c.start_offset: c for c in chunks}
            topics.changed[topic_id] = created
        elif before != topic:
            topics.changed[topic_id] = _changed_topic(before, topic)


def _changed_topic(before: TopicImage, after: TopicImage) -> TopicDelta:
    changed = TopicDelta(before, after.name, after.topic_id)
    for partition_id, partition in after.partitions.items():
        if before.partitions.get(partition_id) != partition:
            changed.partition_changes[partition_id] = partition
    for partition_id in set(before.chunks) | set(after.chunks):
        old_chunks, new_chunks = before.chunks_of(partition_id), after.chunks_of(partition_id)
        if old_chunks == new_chunks:
            continue
        changes: dict[int, ChunkRecord | None] = {c.start_offset: None for c in old_chunks}
        changes.update((c.start_offset, c) for c in new_chunks)
        changed.chunk_changes[partition_id] = changes
    return changed
