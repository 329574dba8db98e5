"""``/v3/clusters`` and ``/v3/clusters/{cluster_id}``: the one cluster this quorum serves.

Any authenticated principal may read them (as Kafka answers Metadata's cluster part to all).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response

from chunkraft.api.parameters import MinOffset, WaitMs
from chunkraft.api.rpc import committed_image
from chunkraft.api.v3.common import ERROR_RESPONSES, Links, context_of, json_answer, read_image
from chunkraft.api.v3.encoding import list_json
from chunkraft.api.v3.models import KafkaCluster, KafkaClusterList

__all__ = ["router"]

router = APIRouter(tags=["v3 clusters"])


def _cluster(request: Request, offset: int | None) -> dict[str, Any]:
    context = context_of(request)
    cluster_id = context.cluster_id_text
    links = Links(request, cluster_id)
    leader = context.controller.leader_id()
    metadata: dict[str, Any] = {"self": links.cluster, "resource_name": links.crn}
    if offset is not None:
        metadata["metadata_offset"] = offset
    return {
        "kind": "KafkaCluster",
        "metadata": metadata,
        "cluster_id": cluster_id,
        "controller_id": -1 if leader is None else leader,
        "brokers": {"related": links.brokers()},
        "topics": {"related": links.topics()},
        "acls": {"related": links.acls()},
    }


@router.get("/clusters", summary="The cluster this quorum serves (a list of one)",
            response_model=None,
            responses={200: {"model": KafkaClusterList}, **ERROR_RESPONSES})
async def list_clusters(request: Request, min_offset: MinOffset = -1, wait_ms: WaitMs = 5000
                        ) -> Response:
    image = await committed_image(request, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    item = json.dumps(_cluster(request, None), separators=(",", ":"))
    return json_answer(list_json("KafkaClusterList", f"{str(request.base_url).rstrip('/')}"
                                 "/v3/clusters", None, image.offset, [item]), image.offset)


@router.get("/clusters/{cluster_id}", summary="The cluster: its id, the controller leader, "
            "links to brokers, topics and ACLs", response_model=None,
            responses={200: {"model": KafkaCluster}, **ERROR_RESPONSES})
async def get_cluster(request: Request, cluster_id: str, min_offset: MinOffset = -1,
                      wait_ms: WaitMs = 5000) -> Response:
    image = await read_image(request, cluster_id, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    return json_answer(_cluster(request, image.offset), image.offset)
