"""ClusterMetadata: refresh from brokers in turn, the indexed view, lookups."""

from __future__ import annotations

import json

import httpx
import pytest

from chunkraft.client.metadata import ClusterMetadata, MetadataUnavailableError
from chunkraft.error_codes import Errors

ANSWER = {
    "cluster_id": "c1", "controller_id": 3000, "metadata_offset": 77,
    "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": 9000},
                {"node_id": 1, "host": "127.0.0.1", "port": 9001, "rack": "r1"},
                {"node_id": 2, "host": "127.0.0.1", "port": 9002, "fenced": True}],
    "topics": [
        {"name": "orders", "topic_id": "abc", "partitions": [
            {"partition_index": 1, "leader_id": 1, "leader_epoch": 4, "replica_nodes": [1, 0],
             "isr_nodes": [1], "start_offset": 10, "start_timestamp": 5,
             "prior_partition_epochs": [{"partition_index": 0, "leader_epoch": 2}]},
            {"partition_index": 0, "leader_id": 0, "leader_epoch": 2, "replica_nodes": [0, 1],
             "isr_nodes": [0, 1], "chunks": [
                 {"start_offset": 5, "start_timestamp": 1, "stop_offset": 9, "end_offset": 9,
                  "chunk_epoch": 1, "replicas": [1], "isr": [1]},
                 {"start_offset": 0, "start_timestamp": 0, "stop_offset": 4, "end_offset": 4,
                  "chunk_epoch": 0, "replicas": [2], "isr": [2]}]}]},
        {"name": "secret", "error_code": Errors.TOPIC_AUTHORIZATION_FAILED.code,
         "partitions": []}],
}


def _metadata(seen: list[tuple[str, dict[str, object]]], *,
              down: frozenset[str] | set[str] = frozenset(), **options: object) -> ClusterMetadata:
    def handler(request: httpx.Request) -> httpx.Response:
        host = f"{request.url.host}:{request.url.port}"
        seen.append((host, json.loads(request.content)))
        if host in down:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json=ANSWER)

    return ClusterMetadata(["http://boot-a:1/", "http://boot-b:2"],
                           transport=httpx.MockTransport(handler), **options)  # type: ignore[arg-type]


def test_refresh_indexes_brokers_topics_partitions_and_chunks() -> None:
    seen: list[tuple[str, dict[str, object]]] = []
    metadata = _metadata(seen)
    assert metadata.partition_count("orders") is None and metadata.leader("orders", 0) == -1
    metadata.refresh(["orders"])
    assert seen == [("boot-a:1", {"topics": [{"name": "orders", "topic_id": None}],
                                  "include_chunks": True})]
    assert (metadata.cluster_id, metadata.controller_id, metadata.metadata_offset) == (
        "c1", 3000, 77)
    assert metadata.broker_url(1) == "http://127.0.0.1:9001"
    assert metadata.broker(1).rack == "r1"  # type: ignore[union-attr]
    assert metadata.partition_count("orders") == 2
    assert [p.partition for p in metadata.partitions_for("orders")] == [0, 1]
    assert metadata.leader("orders", 1) == 1
    assert metadata.leader_url("orders", 0) == "http://127.0.0.1:9000"
    assert [c.start_offset for c in metadata.chunks("orders", 0)] == [0, 5]
    assert metadata.prior_partition_epochs("orders", 1) == ((0, 2),)
    assert metadata.partition("orders", 1).start_offset == 10  # type: ignore[union-attr]
    assert metadata.partition("orders", 2) is None
    assert metadata.topic_error("secret") is Errors.TOPIC_AUTHORIZATION_FAILED
    assert metadata.partition_count("secret") is None
    assert metadata.topic_error("orders") is None
    assert metadata.age < 5


def test_refresh_tries_known_brokers_then_bootstrap_and_skips_fenced() -> None:
    seen: list[tuple[str, dict[str, object]]] = []
    metadata = _metadata(seen, down={"boot-a:1"})
    metadata.refresh()
    assert [host for host, _ in seen] == ["boot-a:1", "boot-b:2"]
    assert seen[-1][1]["topics"] is None  # no topic wanted yet: every topic
    assert metadata.candidate_urls() == ["http://127.0.0.1:9000", "http://127.0.0.1:9001",
                                         "http://boot-a:1", "http://boot-b:2"]


def test_no_broker_answering_raises() -> None:
    metadata = _metadata([], down={"boot-a:1", "boot-b:2"})
    with pytest.raises(MetadataUnavailableError) as raised:
        metadata.refresh()
    assert set(raised.value.errors) == {"http://boot-a:1", "http://boot-b:2"}


def test_https_bootstrap_gives_https_broker_urls() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=ANSWER)

    metadata = ClusterMetadata(["https://b:1"], transport=httpx.MockTransport(handler))
    metadata.refresh()
    assert metadata.broker_url(0) == "https://127.0.0.1:9000"
    with pytest.raises(ValueError):
        ClusterMetadata([])
