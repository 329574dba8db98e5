"""A fake AdminGateway and the Kafka round trips the admin handler tests share.

:class:`FakeGateway` records every (path, body) it is sent, checks each body against the
route's pydantic request model as JSON (what the real route does with it), and answers with
a canned route answer built from the protocol's response models, or raises a GatewayError.

A request goes in as a client sends it: encoded by kafka-python's classes (the second codec)
or ours, decoded by ours. A response goes out as a client reads it: encoded by ours at the
request's version, decoded by kafka-python's class.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.errors import AdminHandler
from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.codec.messages import RequestHeader, decode, encode
from chunkraft.kafka.server.requests import KafkaRequest, KafkaSession
from chunkraft.protocol import acls, chunks, configs, topics
from chunkraft.security.principal import Principal

REQUEST_MODELS: dict[str, type[BaseModel]] = {
    ROUTES[AdminApi.CREATE_TOPICS]: topics.CreateTopicsRequest,
    ROUTES[AdminApi.DELETE_TOPICS]: topics.DeleteTopicsRequest,
    ROUTES[AdminApi.CREATE_PARTITIONS]: topics.CreatePartitionsRequest,
    ROUTES[AdminApi.DESCRIBE_CONFIGS]: configs.DescribeConfigsRequest,
    ROUTES[AdminApi.ALTER_CONFIGS]: configs.AlterConfigsRequest,
    ROUTES[AdminApi.INCREMENTAL_ALTER_CONFIGS]: configs.IncrementalAlterConfigsRequest,
    ROUTES[AdminApi.DESCRIBE_ACLS]: acls.DescribeAclsRequest,
    ROUTES[AdminApi.CREATE_ACLS]: acls.CreateAclsRequest,
    ROUTES[AdminApi.DELETE_ACLS]: acls.DeleteAclsRequest,
    ROUTES[AdminApi.CREATE_CHUNKS]: chunks.CreateChunksRequest,
    ROUTES[AdminApi.ALTER_CHUNK_ASSIGNMENTS]: chunks.AlterChunkAssignmentsRequest,
}
READ_ROUTES = {ROUTES[AdminApi.DESCRIBE_CONFIGS], ROUTES[AdminApi.DESCRIBE_ACLS]}

SESSION = KafkaSession(listener="SASL_PLAINTEXT", security_protocol="SASL_PLAINTEXT",
                       peer_host="10.0.0.7", principal=Principal("User:alice", "10.0.0.7"),
                       token="secret", mechanism="PLAIN")

Answer = BaseModel | GatewayError | Callable[[dict[str, Any]], BaseModel]


@dataclass
class FakeGateway:
    """An AdminGateway answering each route from ``answers`` (a response model, a function
    of the body giving one, or a GatewayError to raise), recording every call."""

    answers: dict[str, Answer]
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sessions: list[KafkaSession] = field(default_factory=list)

    async def write(self, path: str, body: dict[str, Any],
                    session: KafkaSession) -> dict[str, Any]:
        assert path not in READ_ROUTES, f"{path} is a read route"
        return self._answer(path, body, session)

    async def read(self, path: str, body: dict[str, Any],
                   session: KafkaSession) -> dict[str, Any]:
        assert path in READ_ROUTES, f"{path} is a write route"
        return self._answer(path, body, session)

    def _answer(self, path: str, body: dict[str, Any], session: KafkaSession
                ) -> dict[str, Any]:
        # The route reads the body as JSON with its strict model: a body that is not JSON,
        # or that the model refuses, fails here as it would there (HTTP 400).
        REQUEST_MODELS[path].model_validate_json(json.dumps(body))
        self.calls.append((path, body))
        self.sessions.append(session)
        answer = self.answers[path]
        if isinstance(answer, GatewayError):
            raise answer
        model = answer if isinstance(answer, BaseModel) else answer(body)
        return dict(json.loads(model.model_dump_json()))

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for sent, body in self.calls if sent == path]


def kp(name: str) -> Any:
    """kafka-python's class for message ``name``."""
    # Imported by name: kafka-python ships no type information, and a static import would
    # make mypy analyse the shared support module, whose kafka imports are untyped.
    messages = importlib.import_module("tests.support.kafka_messages")
    return messages.kafka_python_classes()[name]


