"""translated_route_handler: the route's body out, its answer back, a refusal as every item's
code."""

from __future__ import annotations

import asyncio
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import RequestHeader
from chunkraft.kafka.server.requests import KafkaRequest, KafkaSession
from chunkraft.kafka.translated_route import translated_route_handler
from chunkraft.security.principal import Principal

SESSION = KafkaSession("PLAINTEXT", "PLAINTEXT", "10.0.0.7",
                       principal=Principal("User:alice", "10.0.0.7"))


class Gateway:
    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def write(self, path: str, body: dict[str, Any], session: KafkaSession
                    ) -> dict[str, Any]:
        self.sent.append((path, body))
        if self.refuse:
            raise GatewayError(403, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "no")
        return {"codes": [0, 3]}

    async def read(self, path: str, body: dict[str, Any], session: KafkaSession
                   ) -> dict[str, Any]:
        raise AssertionError("a write route")


def serve(gateway: Gateway, version: int) -> dict[str, Any]:
    handler = translated_route_handler(
        99, (0, 3), gateway, "/r", lambda body: {"ids": body["items"]},
        lambda answer, v: {"version": v, "codes": answer["codes"]},
        lambda body, code, v: {"version": v, "codes": [code] * len(body["items"])})
    assert (handler.api_key, handler.min_version, handler.max_version) == (99, 0, 3)
    request = KafkaRequest(RequestHeader(99, version, 1, "c", 0), {"items": [1, 2]}, SESSION)

    async def run() -> dict[str, Any]:
        answer = await handler.handle(request)
        assert isinstance(answer, dict)
        return answer

    return asyncio.run(run())


def test_the_answer_is_translated_back_and_a_refusal_answers_every_item() -> None:
    gateway = Gateway(refuse=False)
    assert serve(gateway, 2) == {"version": 2, "codes": [0, 3]}
    assert gateway.sent == [("/r", {"ids": [1, 2]})]
    refused = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code
    assert serve(Gateway(refuse=True), 1) == {"version": 1, "codes": [refused, refused]}
