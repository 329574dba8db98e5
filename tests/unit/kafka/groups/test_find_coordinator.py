"""FindCoordinator's handler: the route's node id becomes that broker's endpoint on the
client's listener; single-key versions 0-3 and the batched version 4."""

from __future__ import annotations

import asyncio
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import RequestHeader, decode, encode
from chunkraft.kafka.groups.find_coordinator import MAX_KEYS, find_coordinator_handler
from chunkraft.kafka.server.requests import KafkaRequest, KafkaSession
from tests.unit.kafka.test_cluster_answers import ALICE, image


class Gateway:
    """The find-coordinator route's answer: key -> node id (or an error code)."""

    def __init__(self, nodes: dict[str, int], refuse: GatewayError | None = None) -> None:
        self.nodes = nodes
        self.refuse = refuse
        self.asked: list[dict[str, Any]] = []

    async def write(self, path: str, body: dict[str, Any], session: KafkaSession
                    ) -> dict[str, Any]:
        assert path == "/broker/v1/find-coordinator"
        self.asked.append(body)
        if self.refuse is not None:
            raise self.refuse
        return {"coordinators": [
            {"key": key, "node_id": self.nodes[key], "error_code": 0} if key in self.nodes
            else {"key": key, "node_id": -1,
                  "error_code": Errors.GROUP_AUTHORIZATION_FAILED.code,
                  "error_message": "refused"} for key in body["keys"]]}

    async def read(self, path: str, body: dict[str, Any], session: KafkaSession
                   ) -> dict[str, Any]:
        raise AssertionError("a write route")


def call(gateway: Gateway, version: int, body: dict[str, Any],
         listener: str = "SASL_PLAINTEXT") -> dict[str, Any]:
    handler = find_coordinator_handler(gateway, image)
    session = KafkaSession(listener, listener, ALICE.host, principal=ALICE)
    request = KafkaRequest(RequestHeader(10, version, 1, "c", 0), decode(
        "FindCoordinatorRequest", version, encode("FindCoordinatorRequest", version, body)),
        session)

    async def run() -> dict[str, Any]:
        answer = await handler.handle(request)
        assert isinstance(answer, dict)
        return decode("FindCoordinatorResponse", version,
                      encode("FindCoordinatorResponse", version, answer))

    return asyncio.run(run())


def test_a_single_key_is_answered_with_the_endpoint_on_the_clients_listener() -> None:
    gateway = Gateway({"g": 2})
    answer = call(gateway, 3, {"key": "g", "key_type": 0})
    assert (answer["error_code"], answer["node_id"], answer["host"], answer["port"]) == (
        0, 2, "b2.test", 9092)
    assert gateway.asked == [{"key_type": 0, "keys": ["g"]}]
    assert call(Gateway({"g": 2}), 0, {"key": "g"})["port"] == 9092  # v0: groups only


def test_batched_keys_each_get_their_own_answer() -> None:
    answer = call(Gateway({"a": 1, "t": 4}), 4, {"key_type": 1,
                                                 "coordinator_keys": ["a", "t", "x"]})
    by_key = {c["key"]: c for c in answer["coordinators"]}
    assert (by_key["a"]["node_id"], by_key["a"]["port"]) == (1, 9091)
    # Broker 4 has no endpoint on this listener: the client must ask again.
    assert by_key["t"]["error_code"] == Errors.COORDINATOR_NOT_AVAILABLE.code
    assert by_key["x"]["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    assert by_key["x"]["error_message"] == "refused"


def test_refusals_bad_key_types_and_too_many_keys_change_nothing() -> None:
    refused = call(Gateway({}, GatewayError(503, Errors.COORDINATOR_NOT_AVAILABLE, "down")), 2,
                   {"key": "g", "key_type": 0})
    assert refused["error_code"] == Errors.COORDINATOR_NOT_AVAILABLE.code
    gateway = Gateway({"g": 1})
    strange = call(gateway, 4, {"key_type": 2, "coordinator_keys": ["g"]})
    assert strange["coordinators"][0]["error_code"] == Errors.INVALID_REQUEST.code
    many = call(gateway, 4, {"key_type": 0, "coordinator_keys": ["g"] * (MAX_KEYS + 1)})
    assert {c["error_code"] for c in many["coordinators"]} == {Errors.INVALID_REQUEST.code}
    assert gateway.asked == []
