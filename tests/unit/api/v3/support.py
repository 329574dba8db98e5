"""Helpers for the REST v3 unit tests: an in-process controller app and checked calls."""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import BaseModel

from chunkraft.api.v3.acl_models import KafkaAclList
from chunkraft.api.v3.models import KafkaTopic
from tests.unit.api.support import CLUSTER_ID_TEXT, Node

BASE = f"/v3/clusters/{CLUSTER_ID_TEXT}"


class V3:
    """Calls a node's v3 routes; :meth:`ok` checks the status, the model and the offset."""

    def __init__(self, node: Node) -> None:
        self.node = node

    async def call(self, method: str, path: str, body: Any = None, **kwargs: Any
                   ) -> httpx.Response:
        url = path if path.startswith("/v3") else BASE + path
        return await self.node.http.request(method, url, json=body, **kwargs)

    async def ok(self, method: str, path: str, model: type[BaseModel] | None,
                 body: Any = None, status: int = 200, **kwargs: Any) -> dict[str, Any]:
        answer = await self.call(method, path, body, **kwargs)
        assert answer.status_code == status, (method, path, answer.status_code, answer.text[:500])
        offset = int(answer.headers["x-metadata-offset"])
        assert offset <= self.node.context.controller.image.offset
        if model is None:
            return {}
        model.model_validate_json(answer.content)
        payload: dict[str, Any] = answer.json()
        if "metadata" in payload and "metadata_offset" in payload["metadata"]:
            assert payload["metadata"]["metadata_offset"] == offset
        return payload

    async def error(self, method: str, path: str, status: int, name: str, body: Any = None,
                    **kwargs: Any) -> str:
        """Checks a whole-request error answer; returns its message."""
        answer = await self.call(method, path, body, **kwargs)
        assert answer.status_code == status, (method, path, answer.status_code, answer.text[:500])
        payload = answer.json()
        assert set(payload) == {"error_code", "error_name", "message"}, payload
        assert payload["error_name"] == name, payload
        message: str = payload["message"]
        return message

    async def create_topic(self, name: str, partitions: int = 3, rf: int = 2) -> dict[str, Any]:
        return await self.ok("POST", "/topics", KafkaTopic, {
            "topic_name": name, "partitions_count": partitions, "replication_factor": rf},
            status=201)

    async def acls(self) -> list[dict[str, Any]]:
        payload = await self.ok("GET", "/acls", KafkaAclList)
        data: list[dict[str, Any]] = payload["data"]
        return data


def results(payload: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(error_name, error_message) of each item of a batch answer."""
    return [(item["error_name"], item["error_message"]) for item in payload["data"]]


def names(payload: dict[str, Any]) -> list[str]:
    return [item["error_name"] for item in payload["data"]]
