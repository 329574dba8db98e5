"""What a request asks for, counted from the request alone: :func:`counts_of`.

One small function per request shape (RPC messages of :mod:`chunkraft.protocol`; the REST v3
bodies register theirs, :mod:`chunkraft.api.v3.counts`);
:func:`chunkraft.api.limits.count_problem` holds the counts to the limits. Counting
walks the parsed request once and builds nothing, so it stays cheap for any request the body
limit lets through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from chunkraft.api.limits import RequestCounts
from chunkraft.protocol.acls import CreateAclsRequest, DeleteAclsRequest
from chunkraft.protocol.brokers import AlterPartitionRequest, BrokerRegistrationRequest
from chunkraft.protocol.chunks import (
    AlterChunkAssignmentsRequest,
    ChunkReplicaStateRequest,
    CreateChunksRequest,
)
from chunkraft.protocol.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from chunkraft.protocol.topics import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    MetadataRequest,
)

__all__ = ["counts", "counts_of", "register_counter"]


def counts_of(request: object) -> RequestCounts:
    """The counts of an RPC request (:mod:`chunkraft.protocol`) or a REST v3 body; a request
    of no batch shape counts nothing (its body size bounds it)."""
    counter = _COUNTERS.get(type(request))
    return counter(request) if counter is not None else RequestCounts()


def counts(items: Iterable[int], replica_lists: Iterable[int], *,
           assignments: int = -1) -> RequestCounts:
    """Counts from the sizes of a request's batches and of its replica lists (each list one
    assignment unless ``assignments`` says otherwise)."""
    lists = list(replica_lists)
    return RequestCounts(items=max(items, default=0),
                         assignments=len(lists) if assignments < 0 else assignments,
                         replicas=sum(lists))


def _create_topics(r: CreateTopicsRequest) -> RequestCounts:
    return counts([len(r.topics)], (len(a.broker_ids) for t in r.topics for a in t.assignments))


def _create_partitions(r: CreatePartitionsRequest) -> RequestCounts:
    return counts([len(r.topics)],
                  (len(a.broker_ids) for t in r.topics for a in t.assignments or ()))


def _delete_topics(r: DeleteTopicsRequest) -> RequestCounts:
    return counts([len(r.topic_names) + len(r.topics)], ())


def _create_chunks(r: CreateChunksRequest) -> RequestCounts:
    return counts([len(r.topics), sum(len(t.partitions) for t in r.topics)],
                   (len(p.broker_ids) for t in r.topics for p in t.partitions))


def _alter_chunks(r: AlterChunkAssignmentsRequest) -> RequestCounts:
    return counts([len(r.chunks)], (len(c.broker_ids) for c in r.chunks))


def _alter_partition(r: AlterPartitionRequest) -> RequestCounts:
    partitions = [p for t in r.topics for p in t.partitions]
    return counts([len(r.topics), len(partitions)],
                   (len(p.new_isr or p.new_isr_with_epochs or ()) for p in partitions),
                   assignments=0)


def _metadata(r: MetadataRequest) -> RequestCounts:
    return counts([len(r.topics or ())], ())


def _registration(r: BrokerRegistrationRequest) -> RequestCounts:
    return counts([len(r.listeners), len(r.features)], ())


_COUNTERS: dict[type, Callable[[Any], RequestCounts]] = {
    CreateTopicsRequest: _create_topics,
    CreatePartitionsRequest: _create_partitions,
    DeleteTopicsRequest: _delete_topics,
    CreateChunksRequest: _create_chunks,
    AlterChunkAssignmentsRequest: _alter_chunks,
    ChunkReplicaStateRequest: lambda r: counts([len(r.chunks)], ()),
    AlterPartitionRequest: _alter_partition,
    MetadataRequest: _metadata,
    BrokerRegistrationRequest: _registration,
    IncrementalAlterConfigsRequest: lambda r: counts(
        [len(r.resources), *(len(c.configs) for c in r.resources)], ()),
    AlterConfigsRequest: lambda r: counts(
        [len(r.resources), *(len(c.configs) for c in r.resources)], ()),
    DescribeConfigsRequest: lambda r: counts([len(r.resources)], ()),
    CreateAclsRequest: lambda r: counts([len(r.creations)], ()),
    DeleteAclsRequest: lambda r: counts([len(r.filters)], ()),
}


def register_counter(model: type, counter: Callable[[Any], RequestCounts]) -> None:
    """Makes :func:`counts_of` count requests of ``model`` with ``counter`` (the REST v3
    bodies, whose package imports this one)."""
    _COUNTERS[model] = counter
