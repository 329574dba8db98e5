"""ApiVersions 0-4: the API keys and versions this listener serves.

The ranges come from the listener's handler table, so what is advertised is exactly what is
served (kafka-python infers the broker's Kafka version from them; librdkafka picks each
request's version from them). chunkraft's private keys (KIP-1114's chunk APIs) are listed only
to a client that asked for them on this connection, with ApiVersions' tagged field
``include_private_apis`` (tag 10000, ``chunkraft_messages/tagged_extensions.json``): a stock
client that meets an unknown key may refuse the whole answer. A request at a version above 4 is
answered at version 0 with UNSUPPORTED_VERSION and the key list, as Kafka answers it, so the
client can retry at a version it finds there.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest

__all__ = ["API_VERSIONS_MAX", "api_versions_handler"]

API_VERSIONS_KEY = 18
API_VERSIONS_MAX = 4
UNSUPPORTED_VERSION = 35


def api_versions_handler(table: dict[int, ApiHandler]) -> ApiHandler:
    """The ApiVersions handler of ``table`` (which it lists, itself included)."""

    def keys(private: bool) -> list[dict[str, int]]:
        return [{"api_key": key, "min_version": handler.min_version,
                 "max_version": handler.max_version}
                for key, handler in sorted(table.items()) if private or not handler.private]

    async def handle(request: KafkaRequest) -> dict[str, Any]:
        if request.body.get("include_private_apis"):  # chunkraft's own tagged field
            request.session.extras["private_apis"] = True
        private = bool(request.session.extras.get("private_apis"))
        if request.version > API_VERSIONS_MAX:
            return {"error_code": UNSUPPORTED_VERSION, "api_keys": keys(private)}
        name = request.body.get("client_software_name")
        if name:
            request.session.client_software = (name, request.body.get(
                "client_software_version") or "")
        return {"error_code": 0, "api_keys": keys(private), "throttle_time_ms": 0}

    # Advertised 0-4; a request above is still answered, with UNSUPPORTED_VERSION at v0 (the
    # connection hands it over undecoded: its body's layout is unknown).
    return ApiHandler(API_VERSIONS_KEY, 0, API_VERSIONS_MAX, handle, before_authentication=True)
