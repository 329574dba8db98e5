"""The metadata stream: committed records after an offset, and the snapshot to start from.

``GET /controller/v1/metadata-log?after=N`` answers the committed batches holding offsets after
``N`` (long poll: ``wait_ms``), bounded by ``max_records`` and ``max_bytes``; records are the
codec's bytes, base64 in JSON. A reader older than the retained tail gets
``snapshot_needed: true`` and the offset of the snapshot to load from
``GET /controller/v1/snapshot``: the committed image as snapshot batches (``records/files``
format), with its end offset and epoch in headers.

Both need CLUSTER_ACTION on the cluster (brokers and other controllers read the stream; the
records name every principal's ACLs), else 403. A node that has learnt it is not a voter answers
503 NOT_CONTROLLER (:mod:`chunkraft.api.voter_standing`): a broker moves to another controller.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from chunkraft.api.access import cluster_refusal
from chunkraft.api.authentication import principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import ErrorBody, error_response
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.records.files import snapshot_batches

__all__ = ["router"]

router = APIRouter(prefix="/controller/v1", tags=["metadata stream"])

MAX_WAIT_MS = 30_000
MAX_RECORDS = 100_000
MAX_BYTES = 64 * 1024 * 1024


_ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorBody, "description": "Invalid parameters (400), no or bad credentials "
            "(401), no CLUSTER_ACTION on the cluster (403)."},
}


@router.get("/metadata-log", summary="Committed metadata records after an offset (long poll; "
            "CLUSTER_ACTION on the cluster)", responses=_ERRORS)
async def read_metadata_log(
    request: Request,
    after: int = Query(-1, ge=-1, description="Return records with offsets above this one."),
    max_records: int = Query(10_000, ge=1, le=MAX_RECORDS),
    max_bytes: int = Query(4 * 1024 * 1024, ge=1, le=MAX_BYTES),
    wait_ms: int = Query(0, ge=0, le=MAX_WAIT_MS),
) -> Response:
    context: ControllerContext = request.app.state.context
    refusal = cluster_refusal(context, principal_of(request), AclOperation.CLUSTER_ACTION)
    if refusal is not None:
        return refusal
    not_a_voter = context.standing.refusal()
    if not_a_voter is not None:  # a broker following this node would never hear more
        return error_response(Errors.NOT_CONTROLLER, not_a_voter, 503)
    controller = context.controller
    read = await controller.read_after(after, max_records=max_records, max_bytes=max_bytes,
                                       wait=wait_ms / 1000)
    image = controller.image
    body = {
        "cluster_id": context.cluster_id_text,
        "node_id": context.node_id,
        "leader_id": controller.leader_id(),
        "high_watermark": read.high_watermark,
        "snapshot_needed": read.snapshot_needed,
        "snapshot": ({"end_offset": image.offset + 1, "epoch": max(image.epoch, 0)}
                     if read.snapshot_needed else None),
        "batches": [
            {
                "base_offset": batch.base_offset,
                "epoch": batch.epoch,
                "append_time_ms": batch.append_time_ms,
                "records": [base64.b64encode(record).decode("ascii") for record in batch.records],
            }
            for batch in read.batches
        ],
    }
    return Response(content=_dumps(body), media_type="application/json",
                    headers={"X-Metadata-Offset": str(read.high_watermark - 1)})


@router.get("/snapshot", summary="The committed image as snapshot batches (CLUSTER_ACTION on "
            "the cluster)", response_class=Response, responses={
                200: {"description": "Snapshot batches (the records/files format).",
                      "content": {"application/octet-stream": {
                          "schema": {"type": "string", "format": "binary"}}}},
                404: {"model": ErrorBody, "description": "Nothing is committed yet "
                      "(SNAPSHOT_NEEDED)."},
                **_ERRORS})
async def read_snapshot(request: Request) -> Response:
    context: ControllerContext = request.app.state.context
    image = context.controller.image
    refusal = cluster_refusal(context, principal_of(request), AclOperation.CLUSTER_ACTION, image)
    if refusal is not None:
        return refusal
    not_a_voter = context.standing.refusal()
    if not_a_voter is not None:
        return error_response(Errors.NOT_CONTROLLER, not_a_voter, 503)
    if image.offset < 0:
        return error_response(Errors.SNAPSHOT_NEEDED, "nothing has been committed yet", 404)
    epoch = max(image.epoch, 0)

    def batches() -> Iterator[bytes]:
        # The image is immutable: streaming it needs no lock however long the client takes.
        yield from snapshot_batches(image.encoded_records(), epoch=epoch,
                                    cluster_id=context.cluster_id, append_time_ms=0,
                                    records_per_batch=2000, batch_bytes=1024 * 1024)

    return StreamingResponse(
        batches(), media_type="application/octet-stream",
        headers={"X-Snapshot-End-Offset": str(image.offset + 1),
                 "X-Snapshot-Epoch": str(epoch),
                 "X-Cluster-Id": context.cluster_id_text,
                 "X-Metadata-Offset": str(image.offset)})


def _dumps(body: object) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()
