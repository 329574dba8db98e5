"""``GET /broker/v1/local-replicas``: what this broker holds on disk, partition by partition.

The answer is :func:`chunkraft.broker_agent.local_replicas.local_replicas` against the broker's
own image, with the image's offset; it needs DESCRIBE on the cluster, like the status. For the
broker-state export (``chunkraft snapshot export --broker-server``) it also carries the cluster
id, the image's epoch, the broker epoch, the chunks the image assigns to this broker
(``assigned_chunks``), the producer id blocks it hands out from (``producer_id_blocks``) and
the value of each topic key it applies to every topic it has a log of or is assigned a replica
of (``topic_configs``, from the configurations its ReplicaManager follows).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from chunkraft.api.authentication import principal_of
from chunkraft.broker_agent.local_replicas import assigned_chunks, local_replicas
from chunkraft.broker_agent.server.access import cluster_refusal
from chunkraft.broker_agent.topic_configs import local_configs
from chunkraft.protocol.acls import AclOperation
from chunkraft.records.uuids import kafka_uuid_text

__all__ = ["router"]

router = APIRouter(prefix="/broker/v1", tags=["broker state"])


@router.get("/local-replicas", summary="The partitions and chunks this broker holds on disk "
            "(DESCRIBE on the cluster)")
async def local_replicas_view(request: Request) -> Response:
    runtime: Any = request.app.state.runtime
    image = runtime.follower.image
    refusal = cluster_refusal(runtime.authorizer, image, principal_of(request),
                              AclOperation.DESCRIBE)
    if refusal is not None:
        return refusal
    logs = runtime.replica_manager.logs.logs()
    blocks = getattr(runtime.producer_ids, "blocks", None)
    partitions = local_replicas(logs, image)
    assigned = assigned_chunks(image, runtime.node_id)
    topics = {a["topic"] for a in assigned} | {
        (p["chunk_log"] or p)["topic"] for p in partitions}
    return JSONResponse({
        "node_id": runtime.node_id, "metadata_offset": image.offset,
        "partitions": partitions,
        "cluster_id": kafka_uuid_text(runtime.cluster_id),  # as /status and the CLI
        "metadata_epoch": image.epoch,
        "broker_epoch": runtime.lifecycle.broker_epoch,
        "time_ms": int(time.time() * 1000),
        "assigned_chunks": assigned,
        "producer_id_blocks": [
            {"broker_epoch": epoch, "block_start": start, "block_end": end}
            for epoch, start, end in (blocks() if callable(blocks) else ())],
        "topic_configs": local_configs(runtime.replica_manager.configs, topics),
    })
