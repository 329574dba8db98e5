"""The quorum as every node sees it: ``kafka-metadata-quorum describe --status / --replication``."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from chunkraft.api.access import cluster_refusal
from chunkraft.api.authentication import principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import ErrorBody
from chunkraft.api.readiness import assess_readiness
from chunkraft.protocol.acls import AclOperation

__all__ = ["router"]

router = APIRouter(prefix="/controller/v1", tags=["quorum"])


@router.get("/quorum", summary="Leader, epoch, high watermark and each voter's progress "
            "(DESCRIBE on the cluster)", responses={
                "4XX": {"model": ErrorBody, "description": "No or bad credentials (401), no "
                        "DESCRIBE on the cluster (403)."}})
async def describe_quorum(request: Request) -> Response:
    context: ControllerContext = request.app.state.context
    controller = context.controller
    status = controller.raft.status()
    image = controller.image
    refusal = cluster_refusal(context, principal_of(request), AclOperation.DESCRIBE, image)
    if refusal is not None:
        return refusal
    body = dataclasses.asdict(status)
    readiness = assess_readiness(status, context.standing.refusal())
    body.update(
        ready=readiness.ready,
        not_ready_reason=readiness.reason,
        cluster_id=context.cluster_id_text,
        metadata_offset=image.offset,
        metadata_epoch=image.epoch,
        image_hash=image.content_hash() if request.query_params.get("hash") == "true" else None,
        leader_changes=controller.leader_changes,
        controller_urls={str(node): url
                         for node, url in sorted(context.all_controller_urls().items())},
        brokers=len(image.brokers),
        topics=len(image.topics),
        partitions=image.topics.partition_count(),
        chunks=image.topics.chunk_count(),
    )
    return JSONResponse(body, headers={"X-Metadata-Offset": str(image.offset)})
