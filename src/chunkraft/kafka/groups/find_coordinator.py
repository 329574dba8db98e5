"""FindCoordinator 0-4 on a broker: the broker's own find-coordinator route, answered with the
coordinator's Kafka endpoint.

The route (``/broker/v1/find-coordinator``) does the work and the authorization (DESCRIBE on
the group or transactional id; the internal topic is created on first use) and names the
coordinator's node id. A Kafka client must then connect to that broker's endpoint on the
listener it is using itself (Metadata answers the same way), so the host and port come from
the image's registration for the session's listener. A coordinator with no endpoint on that
listener, or fenced, is COORDINATOR_NOT_AVAILABLE: the client asks again. Versions 0-3 ask for
one key, version 4 for many (KIP-699); version 0 knows only groups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.cluster_answers import broker_nodes
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest

__all__ = ["FIND_COORDINATOR_KEY", "MAX_KEYS", "find_coordinator_handler"]

FIND_COORDINATOR_KEY = 10
ROUTE = "/broker/v1/find-coordinator"
MAX_KEYS = 1000
"""The most keys one batched FindCoordinator may ask for."""


def _coordinator(key: str, answer: dict[str, Any], nodes: dict[int, dict[str, Any]]
                 ) -> dict[str, Any]:
    """One Kafka coordinator entry from the route's answer for ``key``."""
    error = answer.get("error_code", 0)
    node = nodes.get(answer.get("node_id", -1))
    if error == 0 and node is None:
        unavailable = Errors.COORDINATOR_NOT_AVAILABLE
        return {"key": key, "node_id": -1, "host": "", "port": -1,
                "error_code": unavailable.code,
                "error_message": "the coordinator has no endpoint on this listener"}
    if error != 0:
        return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": error,
                "error_message": answer.get("error_message")}
    assert node is not None
    return {"key": key, "node_id": node["node_id"], "host": node["host"],
            "port": node["port"], "error_code": 0, "error_message": None}


def find_coordinator_handler(gateway: AdminGateway,
                             image: Callable[[], MetadataImage]) -> ApiHandler:
    """FindCoordinator 0-4 over ``gateway`` (the broker app's routes); ``image()`` is the
    broker's current metadata image."""

    async def handle(request: KafkaRequest) -> dict[str, Any]:
        body = request.body
        batched = request.version >= 4
        keys: list[str] = list(body.get("coordinator_keys") or []) if batched else [
            body.get("key", "")]
        key_type = body.get("key_type", 0)
        if len(keys) > MAX_KEYS:
            entries = [_error_entry(key, Errors.INVALID_REQUEST,
                                    f"at most {MAX_KEYS} keys in one request")
                       for key in keys]
        else:
            entries = await _find(gateway, request, key_type, keys, image())
        if batched:
            return {"throttle_time_ms": 0, "coordinators": entries}
        only = entries[0]
        return {"throttle_time_ms": 0, "error_code": only["error_code"],
                "error_message": only["error_message"], "node_id": only["node_id"],
                "host": only["host"], "port": only["port"]}

    return ApiHandler(FIND_COORDINATOR_KEY, 0, 4, handle)


def _error_entry(key: str, error: Errors, message: str | None) -> dict[str, Any]:
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": error.code,
            "error_message": message}


async def _find(gateway: AdminGateway, request: KafkaRequest, key_type: int,
                keys: list[str], image: MetadataImage) -> list[dict[str, Any]]:
    if key_type not in (0, 1):
        return [_error_entry(key, Errors.INVALID_REQUEST,
                             f"unknown coordinator key type {key_type}") for key in keys]
    try:
        answer = await gateway.write(ROUTE, {"key_type": key_type, "keys": keys},
                                     request.session)
    except GatewayError as error:
        return [_error_entry(key, error.error, error.message) for key in keys]
    nodes = {node["node_id"]: node for node in broker_nodes(image, request.session.listener)}
    found = answer.get("coordinators", [])
    return [_coordinator(key, entry, nodes) for key, entry in zip(keys, found, strict=True)]
