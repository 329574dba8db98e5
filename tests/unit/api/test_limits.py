"""Bounded work per request (chunkraft.api.limits), in-process: headers (431, the
Idempotency-Key's format), the body's media type (415) and size (413, chunked too), strict
scalars on the RPC routes, and the count limits of the RPC routes, configurable."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chunkraft.api.limits import (
    RequestCounts,
    RequestLimits,
    count_problem,
    limits_of,
)
from chunkraft.api.request_counts import counts_of
from chunkraft.error_codes import Errors
from chunkraft.protocol.topics import CreatePartitionsRequest
from tests.unit.api.support import V1, Node, running_node, start_brokers


def run(scenario: Any, **context: Any) -> None:
    async def main() -> None:
        async with running_node(**context) as node:
            await start_brokers(node)
            await scenario(node)

    asyncio.run(main())


def _error(answer: Any, status: int, name: str) -> str:
    assert answer.status_code == status, answer.text[:300]
    payload = answer.json()
    assert set(payload) == {"error_code", "error_name", "message"}
    assert payload["error_name"] == name, payload
    message: str = payload["message"]
    return message


# ------------------------------------------------------------------ headers


def test_an_oversized_header_is_431_and_a_bad_idempotency_key_400() -> None:
    async def scenario(node: Node) -> None:
        body = {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}]}
        huge = await node.post("create-topics", body, headers={"Idempotency-Key": "k" * 2**20})
        assert "request.max.header.bytes" in _error(huge, 431, "INVALID_REQUEST")
        padded = await node.http.get("/healthz", headers={"X-Pad": "p" * 40_000})
        _error(padded, 431, "INVALID_REQUEST")
        for key in (b"k" * 129, b"has space", "é".encode(), b"tab\there"):
            answer = await node.post("create-topics", body, headers={"Idempotency-Key": key})
            assert "Idempotency-Key" in _error(answer, 400, "INVALID_REQUEST")
        assert node.context.controller.image.topics.get_by_name("t") is None
        good = await node.post("create-topics", body,
                               headers={"Idempotency-Key": "0b7d0f0e-6d9c-4a4e-9c57-8c7b4ad2e1f0"})
        assert good.status_code == 200 and good.json()["topics"][0]["error_code"] == 0

    run(scenario)


def test_the_header_limit_is_configurable() -> None:
    async def scenario(node: Node) -> None:
        answer = await node.http.get("/healthz", headers={"X-Pad": "p" * 2000})
        _error(answer, 431, "INVALID_REQUEST")
        assert (await node.http.get("/healthz")).status_code == 200

    run(scenario, limits=RequestLimits(max_header_bytes=1024))


# ------------------------------------------------------------------ the body


def test_a_body_must_be_application_json() -> None:
    async def scenario(node: Node) -> None:
        body = b'{"broker_id": 3}'
        for content_type in ("text/plain", "application/x-www-form-urlencoded",
                             "application/jsonx"):
            answer = await node.http.post(f"{V1}/unregister-broker", content=body,
                                          headers={"content-type": content_type})
            assert "application/json" in _error(answer, 415, "INVALID_REQUEST")
        bare = await node.http.post(f"{V1}/unregister-broker", content=body,
                                    headers={"content-type": ""})
        _error(bare, 415, "INVALID_REQUEST")
        assert 3 in {b.broker_id for b in node.context.controller.image.brokers}
        charset = await node.http.post(f"{V1}/unregister-broker", content=body, headers={
            "content-type": "Application/JSON; charset=utf-8"})
        assert charset.status_code == 200 and charset.json()["error_code"] == 0

    run(scenario)


def test_a_body_over_the_limit_is_413_before_it_is_read_chunked_or_not() -> None:
    async def scenario(node: Node) -> None:
        limit = node.context.limits.max_body_bytes
        big = b'{"topics": [], "pad": "' + b"x" * limit + b'"}'
        answer = await node.http.post(f"{V1}/create-topics", content=big,
                                      headers={"content-type": "application/json"})
        assert "request.max.body.bytes" in _error(answer, 413, "MESSAGE_TOO_LARGE")
        sent: list[int] = []

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(64):  # 64 x 64 KiB: four times the limit, without a Content-Length
                sent.append(1)
                yield b" " * 65536

        answer = await node.http.post(f"{V1}/create-topics", content=chunks(),
                                      headers={"content-type": "application/json"})
        assert "content-length" not in answer.request.headers
        assert len(sent) < 64  # refused once past the limit, not after reading everything
        _error(answer, 413, "MESSAGE_TOO_LARGE")

    run(scenario)


def test_a_body_of_too_many_json_values_is_413_before_parsing() -> None:
    async def scenario(node: Node) -> None:
        # Well under the byte limit, but 4 values per 8 bytes: seconds of GIL for a parser.
        dense = b'{"topics": [' + b",".join([b"[0,1,2]"] * 30_000) + b"]}"
        assert len(dense) < node.context.limits.max_body_bytes
        answer = await node.http.post(f"{V1}/create-topics", content=dense,
                                      headers={"content-type": "application/json"})
        assert "request.max.json.values" in _error(answer, 413, "MESSAGE_TOO_LARGE")
        names = [{"name": f"topic-{i:04}", "num_partitions": 1, "replication_factor": 1}
                 for i in range(10)]
        answer = await node.post("create-topics", {"topics": names})
        assert answer.status_code == 200  # a body of few values goes through

    run(scenario, limits=RequestLimits(max_json_values=50_000))


def test_the_body_limit_is_configurable() -> None:
    async def scenario(node: Node) -> None:
        names = [{"name": f"topic-{i:04}", "num_partitions": 1, "replication_factor": 1}
                 for i in range(100)]
        answer = await node.post("create-topics", {"topics": names})
        _error(answer, 413, "MESSAGE_TOO_LARGE")

    run(scenario, limits=RequestLimits(max_body_bytes=2048))


# ------------------------------------------------------------------ strict scalars


@pytest.mark.parametrize("value", ['"0"', "1", '"yes"', '"false"'])
def test_validate_only_must_be_a_json_boolean(value: str) -> None:
    async def scenario(node: Node) -> None:
        await node.post("create-topics", {"topics": [
            {"name": "t", "num_partitions": 1, "replication_factor": 1}]})
        before = node.context.controller.image.offset
        body = b'{"topics": [{"name": "t", "count": 2}], "validate_only": ' + value.encode() + b"}"
        answer = await node.http.post(f"{V1}/create-partitions", content=body,
                                      headers={"content-type": "application/json"})
        assert "validate_only" in _error(answer, 400, "INVALID_REQUEST")
        assert node.context.controller.image.offset == before

    run(scenario)


@pytest.mark.parametrize("value", ["true", "false", '"7"', "3.0"])
def test_a_broker_id_must_be_a_json_integer(value: str) -> None:
    async def scenario(node: Node) -> None:
        answer = await node.http.post(f"{V1}/unregister-broker",
                                      content=b'{"broker_id": ' + value.encode() + b"}",
                                      headers={"content-type": "application/json"})
        assert "broker_id" in _error(answer, 400, "INVALID_REQUEST")
        assert {b.broker_id for b in node.context.controller.image.brokers} == {1, 2, 3}

    run(scenario)


# ------------------------------------------------------------------ counts


def test_rpc_requests_over_the_counts_are_refused_whole() -> None:
    async def scenario(node: Node) -> None:
        await node.post("create-topics", {"topics": [
            {"name": "t", "num_partitions": 1, "replication_factor": 1}]})
        before = node.context.controller.image.offset
        many = await node.post("create-topics", {"topics": [
            {"name": f"n{i}", "num_partitions": 1, "replication_factor": 1}
            for i in range(11)]})
        assert "request.max.batch.items" in _error(many, 400, "INVALID_REQUEST")
        assignments = await node.post("create-partitions", {"topics": [
            {"name": "t", "count": 7, "assignments": [{"broker_ids": [1]}] * 6}]})
        assert "request.max.assignments" in _error(assignments, 400, "POLICY_VIOLATION")
        replicas = await node.post("create-partitions", {"topics": [
            {"name": "t", "count": 3, "assignments": [{"broker_ids": [1, 2, 3]}] * 2}]})
        assert "request.max.assignment.replicas" in _error(replicas, 400, "POLICY_VIOLATION")
        metadata = await node.post("metadata", {"topics": [{"name": f"n{i}"} for i in range(11)]})
        _error(metadata, 400, "INVALID_REQUEST")
        assert node.context.controller.image.offset == before
        within = await node.post("create-partitions", {"topics": [
            {"name": "t", "count": 3, "assignments": [{"broker_ids": [1]}, {"broker_ids": [2]}]}]})
        assert within.status_code == 200 and within.json()["results"][0]["error_code"] == 0

    run(scenario, limits=RequestLimits(max_batch_items=10, max_assignments=5,
                                       max_assignment_replicas=5))


def test_counts_of_every_batch_shape() -> None:
    request = CreatePartitionsRequest.model_validate({"topics": [
        {"name": "a", "count": 4, "assignments": [{"broker_ids": [1, 2]}] * 3},
        {"name": "b", "count": 2}]})
    assert counts_of(request) == RequestCounts(items=2, assignments=3, replicas=6)
    assert counts_of(object()) == RequestCounts()
    limits = RequestLimits(max_batch_items=2, max_assignments=3, max_assignment_replicas=6)
    assert count_problem(RequestCounts(2, 3, 6), limits) is None
    assert count_problem(RequestCounts(3, 0, 0), limits) is not None
    problem = count_problem(RequestCounts(1, 4, 0), limits)
    assert problem is not None and problem[0] is Errors.POLICY_VIOLATION
    problem = count_problem(RequestCounts(1, 1, 7), limits)
    assert problem is not None and problem[0] is Errors.POLICY_VIOLATION


def test_the_defaults_are_the_configurations(tmp_path: Any) -> None:
    from chunkraft.controller.config import load_controller_config
    from tests.unit.controller.config_support import base_values

    config = load_controller_config(None, base_values(tmp_path / "data"), {})
    assert limits_of(config) == RequestLimits()
    assert limits_of(dataclasses.replace(config, request_max_body_bytes=4096)
                     ).max_body_bytes == 4096
