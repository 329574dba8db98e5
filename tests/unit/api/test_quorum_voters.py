"""api/quorum_voters in-process: what is refused before any Raft work (a bad body, no ALTER on
the cluster, a log that is no quorum), and that a follower forwards a change to a leader it
knows only from that leader's ControllerRegistrationRecord. The changes themselves run against
real quorums in tests/integration/test_quorum_membership.py."""

from __future__ import annotations

import asyncio
import uuid

import httpx

from chunkraft.controller.raft.local import LocalRaft
from chunkraft.error_codes import Errors
from chunkraft.records import ControllerRegistrationRecord
from chunkraft.security.authorizer import Authorizer
from tests.support.raft import batch
from tests.unit.api.support import V1, FollowerRaft, running_node

VOTERS = f"{V1}/quorum/voters"
NEW = {"controller_id": 4, "raft_address": "198.18.0.4:9093", "http_url": "http://198.18.0.4:9090"}


def test_a_log_that_is_no_quorum_has_no_voters_to_change() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            added = await node.http.post(VOTERS, json=NEW)
            removed = await node.http.delete(f"{VOTERS}/1")
            for answer in (added, removed):
                assert answer.status_code == 400, answer.text
                assert answer.json()["error_name"] == Errors.UNSUPPORTED_VERSION.name
    asyncio.run(scenario())


def test_bad_requests_name_the_problem() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            for body, says in (({**NEW, "raft_address": "no-port"}, "raft_address"),
                               ({**NEW, "controller_id": -1}, "controller_id"),
                               ({**NEW, "http_url": "http://u:p@h:1"}, "not a controller's URL"),
                               ({"controller_id": 4}, "raft_address")):
                answer = await node.http.post(VOTERS, json=body)
                assert answer.status_code == 400, answer.text
                assert answer.json()["error_name"] == "INVALID_REQUEST"
                assert says in answer.json()["message"]
            answer = await node.http.delete(f"{VOTERS}/{2**31}")
            assert answer.status_code == 400 and "controller_id" in answer.json()["message"]
    asyncio.run(scenario())


def test_changing_the_voters_needs_alter_on_the_cluster() -> None:
    async def scenario() -> None:
        async with running_node(authorizer=Authorizer(())) as node:
            for answer in (await node.http.post(VOTERS, json=NEW),
                           await node.http.delete(f"{VOTERS}/2")):
                assert answer.status_code == 403, answer.text
                assert answer.json()["error_name"] == "CLUSTER_AUTHORIZATION_FAILED"
    asyncio.run(scenario())


def test_a_follower_forwards_to_a_leader_known_by_its_registration() -> None:
    seen: list[str] = []

    def leader(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url}")
        return httpx.Response(200, json={"error_code": 0, "controller_id": 2,
                                         "raft_address": "198.18.0.2:9093", "voters": []})

    async def scenario() -> None:
        raft = FollowerRaft(1, leader=4)
        registration = ControllerRegistrationRecord(
            controller_id=4, incarnation_id=uuid.uuid4(), raft_address="198.18.0.4:9093",
            http_url="http://198.18.0.4:9090")
        LocalRaft.set_leader(raft, True)
        (_outcome,) = raft.propose([batch([registration], expected=0)]).result(5)
        LocalRaft.set_leader(raft, False)
        client = httpx.AsyncClient(transport=httpx.MockTransport(leader))
        async with running_node(raft, controller_urls={1: "http://198.18.0.1:9090"},
                                forward_client=client) as node:
            answer = await node.http.delete(f"{VOTERS}/2")
            assert answer.status_code == 200, answer.text
            assert node.context.all_controller_urls() == {
                1: "http://198.18.0.1:9090", 4: "http://198.18.0.4:9090"}
        assert seen == ["DELETE http://198.18.0.4:9090/controller/v1/quorum/voters/2"]
    asyncio.run(scenario())
