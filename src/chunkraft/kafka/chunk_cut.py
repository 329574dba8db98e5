"""CreateChunks in the operator's form: the partition's leader broker reads the offsets.

KIP-1114's CreateChunks carries the offsets of the cut, which only the partition's leader can
read (it pauses appends, waits for HW = LEO, reads LSO and HW). A Kafka client that names a
partition and its new replicas with ``start_offset`` -1 asks for that: the node it reached (a
controller or a broker) asks each partition's leader broker to cut, exactly as the REST API's
cut does (:func:`chunkraft.api.leader_cuts.ask_leaders`), with the client's own bearer token,
so the broker authorizes the cut as the client (ALTER on the topic). Requests with offsets go
to the controllers' CreateChunks as they are. A request mixing both forms, or asking
``validate_only`` in the operator's form (nothing is read, so nothing could be checked), is
refused with INVALID_REQUEST.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from chunkraft.api.leader_cuts import CutRequest, ask_leaders
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.common import AdminApi
from chunkraft.kafka.admin.errors import whole_request_error
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest

__all__ = ["operator_cut_handler", "with_operator_cuts"]


def _is_operator_form(partition: dict[str, Any]) -> bool:
    return int(partition.get("start_offset", -1)) < 0


def operator_cut_handler(by_offsets: ApiHandler, image: Callable[[], MetadataImage],
                         verify: ssl.SSLContext | bool = True) -> ApiHandler:
    """CreateChunks that serves the operator's form itself and passes the rest to
    ``by_offsets`` (the controllers' CreateChunks)."""

    async def handle(request: KafkaRequest) -> dict[str, Any] | bytes | None:
        body = request.body
        partitions = [p for topic in body.get("topics") or () for p in topic["partitions"]]
        forms = {_is_operator_form(p) for p in partitions}
        if forms != {True}:
            if True in forms:
                return whole_request_error(
                    AdminApi.CREATE_CHUNKS, request.version, body, Errors.INVALID_REQUEST,
                    "either every partition gives the cut's offsets or none does "
                    "(start_offset -1: the leader broker reads them)")
            return await by_offsets.handle(request)
        if body.get("validate_only"):
            return whole_request_error(
                AdminApi.CREATE_CHUNKS, request.version, body, Errors.INVALID_REQUEST,
                "validate_only needs the cut's offsets: the operator's form (start_offset -1) "
                "asks the leader broker to cut at once")
        cuts = [CutRequest(topic["name"], p["partition_index"], tuple(p["broker_ids"]),
                           p.get("leader", -1))
                for topic in body["topics"] for p in topic["partitions"]]
        token = request.session.token
        outcomes = iter(await ask_leaders(
            image(), cuts, authorization=f"Bearer {token}" if token else None, verify=verify))
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                "topics": [{"name": topic["name"], "partitions": [
                    dict(zip(("error_code", "error_message"), next(outcomes), strict=True),
                         partition_index=p["partition_index"])
                    for p in topic["partitions"]]} for topic in body["topics"]]}

    return ApiHandler(by_offsets.api_key, by_offsets.min_version, by_offsets.max_version,
                      handle, private=by_offsets.private)


def with_operator_cuts(handlers: list[ApiHandler], image: Callable[[], MetadataImage],
                       verify: ssl.SSLContext | bool = True) -> list[ApiHandler]:
    """``handlers`` with CreateChunks serving the operator's form too."""
    return [operator_cut_handler(handler, image, verify)
            if handler.api_key == AdminApi.CREATE_CHUNKS else handler for handler in handlers]
