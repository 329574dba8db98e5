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


def test_the_document_declares_the_bounds_validation_enforces() -> None:
    async def scenario() -> dict[str, Any]:
        async with running_node() as node:
            document: dict[str, Any] = (await node.http.get("/openapi.json")).json()
            return document

    paths = asyncio.run(scenario())["paths"]
    topic = paths["/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}"]
    parameters = {p["name"]: p["schema"] for p in topic["get"]["parameters"]}
    assert parameters["topic_name"]["pattern"] == "^[a-zA-Z0-9._-]+$"
    assert parameters["topic_name"]["maxLength"] == 249
    assert parameters["topic_name"]["not"] == {"enum": [".", ".."]}
    assert (parameters["partition_id"]["minimum"], parameters["partition_id"]["maximum"]) == (
        0, 2**31 - 1)
    assert (parameters["min_offset"]["minimum"], parameters["min_offset"]["maximum"]) == (
        -1, 2**63 - 1)
    assert parameters["wait_ms"]["minimum"] == 0
    listed = {p["name"]: p["schema"] for p in paths["/v3/clusters/{cluster_id}/topics"]["get"]
              ["parameters"]}
    assert (listed["page_size"]["minimum"], listed["page_size"]["maximum"]) == (1, 1000)
    acl = paths["/v3/clusters/{cluster_id}/acls"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    assert "ANY" not in acl["properties"]["resource_type"]["enum"]
    assert acl["properties"]["pattern_type"]["enum"] == ["LITERAL", "PREFIXED"]
    assert acl["then"] == {"properties": {"resource_name": {"const": "kafka-cluster"}}}
    expand = paths["/v3/clusters/{cluster_id}/topics/{topic_name}"]["patch"]["requestBody"][
        "content"]["application/json"]["schema"]
    assert expand["properties"]["partitions_count"]["minimum"] == 1
    create = paths["/v3/clusters/{cluster_id}/topics"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    for count in ("partitions_count", "replication_factor"):  # -1: the default; never 0
        assert create["properties"][count]["minimum"] == -1
        assert create["properties"][count]["not"] == {"const": 0}
    assignment = create["properties"]["replicas_assignments"]["anyOf"][0]["items"]["properties"]
    assert assignment["partition_id"]["minimum"] == 0
    assert assignment["broker_ids"]["items"]["minimum"] == 0
    assert (assignment["broker_ids"]["minItems"], assignment["broker_ids"]["uniqueItems"]) == (
        1, True)
    voters = paths["/controller/v1/quorum/voters"]["post"]["requestBody"]
    assert voters["required"] is True
