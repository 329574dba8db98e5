"""REST v3 configurations in process: a topic's, a broker's and the cluster default, in
Confluent's shapes, with the error answers of bad keys, bad values and unknown topics."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.api.v3.config_models import (
    KafkaBrokerConfig,
    KafkaBrokerConfigList,
    KafkaClusterConfig,
    KafkaClusterConfigList,
    KafkaTopicConfig,
    KafkaTopicConfigList,
)
from chunkraft.api.v3.models import KafkaTopic
from chunkraft.configs.keys import TOPIC_KEYS
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.api.support import CLUSTER_ID_TEXT, Node, running_node, start_brokers
from tests.unit.api.v3.support import V3


def run(scenario: Any) -> None:
    async def main() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("orders", partitions=1, rf=1)
            await scenario(node, v3)

    asyncio.run(main())


def _by_name(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in payload["data"]}


def test_topic_configs_put_get_list_and_delete() -> None:
    async def scenario(node: Node, v3: V3) -> None:
        await v3.ok("PUT", "/topics/orders/configs/retention.ms", None, {"value": "1000"},
                    status=204)
        assert dict(node.context.controller.image.configs.topic("orders")) == {
            "retention.ms": "1000"}
        one = await v3.ok("GET", "/topics/orders/configs/retention.ms", KafkaTopicConfig)
        assert one == {
            "kind": "KafkaTopicConfig",
            "metadata": {
                "self": f"http://controller-1/v3/clusters/{CLUSTER_ID_TEXT}/topics/orders/configs/"
                        "retention.ms",
                "resource_name": f"crn:///kafka={CLUSTER_ID_TEXT}/topic=orders/"
                                 "config=retention.ms"},
            "cluster_id": CLUSTER_ID_TEXT, "topic_name": "orders", "name": "retention.ms",
            "value": "1000", "is_default": False, "is_read_only": False,
            "is_sensitive": False, "source": "DYNAMIC_TOPIC_CONFIG",
            "synonyms": [
                {"name": "retention.ms", "value": "1000", "source": "DYNAMIC_TOPIC_CONFIG"},
                {"name": "log.retention.ms", "value": "604800000",
                 "source": "DEFAULT_CONFIG"}]}
        listed = _by_name(await v3.ok("GET", "/topics/orders/configs", KafkaTopicConfigList))
        assert set(listed) == set(TOPIC_KEYS)  # every topic key, set or not
        assert listed["segment.ms"]["is_default"] is True
        assert listed["segment.ms"]["source"] == "DEFAULT_CONFIG"
        await v3.ok("DELETE", "/topics/orders/configs/retention.ms", None, status=204)
        again = await v3.ok("GET", "/topics/orders/configs/retention.ms", KafkaTopicConfig)
        assert (again["value"], again["source"]) == ("604800000", "DEFAULT_CONFIG")

    run(scenario)


def test_topic_configs_alter_batch_and_validate_only() -> None:
    async def scenario(node: Node, v3: V3) -> None:
        await v3.ok("POST", "/topics/orders/configs:alter", None, {"data": [
            {"name": "retention.ms", "value": "5000"},
            {"name": "cleanup.policy", "value": "delete", "operation": "APPEND"}]}, status=204)
        assert dict(node.context.controller.image.configs.topic("orders")) == {
            "retention.ms": "5000", "cleanup.policy": "delete"}
        await v3.ok("POST", "/topics/orders/configs:alter", None, {"data": [
            {"name": "retention.ms", "operation": "DELETE"},
            {"name": "segment.ms", "value": "60000"}], "validate_only": True}, status=204)
        assert dict(node.context.controller.image.configs.topic("orders")) == {
            "retention.ms": "5000", "cleanup.policy": "delete"}

    run(scenario)


def test_config_errors_change_nothing() -> None:
    async def scenario(node: Node, v3: V3) -> None:
        before = node.context.controller.image.offset
        message = await v3.error("PUT", "/topics/orders/configs/cleanup.policy", 400,
                                 "INVALID_CONFIG", {"value": "compact"})
        assert "compact is not supported" in message
        message = await v3.error("POST", "/topics/orders/configs:alter", 400, "INVALID_CONFIG",
                                 {"data": [{"name": "retention.ms", "value": "7"},
                                           {"name": "no.such", "value": "1"}]})
        assert message == "Unknown topic config name: no.such"
        await v3.error("PUT", "/topics/orders/configs/retention.ms", 400, "INVALID_CONFIG",
                       {"value": "soon"})
        await v3.error("PUT", "/topics/ghost/configs/retention.ms", 404,
                       "UNKNOWN_TOPIC_OR_PARTITION", {"value": "1"})
        await v3.error("GET", "/topics/ghost/configs", 404, "UNKNOWN_TOPIC_OR_PARTITION")
        await v3.error("GET", "/topics/orders/configs/no.such", 404, "INVALID_CONFIG")
        await v3.error("PUT", "/topics/orders/configs/retention.ms", 400, "INVALID_REQUEST",
                       {"value": 5})
        await v3.error("POST", "/topics/orders/configs:alter", 400, "INVALID_REQUEST",
                       {"data": [{"name": "retention.ms", "operation": "MERGE"}]})
        await v3.error("GET", "/brokers/-1/configs", 400, "INVALID_REQUEST")
        await v3.error("PUT", "/brokers/1/configs/retention.ms", 400, "INVALID_CONFIG",
                       {"value": "1"})
        assert node.context.controller.image.offset == before

    run(scenario)


def test_broker_and_cluster_default_configs() -> None:
    async def scenario(node: Node, v3: V3) -> None:
        await v3.ok("PUT", "/broker-configs/log.retention.ms", None, {"value": "86400000"},
                    status=204)
        await v3.ok("POST", "/brokers/2/configs:alter", None, {"data": [
            {"name": "message.max.bytes", "value": "2000000"}]}, status=204)
        cluster = _by_name(await v3.ok("GET", "/broker-configs", KafkaClusterConfigList))
        assert cluster["log.retention.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        assert cluster["log.retention.ms"]["config_type"] == "BROKER"
        one = await v3.ok("GET", "/broker-configs/log.retention.ms", KafkaClusterConfig)
        assert one["value"] == "86400000"
        broker = _by_name(await v3.ok("GET", "/brokers/2/configs", KafkaBrokerConfigList))
        assert (broker["message.max.bytes"]["source"], broker["message.max.bytes"]["value"]) \
            == ("DYNAMIC_BROKER_CONFIG", "2000000")
        assert broker["log.retention.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        assert broker["message.max.bytes"]["broker_id"] == 2
        # A topic inherits the cluster default through its synonym.
        topic = await v3.ok("GET", "/topics/orders/configs/retention.ms", KafkaTopicConfig)
        assert (topic["value"], topic["source"]) == ("86400000",
                                                    "DYNAMIC_DEFAULT_BROKER_CONFIG")
        await v3.ok("DELETE", "/brokers/2/configs/message.max.bytes", None, status=204)
        entry = await v3.ok("GET", "/brokers/2/configs/message.max.bytes", KafkaBrokerConfig)
        assert entry["source"] == "DEFAULT_CONFIG"

    run(scenario)


def test_create_topic_with_configs() -> None:
    async def scenario(node: Node, v3: V3) -> None:
        await v3.ok("POST", "/topics", KafkaTopic, {
            "topic_name": "events", "partitions_count": 1, "replication_factor": 1,
            "configs": [{"name": "retention.ms", "value": "60000"}]}, status=201)
        assert dict(node.context.controller.image.configs.topic("events")) == {
            "retention.ms": "60000"}
        await v3.error("POST", "/topics", 400, "INVALID_CONFIG", {
            "topic_name": "bad", "configs": [{"name": "cleanup.policy", "value": "compact"}]})
        assert node.context.controller.image.topics.get_by_name("bad") is None

    run(scenario)


def test_config_routes_need_alter_and_describe_configs(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    tokens = {name: add_token(path, f"User:{name}") for name in ("admin", "alice")}

    async def main() -> None:
        authenticator = Authenticator(credentials=CredentialStore(path),
                                      forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:admin"])) as node:
            node.http.headers["Authorization"] = f"Bearer {tokens['admin']}"
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("orders", partitions=1, rf=1)
            alice = {"headers": {"Authorization": f"Bearer {tokens['alice']}"}}
            await v3.error("GET", "/topics/orders/configs", 403, "TOPIC_AUTHORIZATION_FAILED",
                           **alice)
            await v3.error("PUT", "/topics/orders/configs/retention.ms", 403,
                           "TOPIC_AUTHORIZATION_FAILED", {"value": "1"}, **alice)
            await v3.error("PUT", "/broker-configs/log.retention.ms", 403,
                           "CLUSTER_AUTHORIZATION_FAILED", {"value": "1"}, **alice)
            await v3.ok("POST", "/acls", None, {
                "resource_type": "TOPIC", "resource_name": "orders", "principal": "User:alice",
                "operation": "ALTER_CONFIGS", "permission": "ALLOW"}, status=201)
            await v3.ok("PUT", "/topics/orders/configs/retention.ms", None, {"value": "1"},
                        status=204, **alice)
            await v3.ok("GET", "/topics/orders/configs", KafkaTopicConfigList, **alice)

    asyncio.run(main())
