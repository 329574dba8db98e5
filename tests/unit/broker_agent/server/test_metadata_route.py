"""``POST /broker/v1/metadata``: the controller's Metadata answer from the broker's image."""

from __future__ import annotations

import uuid
from pathlib import Path

from chunkraft.api.metadata_json import metadata_json
from chunkraft.broker_agent.server import create_broker_app
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.topics import MetadataRequest, MetadataResponse
from chunkraft.security.principal import Principal
from tests.unit.broker_agent.server.support import (
    AsgiClient,
    FakeFollower,
    FakeRuntime,
    acl,
    secured_broker,
)
from tests.unit.controller.operations.topic_support import apply, chunk, cluster, with_topic


def _image() -> MetadataImage:
    image = with_topic(cluster(), "orders", ((0, 1), (1, 2), (2, 0)))
    image = with_topic(image, "other", ((1,),), topic_id=uuid.UUID(int=7))
    return apply(image, chunk(0, 9, 9, (0, 1)))


def test_the_answer_is_the_controllers_bytes_for_the_same_image() -> None:
    image = _image()
    runtime = FakeRuntime(follower=FakeFollower(image=image))
    client = AsgiClient(create_broker_app(runtime))
    answer = client.post("/broker/v1/metadata", json={"topics": None})
    assert answer.status_code == 200
    expected = metadata_json(image, Principal("User:ANONYMOUS"), None,
                             MetadataRequest(), cluster_id=runtime.cluster_id,
                             controller_id=-1)
    assert answer.content == expected
    parsed = MetadataResponse.model_validate_json(answer.content)
    assert sorted(t.name or "" for t in parsed.topics) == ["orders", "other"]
    orders = next(t for t in parsed.topics if t.name == "orders")
    assert [p.leader_id for p in orders.partitions] == [0, 1, 2]
    assert orders.partitions[0].chunks[0].stop_offset == 9
    assert {b.node_id for b in parsed.brokers} == {0, 1, 2}


def test_named_topics_and_unknown_ones() -> None:
    runtime = FakeRuntime(follower=FakeFollower(image=_image()))
    client = AsgiClient(create_broker_app(runtime))
    answer = client.post("/broker/v1/metadata", json={
        "topics": [{"name": "orders"}, {"name": "nope"}], "include_chunks": False})
    parsed = MetadataResponse.model_validate_json(answer.content)
    assert [(t.name, t.error_code) for t in parsed.topics] == [
        ("orders", 0), ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION.code)]
    assert parsed.topics[0].partitions[0].chunks == ()


def test_topics_are_filtered_by_describe(tmp_path: Path) -> None:
    broker = secured_broker(tmp_path, acl("orders", AclOperation.DESCRIBE))
    broker.runtime.follower.image = apply(_image(), acl("orders",
                                                        AclOperation.DESCRIBE))
    seen = broker.post("/broker/v1/metadata", "alice", {"topics": None}).json()
    assert [t["name"] for t in seen["topics"]] == ["orders"]
    named = broker.post("/broker/v1/metadata", "bob", {"topics": [{"name": "orders"}]}).json()
    assert named["topics"][0]["error_code"] == Errors.TOPIC_AUTHORIZATION_FAILED.code
    admin = broker.post("/broker/v1/metadata", "admin", {"topics": None}).json()
    assert sorted(t["name"] for t in admin["topics"]) == ["orders", "other"]


def test_a_malformed_request_is_a_400() -> None:
    client = AsgiClient(create_broker_app(FakeRuntime()))
    answer = client.post("/broker/v1/metadata", json={"topics": 5})
    assert answer.status_code == 400
