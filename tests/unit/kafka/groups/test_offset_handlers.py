"""OffsetCommit and OffsetFetch handlers: Kafka's fields to the routes' and back, per version
(v1 carries a group error in every partition, v8 asks for several groups)."""

from __future__ import annotations

import asyncio
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import RequestHeader, decode, encode
from chunkraft.kafka.groups.offset_handlers import offset_handlers
from chunkraft.kafka.server.requests import KafkaRequest, KafkaSession
from chunkraft.security.principal import Principal

SESSION = KafkaSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", "10.0.0.7",
                       principal=Principal("User:alice", "10.0.0.7"))


class Gateway:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def write(self, path: str, body: dict[str, Any], session: KafkaSession
                    ) -> dict[str, Any]:
        self.sent.append((path, body))
        answer = self.answers[path]
        if isinstance(answer, Exception):
            raise answer
        return answer(body) if callable(answer) else answer

    async def read(self, path: str, body: dict[str, Any], session: KafkaSession
                   ) -> dict[str, Any]:
        raise AssertionError("the group routes are POST routes")


def call(gateway: Gateway, key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    name = {8: "OffsetCommit", 9: "OffsetFetch"}[key]
    handler = {h.api_key: h for h in offset_handlers(gateway)}[key]
    request = KafkaRequest(RequestHeader(key, version, 1, "c", 0), decode(
        f"{name}Request", version, encode(f"{name}Request", version, body)), SESSION)

    async def run() -> dict[str, Any]:
        answer = await handler.handle(request)
        assert isinstance(answer, dict)
        return decode(f"{name}Response", version, encode(f"{name}Response", version, answer))

    return asyncio.run(run())


COMMIT = {"group_id": "g", "generation_id_or_member_epoch": 3, "member_id": "m",
          "group_instance_id": None, "retention_time_ms": -1, "topics": [
              {"name": "orders", "partitions": [
                  {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 5,
                   "committed_metadata": None}]}]}


def test_a_commit_moves_kafkas_fields_to_the_route_and_its_errors_back() -> None:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return {"topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "error_code": Errors.ILLEGAL_GENERATION.code}]}]}

    gateway = Gateway({"/broker/v1/offset-commit": answer})
    answered = call(gateway, 8, 8, COMMIT)
    assert answered["topics"][0]["partitions"][0]["error_code"] == (
        Errors.ILLEGAL_GENERATION.code)
    assert gateway.sent[0][1] == {
        "group_id": "g", "generation_id": 3, "member_id": "m", "topics": [
            {"name": "orders", "partitions": [
                {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 5,
                 "committed_metadata": None}]}]}
    refused = Gateway({"/broker/v1/offset-commit": GatewayError(
        503, Errors.COORDINATOR_NOT_AVAILABLE, None)})
    assert call(refused, 8, 2, COMMIT)["topics"][0]["partitions"][0]["error_code"] == (
        Errors.COORDINATOR_NOT_AVAILABLE.code)


FETCHED = {"error_code": 0, "topics": [{"name": "orders", "partitions": [
    {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 5,
     "metadata": None, "error_code": 0}]}]}


def test_fetches_of_each_form_answer_the_committed_offsets() -> None:
    gateway = Gateway({"/broker/v1/offset-fetch": FETCHED})
    single = call(gateway, 9, 7, {"group_id": "g", "topics": None, "require_stable": True})
    partition = single["topics"][0]["partitions"][0]
    assert (partition["committed_offset"], partition["metadata"]) == (42, "")
    assert gateway.sent[0][1] == {"group_id": "g", "require_stable": True, "topics": None}
    batched = call(gateway, 9, 8, {"groups": [
        {"group_id": "a", "topics": [{"name": "orders", "partition_indexes": [0]}]},
        {"group_id": "b", "topics": None}], "require_stable": False})
    assert [g["group_id"] for g in batched["groups"]] == ["a", "b"]
    assert gateway.sent[1][1]["topics"] == [{"name": "orders", "partition_indexes": [0]}]


def test_a_group_error_of_version_1_is_in_every_asked_partition() -> None:
    refused = {"error_code": Errors.NOT_COORDINATOR.code, "topics": []}
    gateway = Gateway({"/broker/v1/offset-fetch": refused})
    answer = call(gateway, 9, 1, {"group_id": "g", "topics": [
        {"name": "orders", "partition_indexes": [0, 1]}]})
    assert [p["error_code"] for p in answer["topics"][0]["partitions"]] == [
        Errors.NOT_COORDINATOR.code] * 2
    later = call(gateway, 9, 2, {"group_id": "g", "topics": None})
    assert later["error_code"] == Errors.NOT_COORDINATOR.code
