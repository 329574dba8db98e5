"""KIP-1114's CreateChunks (key 17000) and AlterChunkAssignments (17001) over their routes.

Both are chunkraft's own messages (``chunkraft.kafka.schema.chunkraft_messages``), in the
private API-key block (:class:`~chunkraft.kafka.admin.common.AdminApi`), with the fields of
:mod:`chunkraft.protocol.chunks`, so translating is copying field by field. CreateChunks has a
top-level error (a stale broker epoch refuses the whole cut), which the route already repeats
on every partition.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.errors import answers_request_errors
from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import KafkaRequest
from chunkraft.protocol.chunks import AlterChunkAssignmentsResponse, CreateChunksResponse

__all__ = [
    "alter_chunk_assignments",
    "alter_chunk_assignments_body",
    "create_chunks",
    "create_chunks_body",
]

_PARTITION_FIELDS = ("partition_index", "leader", "leader_epoch", "prev_stop_offset",
                     "prev_end_offset", "start_offset", "start_timestamp")


def create_chunks_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/create-chunks`` body of a CreateChunks request."""
    return {
        "topics": [{
            "name": topic["name"],
            "partitions": [{**{f: p[f] for f in _PARTITION_FIELDS},
                            "broker_ids": list(p["broker_ids"])}
                           for p in topic["partitions"]],
        } for topic in body["topics"]],
        "broker_id": body["broker_id"],
        "broker_epoch": body["broker_epoch"],
        "validate_only": body["validate_only"],
    }


@answers_request_errors(AdminApi.CREATE_CHUNKS)
async def create_chunks(request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    """CreateChunks: per partition outcomes, and the whole request's error if any."""
    answer = CreateChunksResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.CREATE_CHUNKS], create_chunks_body(request.body), request.session))
    return {
        "throttle_time_ms": 0,
        "error_code": answer.error_code,
        "error_message": answer.error_message,
        "topics": [{
            "name": t.name,
            "partitions": [{"partition_index": p.partition_index, "error_code": p.error_code,
                            "error_message": p.error_message} for p in t.partitions],
        } for t in answer.topics],
    }


def alter_chunk_assignments_body(body: dict[str, Any]) -> dict[str, Any]:
    """The ``/alter-chunk-assignments`` body of an AlterChunkAssignments request."""
    return {
        "chunks": [{
            "topic_name": c["topic_name"],
            "partition_id": c["partition_id"],
            "start_offset": c["start_offset"],
            "chunk_epoch": c["chunk_epoch"],
            "broker_ids": list(c["broker_ids"]),
        } for c in body["chunks"]],
        "validate_only": body["validate_only"],
    }


@answers_request_errors(AdminApi.ALTER_CHUNK_ASSIGNMENTS)
async def alter_chunk_assignments(request: KafkaRequest, gateway: AdminGateway
                                  ) -> dict[str, Any]:
    """AlterChunkAssignments: one result per chunk of the request, in request order."""
    answer = AlterChunkAssignmentsResponse.model_validate(await gateway.write(
        ROUTES[AdminApi.ALTER_CHUNK_ASSIGNMENTS], alter_chunk_assignments_body(request.body),
        request.session))
    return {"throttle_time_ms": 0, "results": [{
        "topic_name": r.topic_name,
        "partition_id": r.partition_id,
        "start_offset": r.start_offset,
        "error_code": r.error_code,
        "error_message": r.error_message,
    } for r in answer.results]}
