"""The configuration RPC routes: incremental-alter-configs, alter-configs, describe-configs
(the contract other tests rely on), and their ALTER_CONFIGS / DESCRIBE_CONFIGS authorization."""

from __future__ import annotations

import asyncio
from pathlib import Path

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.error_codes import Errors
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.api.support import offset_of, running_node, start_brokers


def test_alter_then_describe_through_the_rpc_routes() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            await node.post("create-topics", {"topics": [{"name": "orders"}]})
            altered = await node.post("incremental-alter-configs", {"resources": [
                {"resource_type": 2, "resource_name": "orders", "configs": [
                    {"name": "retention.ms", "value": "1000", "config_operation": 0}]}],
                "validate_only": False})
            assert altered.status_code == 200
            assert altered.json() == {"responses": [
                {"error_code": 0, "error_message": None, "resource_type": 2,
                 "resource_name": "orders"}]}
            assert dict(node.context.controller.image.configs.topic("orders")) == {
                "retention.ms": "1000"}
            described = await node.post(
                f"describe-configs?min_offset={offset_of(altered)}",
                {"resources": [{"resource_type": 2, "resource_name": "orders"}],
                 "include_synonyms": True})
            assert described.status_code == 200
            (result,) = described.json()["results"]
            (entry,) = result["configs"]
            assert (entry["name"], entry["value"], entry["config_source"]) == (
                "retention.ms", "1000", 1)
            assert [s["source"] for s in entry["synonyms"]] == [1, 5]

            legacy = await node.post("alter-configs", {"resources": [
                {"resource_type": 4, "resource_name": "", "configs": [
                    {"name": "log.retention.bytes", "value": "100"}]}]})
            assert legacy.json()["responses"][0]["error_code"] == 0
            assert dict(node.context.controller.image.configs.cluster_default()) == {
                "log.retention.bytes": "100"}

            before = node.context.controller.image.offset
            bad = await node.post("incremental-alter-configs", {"resources": [
                {"resource_type": 2, "resource_name": "orders", "configs": [
                    {"name": "cleanup.policy", "value": "compact"}]}]})
            assert bad.json()["responses"][0]["error_code"] == Errors.INVALID_CONFIG.code
            assert node.context.controller.image.offset == before

    asyncio.run(scenario())


def test_a_malformed_config_request_is_400_invalid_request() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            answer = await node.post("incremental-alter-configs", {"resources": [
                {"resource_type": 2, "resource_name": "orders", "configs": [
                    {"name": "retention.ms", "value": "1", "config_operation": 7}]}]})
            assert answer.status_code == 400
            assert answer.json()["error_code"] == Errors.INVALID_REQUEST.code
            assert "config_operation" in answer.json()["message"]

    asyncio.run(scenario())


def test_configs_need_alter_configs_and_describe_configs(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    tokens = {name: add_token(path, f"User:{name}") for name in ("admin", "alice")}

    async def scenario() -> None:
        authenticator = Authenticator(credentials=CredentialStore(path),
                                      forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:admin"])) as node:
            node.http.headers["Authorization"] = f"Bearer {tokens['admin']}"
            await start_brokers(node)
            await node.post("create-topics", {"topics": [{"name": "orders"},
                                                         {"name": "secret"}]})
            await node.post("create-acls", {"creations": [{
                "resource_type": "TOPIC", "resource_name": "orders",
                "resource_pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
                "operation": "ALTER_CONFIGS", "permission_type": "ALLOW"}]})
            alice = {"Authorization": f"Bearer {tokens['alice']}"}
            change = [{"name": "retention.ms", "value": "5", "config_operation": 0}]
            altered = await node.post("incremental-alter-configs", {"resources": [
                {"resource_type": 2, "resource_name": "orders", "configs": change},
                {"resource_type": 2, "resource_name": "secret", "configs": change},
                {"resource_type": 4, "resource_name": "",
                 "configs": [{"name": "log.retention.ms", "value": "5"}]}]}, headers=alice)
            assert [r["error_code"] for r in altered.json()["responses"]] == [
                0, Errors.TOPIC_AUTHORIZATION_FAILED.code,
                Errors.CLUSTER_AUTHORIZATION_FAILED.code]
            image = node.context.controller.image
            assert dict(image.configs.topic("orders")) == {"retention.ms": "5"}
            assert dict(image.configs.topic("secret")) == {}
            assert dict(image.configs.cluster_default()) == {}
            # ALTER_CONFIGS implies DESCRIBE_CONFIGS.
            described = await node.post("describe-configs", {"resources": [
                {"resource_type": 2, "resource_name": "orders"},
                {"resource_type": 2, "resource_name": "secret"}]}, headers=alice)
            assert [r["error_code"] for r in described.json()["results"]] == [
                0, Errors.TOPIC_AUTHORIZATION_FAILED.code]

    asyncio.run(scenario())
