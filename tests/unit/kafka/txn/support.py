"""An in-process stand-in for the broker app's routes, and helpers that run a transaction
handler on a request as the wire carries it (encoded and decoded by our codec, or encoded by
kafka-python's) and read its answer back with either codec."""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass, field
from typing import Any

from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import RequestHeader, decode, encode
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest, KafkaSession
from chunkraft.security.principal import Principal

SESSION = KafkaSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", "10.0.0.7",
                       principal=Principal("User:alice", "10.0.0.7"), token="crt_alice")


@dataclass
class FakeGateway:
    """Answers every write with ``answer`` (or raises it), recording what it was sent."""

    answer: dict[str, Any] | GatewayError
    writes: list[tuple[str, dict[str, Any], KafkaSession]] = field(default_factory=list)

    async def write(self, path: str, body: dict[str, Any],
                    session: KafkaSession) -> dict[str, Any]:
        self.writes.append((path, body, session))
        if isinstance(self.answer, GatewayError):
            raise self.answer
        return self.answer

    async def read(self, path: str, body: dict[str, Any],
                   session: KafkaSession) -> dict[str, Any]:
        raise AssertionError("InitProducerId and the transaction APIs are writes")

    @property
    def sent(self) -> dict[str, Any]:
        """The body of the only write."""
        ((_, body, _),) = self.writes
        return body


def served(handler: ApiHandler, version: int, wire: bytes, name: str) -> dict[str, Any]:
    """``handler``'s answer to request ``name`` at ``version`` whose body is ``wire``."""
    request = KafkaRequest(RequestHeader(handler.api_key, version, 1, "client", 0),
                           decode(f"{name}Request", version, wire), SESSION)

    async def call() -> dict[str, Any]:
        answer = await handler.handle(request)
        assert isinstance(answer, dict)
        return answer

    return asyncio.run(call())


def handle(handler: ApiHandler, name: str, version: int, body: dict[str, Any]
           ) -> dict[str, Any]:
    """``handler``'s answer to ``body`` (our codec both ways), re-read from the wire."""
    answer = served(handler, version, encode(f"{name}Request", version, body), name)
    wire = encode(f"{name}Response", version, answer)
    decoded: dict[str, Any] = decode(f"{name}Response", version, wire)
    return decoded


def stock_classes() -> dict[str, Any]:
    """kafka-python's message classes by name."""
    classes: dict[str, Any] = importlib.import_module(
        "tests.support.kafka_messages").kafka_python_classes()
    return classes
