"""The OpenAPI document declares every v3 route with its request body and response models."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.unit.api.support import running_node


def test_every_v3_route_declares_its_bodies() -> None:
    async def scenario() -> dict[str, Any]:
        async with running_node() as node:
            answer = await node.http.get("/openapi.json")
            assert answer.status_code == 200
            document: dict[str, Any] = answer.json()
            return document

    document = asyncio.run(scenario())
    schemas = document["components"]["schemas"]
    v3 = {path: item for path, item in document["paths"].items() if path.startswith("/v3")}
    assert len(v3) == 25
    operations = 0
    for path, item in v3.items():
        for method, operation in item.items():
            operations += 1
            responses = operation["responses"]
            assert "4XX" in responses and "5XX" in responses, (method, path)
            success = [code for code in responses if code in ("200", "201", "204")]
            assert success, (method, path)
            for code in success:
                if code == "204":
                    continue
                ref = responses[code]["content"]["application/json"]["schema"]["$ref"]
                assert ref.removeprefix("#/components/schemas/") in schemas
            if method in ("post", "patch", "put"):
                body = operation["requestBody"]["content"]["application/json"]["schema"]
                assert "$defs" not in json.dumps(body), (method, path)
                assert body["additionalProperties"] is False
    assert operations == 36
