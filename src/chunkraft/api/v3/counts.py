"""The counts of the REST v3 request bodies (:func:`chunkraft.api.request_counts.counts_of`)."""

from __future__ import annotations

from chunkraft.api.limits import RequestCounts
from chunkraft.api.request_counts import counts, register_counter
from chunkraft.api.v3.models import (
    AlterChunkAssignmentsBody,
    CreateChunksBody,
    CreatePartitionsBody,
    CreateTopicBody,
)

__all__: list[str] = []


def _v3_create_topic(r: CreateTopicBody) -> RequestCounts:
    return counts([], (len(a.broker_ids) for a in r.replicas_assignments or ()))


def _v3_create_partitions(r: CreatePartitionsBody) -> RequestCounts:
    return counts([len(r.topics)], (len(a) for t in r.topics for a in t.assignments or ()))


def _v3_create_chunks(r: CreateChunksBody) -> RequestCounts:
    return counts([len(r.partitions)], (len(p.replicas) for p in r.partitions))


def _v3_alter_chunks(r: AlterChunkAssignmentsBody) -> RequestCounts:
    return counts([len(r.chunks)], (len(c.replicas) for c in r.chunks))


register_counter(CreateTopicBody, _v3_create_topic)
register_counter(CreatePartitionsBody, _v3_create_partitions)
register_counter(CreateChunksBody, _v3_create_chunks)
register_counter(AlterChunkAssignmentsBody, _v3_alter_chunks)
