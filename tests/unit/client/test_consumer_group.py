"""GroupClient: FindCoordinator, and a retry on another coordinator after NOT_COORDINATOR."""

from __future__ import annotations

import json

import httpx
import pytest

from chunkraft.client.consumer_group import GroupClient, GroupError
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import OffsetFetchRequest


def test_not_coordinator_finds_the_coordinator_again_and_retries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chunkraft.client.consumer_group.BACKOFF_S", (0.0,))
    coordinators = ["http://b1:1", "http://b2:2"]
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path.rsplit("/", 1)[1]
        calls.append(f"{request.url.host}:{path}")
        if path == "find-coordinator":
            url = coordinators.pop(0)
            host, port = url[7:].split(":")
            return httpx.Response(200, json={"coordinators": [
                {"key": "g", "node_id": 1, "host": host, "port": int(port), "url": url}]})
        assert json.loads(request.content)["group_id"] == "g"
        if request.url.host == "b1":
            return httpx.Response(200, json={"error_code": Errors.NOT_COORDINATOR.code})
        return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 7}]}]})

    client = GroupClient("g", lambda: ["http://boot:9"], transport=httpx.MockTransport(handle))
    try:
        answer = client.offset_fetch(OffsetFetchRequest(group_id="g"))
    finally:
        client.close()
    assert answer.topics[0].partitions[0].committed_offset == 7
    assert calls == ["boot:find-coordinator", "b1:offset-fetch", "boot:find-coordinator",
                     "b2:offset-fetch"]


def test_a_coordinator_error_of_find_coordinator_is_retried_then_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chunkraft.client.consumer_group.BACKOFF_S", (0.0,))
    monkeypatch.setattr("chunkraft.client.consumer_group.MAX_ATTEMPTS", 3)

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"coordinators": [
            {"key": "g", "error_code": Errors.COORDINATOR_NOT_AVAILABLE.code}]})

    client = GroupClient("g", lambda: ["http://boot:9"], transport=httpx.MockTransport(handle))
    try:
        with pytest.raises(GroupError) as raised:
            client.offset_fetch(OffsetFetchRequest(group_id="g"))
    finally:
        client.close()
    assert raised.value.error is Errors.COORDINATOR_NOT_AVAILABLE