def request_of(api: AdminApi, version: int, wire: bytes, name: str) -> KafkaRequest:
    """The KafkaRequest a connection hands the handler for body bytes ``wire``."""
    header = RequestHeader(int(api), version, 7, "test-client", 0)
    return KafkaRequest(header, decode(f"{name}Request", version, wire), SESSION)


def from_kafka_python(api: AdminApi, name: str, version: int, message: Any) -> KafkaRequest:
    """``message`` (a kafka-python request object) as a client sends it, decoded by ours."""
    return request_of(api, version, bytes(message.encode(version=version)), name)


def from_ours(api: AdminApi, name: str, version: int, body: dict[str, Any]) -> KafkaRequest:
    """``body`` encoded by our codec, decoded again (for our private messages)."""
    return request_of(api, version, encode(f"{name}Request", version, body), name)


def run(handler: AdminHandler, request: KafkaRequest, gateway: AdminGateway) -> dict[str, Any]:
    async def handle() -> dict[str, Any]:
        return await handler(request, gateway)

    return asyncio.run(handle())


def as_client_reads(name: str, version: int, response: dict[str, Any]) -> Any:
    """``response`` encoded by our codec at ``version``, decoded by kafka-python's class."""
    return kp(f"{name}Response").decode(encode(f"{name}Response", version, response),
                                         version=version)


def round_trip(name: str, version: int, response: dict[str, Any]) -> dict[str, Any]:
    """``response`` through our codec: what a client of our private messages reads."""
    return decode(f"{name}Response", version, encode(f"{name}Response", version, response))


@dataclass
class ImageGateway:
    """An AdminGateway that runs the routes' real operations (the ones REST runs, without an
    authorizer) on ``image`` and commits their records to it, as the controller would."""

    image: Any
    paths: list[str] = field(default_factory=list)

    async def write(self, path: str, body: dict[str, Any],
                    session: KafkaSession) -> dict[str, Any]:
        return self._run(path, body)

    async def read(self, path: str, body: dict[str, Any],
                   session: KafkaSession) -> dict[str, Any]:
        return self._run(path, body)

    def _run(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        from chunkraft.api import authorized
        from chunkraft.controller.operations import acls as acl_operations
        from chunkraft.controller.operations import configs as config_operations
        from tests.support.controller import commit

        request: Any = REQUEST_MODELS[path].model_validate_json(json.dumps(body))
        principal = SESSION.principal
        assert principal is not None
        # Each route's operation, as api/controller_routes.py binds it (no authorizer).
        operations: dict[str, Callable[[Any], Any]] = {
            ROUTES[AdminApi.CREATE_TOPICS]: lambda r: authorized.create_topics_as(
                principal, None, r),
            ROUTES[AdminApi.DELETE_TOPICS]: lambda r: authorized.delete_topics_as(
                principal, None, r),
            ROUTES[AdminApi.CREATE_PARTITIONS]: lambda r: authorized.create_partitions_as(
                principal, None, r),
            ROUTES[AdminApi.CREATE_CHUNKS]: lambda r: authorized.create_chunks_as(
                principal, None, r),
            ROUTES[AdminApi.ALTER_CHUNK_ASSIGNMENTS]:
                lambda r: authorized.alter_chunk_assignments_as(principal, None, r),
            ROUTES[AdminApi.DESCRIBE_CONFIGS]:
                lambda r: lambda image: config_operations.describe_configs(image, r),
            ROUTES[AdminApi.ALTER_CONFIGS]:
                lambda r: lambda image: config_operations.alter_configs(image, r),
            ROUTES[AdminApi.INCREMENTAL_ALTER_CONFIGS]:
                lambda r: lambda image: config_operations.incremental_alter_configs(image, r),
            ROUTES[AdminApi.CREATE_ACLS]:
                lambda r: lambda image: acl_operations.create_acls(image, r),
            ROUTES[AdminApi.DELETE_ACLS]:
                lambda r: lambda image: acl_operations.delete_acls(image, r),
            ROUTES[AdminApi.DESCRIBE_ACLS]:
                lambda r: lambda image: acl_operations.describe_acls(image, r),
        }
        result = operations[path](request)(self.image)
        self.image = commit(self.image, result)
        self.paths.append(path)
        return dict(json.loads(result.response.model_dump_json()))
