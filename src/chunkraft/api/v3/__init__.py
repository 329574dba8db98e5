"""The admin REST API, Confluent REST v3 style: ``/v3/clusters/{cluster_id}/...``.

``router`` (prefix ``/v3``) holds every resource: clusters, brokers, topics, partitions,
replicas and chunks, configurations (topics', brokers' and the cluster default), the batch
operations (``topics:create-partitions``, ``chunks:create``,
``chunks:alter-assignments``) and ACLs. docs/api.md describes them with examples.
"""

from __future__ import annotations

from fastapi import APIRouter

from chunkraft.api.v3 import acls, batch, brokers, clusters, configs, partitions, topics

__all__ = ["router"]

router = APIRouter(prefix="/v3")
# The batch routes go first: ``topics:create-partitions`` must not be taken for a topic name.
for _module in (clusters, brokers, batch, topics, partitions, configs, acls):
    router.include_router(_module.router)
