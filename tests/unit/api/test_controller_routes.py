"""The controller's Metadata route (controller_routes ``_metadata``): the fast, kept answer is
the answer ``describe_as`` gives, with its offset header, its documented model and its
authorization."""

from __future__ import annotations

import asyncio
from pathlib import Path

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.api.authorized import describe_as
from chunkraft.api.metadata_answers import ANSWERS
from chunkraft.error_codes import Errors
from chunkraft.protocol.topics import MetadataRequest, MetadataResponse
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from chunkraft.security.principal import Principal
from tests.unit.api.support import CLUSTER_ID_TEXT, V1, offset_of, running_node, start_brokers


def test_metadata_answers_what_describe_as_answers_and_keeps_it_per_image() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            for name, partitions in (("orders", 3), ("payments", 2)):
                created = await node.post("create-topics", {"topics": [
                    {"name": name, "num_partitions": partitions, "replication_factor": 2}]})
                assert created.json()["topics"][0]["error_code"] == 0
            image = node.context.controller.image
            for body in ({}, {"include_chunks": False}, {"topics": [{"name": "orders"},
                                                                   {"name": "ghost"}]}):
                answer = await node.post("metadata", body)
                assert answer.status_code == 200
                assert answer.headers["content-type"] == "application/json"
                assert offset_of(answer) == image.offset
                expected = describe_as(image, Principal("User:ANONYMOUS"), None,
                                       MetadataRequest.model_validate(body),
                                       cluster_id=CLUSTER_ID_TEXT, controller_id=1)
                assert answer.content == expected.model_dump_json().encode()
            hits = ANSWERS.hits
            again = await node.post("metadata", {})
            assert ANSWERS.hits == hits + 1
            # A write: the next answer is of the new image, not the kept one.
            await node.post("create-partitions", {"topics": [{"name": "orders", "count": 4}]})
            after = await node.post("metadata", {})
            assert offset_of(after) > offset_of(again)
            topics = MetadataResponse.model_validate_json(after.content).topics
            assert [len(t.partitions) for t in topics] == [4, 2]
            schema = node.app.openapi()["paths"][f"{V1}/metadata"]["post"]["responses"]["200"]
            assert schema["content"]["application/json"]["schema"]["$ref"].endswith(
                "/MetadataResponse")

    asyncio.run(scenario())


def test_metadata_shows_a_principal_only_the_topics_it_may_describe(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    tokens = {name: add_token(path, f"User:{name}") for name in ("admin", "alice")}

    async def scenario() -> None:
        authenticator = Authenticator(credentials=CredentialStore(path),
                                      forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:admin"])) as node:
            node.http.headers["Authorization"] = f"Bearer {tokens['admin']}"
            await start_brokers(node)
            await node.post("create-topics", {"topics": [
                {"name": "orders", "num_partitions": 2}, {"name": "secret"}]})
            await node.post("create-acls", {"creations": [{
                "resource_type": "TOPIC", "resource_name": "orders",
                "resource_pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
                "operation": "DESCRIBE", "permission_type": "ALLOW"}]})
            alice = {"Authorization": f"Bearer {tokens['alice']}"}
            every = await node.post("metadata", {}, headers=alice)
            assert [t["name"] for t in every.json()["topics"]] == ["orders"]
            asked = await node.post("metadata", {"topics": [{"name": "secret"},
                                                            {"name": "orders"}]},
                                    headers=alice)
            assert [(t["name"], t["error_code"]) for t in asked.json()["topics"]] == [
                ("secret", Errors.TOPIC_AUTHORIZATION_FAILED.code), ("orders", 0)]
            admin = await node.post("metadata", {})
            assert [t["name"] for t in admin.json()["topics"]] == ["orders", "secret"]

    asyncio.run(scenario())
