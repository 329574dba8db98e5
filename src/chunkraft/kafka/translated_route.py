"""A Kafka API served by one route of an app, its body translated both ways.

Many broker APIs are a broker route with Kafka's field names moved (the coordinators' routes,
say): the request body becomes the route's JSON, the route's answer becomes the response, and
a whole-request refusal of the route (GatewayError) becomes an answer in which every item
carries the refusal's code, as Kafka answers a request it refuses as a whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest

__all__ = ["translated_route_handler"]

Body = dict[str, Any]


def translated_route_handler(api_key: int, versions: tuple[int, int], gateway: AdminGateway,
                             route: str, to_route: Callable[[Body], Body],
                             to_kafka: Callable[[Body, int], Body],
                             refused: Callable[[Body, int, int], Body]) -> ApiHandler:
    """Serves ``api_key`` at ``versions`` (lowest, highest) by ``route``: ``to_route(body)``
    is the route's body, ``to_kafka(answer, version)`` the response, and ``refused(body,
    code, version)`` the response when the route refused the whole request with ``code``."""

    async def handle(request: KafkaRequest) -> Body:
        try:
            answer = await gateway.write(route, to_route(request.body), request.session)
        except GatewayError as error:
            return refused(request.body, error.error.code, request.version)
        return to_kafka(answer, request.version)

    return ApiHandler(api_key, versions[0], versions[1], handle)
