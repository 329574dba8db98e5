"""Forwarding a write from a follower to the leader (chunkraft.api.forwarding).

The "leader" is a second real app behind its own ASGI transport: the follower's forwarding
client is an ``httpx.AsyncClient`` over that transport, so the forwarded request goes through
the leader's whole HTTP stack.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import Future

import httpx
import pytest

from chunkraft.api import forwarding
from chunkraft.api.authentication import (
    PRINCIPAL_HEADER,
    PRINCIPAL_HOST_HEADER,
    SIGNATURE_HEADER,
)
from chunkraft.api.forwarding import FORWARDED_HEADER
from chunkraft.controller.raft.entry import ProposedBatch
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.controller.raft.state_machine import BatchOutcome
from chunkraft.error_codes import Errors
from chunkraft.protocol.topics import CreateTopicsResponse
from chunkraft.records import TopicRecord, decode_record
from tests.unit.api.support import (
    V1,
    FollowerRaft,
    offset_of,
    running_node,
    start_brokers,
)

LEADER_URL = "http://leader.invalid:9090"
TOPIC = {"topics": [{"name": "forwarded", "num_partitions": 1, "replication_factor": 1}]}


@pytest.fixture(autouse=True)
def short_leader_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A follower waits up to LEADER_WAIT for an election; keep the no-leader cases quick."""
    monkeypatch.setattr(forwarding, "LEADER_WAIT", 0.2)


def test_a_follower_forwards_a_write_to_the_leader() -> None:
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    async def scenario() -> None:
        async with running_node(node_id=1) as leader:
            await start_brokers(leader)
            to_leader = httpx.AsyncClient(transport=httpx.ASGITransport(app=leader.app),
                                          event_hooks={"request": [record]})
            async with running_node(FollowerRaft(2, leader=1),
                                    controller_urls={1: LEADER_URL, 2: "http://follower"},
                                    forward_client=to_leader) as follower:
                answer = await follower.post("create-topics", TOPIC,
                                             headers={"Idempotency-Key": "forward-me",
                                                      "Authorization": "Bearer t0ken"})
                assert answer.status_code == 200, answer.text
                result = CreateTopicsResponse.model_validate_json(answer.content)
                assert result.topics[0].error_code == 0
                # The leader committed it; the follower's own log did not change.
                assert leader.context.controller.image.topics.get_by_name("forwarded")
                assert follower.context.controller.image.offset == -1
                assert offset_of(answer) == leader.context.controller.image.offset
                (forwarded,) = seen
                assert str(forwarded.url) == f"{LEADER_URL}{V1}/create-topics"
                assert forwarded.headers[FORWARDED_HEADER] == "2"
                # The principal the follower authenticated goes on, signed, and names the
                # caller on the leader (tests/unit/api/test_authentication.py checks the
                # signature); the bearer token goes along only so the leader can ask a broker
                # as the caller (a chunk cut, api/leader_cuts.py).
                assert forwarded.headers["authorization"] == "Bearer t0ken"
                assert forwarded.headers[PRINCIPAL_HEADER] == "User%3AANONYMOUS"
                assert forwarded.headers[PRINCIPAL_HOST_HEADER] == "%2A"
                assert len(forwarded.headers[SIGNATURE_HEADER]) == 64
                # The follower kept the client's key: the same key sent to the leader directly
                # is a retry of the forwarded write, answered the same and committed once.
                direct = await leader.post("create-topics", TOPIC,
                                           headers={"Idempotency-Key": "forward-me"})
                assert direct.json() == answer.json()
                assert offset_of(direct) == offset_of(answer)
                read = leader.raft.state_machine.read_after(-1, max_records=10_000,
                                                            max_bytes=1 << 30)
                names = [record.name for batch in read.batches for record in
                         map(decode_record, batch.records) if isinstance(record, TopicRecord)]
                assert names == ["forwarded"]
            assert to_leader.is_closed  # the follower's lifespan closed its forwarding client

    asyncio.run(scenario())


def test_a_follower_gives_a_request_without_a_key_one_and_forwards_it() -> None:
    keys: list[str] = []

    async def record(request: httpx.Request) -> None:
        keys.append(request.headers["idempotency-key"])

    async def scenario() -> None:
        async with running_node(node_id=1) as leader:
            await start_brokers(leader)
            to_leader = httpx.AsyncClient(transport=httpx.ASGITransport(app=leader.app),
                                          event_hooks={"request": [record]})
            async with running_node(FollowerRaft(2, leader=1), controller_urls={1: LEADER_URL},
                                    forward_client=to_leader) as follower:
                answer = await follower.post("create-topics", TOPIC)
                assert answer.status_code == 200
                assert len(keys) == 1 and len(bytes.fromhex(keys[0])) == 16

    asyncio.run(scenario())


def test_a_request_already_forwarded_to_a_non_leader_is_421() -> None:
    async def scenario() -> None:
        async with running_node(FollowerRaft(2, leader=1),
                                controller_urls={1: LEADER_URL}) as follower:
            answer = await follower.post("create-topics", TOPIC,
                                         headers={FORWARDED_HEADER: "3"})
            assert answer.status_code == 421
            assert answer.json()["error_code"] == Errors.NOT_CONTROLLER.code
            assert "already forwarded" in answer.json()["message"]

    asyncio.run(scenario())


def test_a_follower_that_knows_no_leader_answers_503_not_controller() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            node.raft.set_leader(False)
            started = time.monotonic()
            answer = await node.post("create-topics", TOPIC)
            assert answer.status_code == 503
            assert answer.json()["error_code"] == Errors.NOT_CONTROLLER.code
            assert "no leader" in answer.json()["message"]
            assert time.monotonic() - started >= forwarding.LEADER_WAIT
            assert node.context.controller.image.offset == -1

    asyncio.run(scenario())


def test_a_leader_without_a_url_is_503() -> None:
    async def scenario() -> None:
        async with running_node(FollowerRaft(2, leader=7), controller_urls={1: LEADER_URL}
                                ) as follower:
            answer = await follower.post("create-topics", TOPIC)
            assert answer.status_code == 503
            assert answer.json()["error_code"] == Errors.NOT_CONTROLLER.code

    asyncio.run(scenario())


def test_an_unreachable_leader_is_503_asking_for_a_retry_with_the_same_key() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    async def scenario() -> None:
        unreachable = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
        async with running_node(FollowerRaft(2, leader=1), controller_urls={1: LEADER_URL},
                                forward_client=unreachable) as follower:
            answer = await follower.post("create-topics", TOPIC)
            assert answer.status_code == 503
            body = answer.json()
            assert body["error_code"] == Errors.NOT_CONTROLLER.code
            assert "ConnectError" in body["message"] and "Idempotency-Key" in body["message"]

    asyncio.run(scenario())


def test_a_forward_to_a_leader_that_an_election_replaced_is_given_up_at_once() -> None:
    """A cut-off leader answers nothing until the request timeout; once the follower knows
    another leader, it stops waiting and asks for a retry, which then reaches the new one."""
    asked: list[str] = []

    async def silent(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        await asyncio.sleep(30)  # the old leader's host is cut off
        return httpx.Response(500)

    async def scenario() -> None:
        stuck = httpx.AsyncClient(transport=httpx.MockTransport(silent))
        raft = FollowerRaft(2, leader=1)
        async with running_node(raft, controller_urls={1: LEADER_URL, 3: LEADER_URL},
                                forward_client=stuck) as follower:
            asyncio.get_running_loop().call_later(0.3, setattr, raft, "known_leader", 3)
            started = time.monotonic()
            answer = await follower.post("create-topics", TOPIC)
            took = time.monotonic() - started
            assert answer.status_code == 503
            body = answer.json()
            assert body["error_code"] == Errors.NOT_CONTROLLER.code
            assert "from node 1 to node 3" in body["message"]
            assert "Idempotency-Key" in body["message"]
            assert 0.25 < took < 2.0
            assert len(asked) == 1

    asyncio.run(scenario())


def test_the_leaders_error_status_passes_through() -> None:
    async def scenario() -> None:
        async with running_node(node_id=1) as leader:
            to_leader = httpx.AsyncClient(transport=httpx.ASGITransport(app=leader.app))
            async with running_node(FollowerRaft(2, leader=1), controller_urls={1: LEADER_URL},
                                    forward_client=to_leader) as follower:
                leader.raft.set_leader(False)  # deposed meanwhile: it must not forward again
                answer = await follower.post("create-topics", TOPIC)
                assert answer.status_code == 421
                assert answer.json()["error_code"] == Errors.NOT_CONTROLLER.code

    asyncio.run(scenario())


def test_a_node_that_becomes_leader_while_waiting_says_retry() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            node.raft.set_leader(False)

            async def elect() -> None:
                await asyncio.sleep(0.05)
                node.raft.set_leader(True)

            answer, _ = await asyncio.gather(node.post("create-topics", TOPIC), elect())
            assert answer.status_code == 503
            assert "just became the leader" in answer.json()["message"]

    asyncio.run(scenario())


class DeposedRaft(LocalRaft):
    """Leads until it proposes; then it hears that node 2 won an election, and its proposal
    fails: a leader deposed in the middle of a write."""

    def __init__(self) -> None:
        super().__init__(1)
        self.new_leader: int | None = None

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        self.new_leader = 2
        self.set_leader(False)
        return super().propose(batches)

    def leader_id(self) -> int | None:
        return self.node_id if self.is_leader() else self.new_leader


def test_a_leader_deposed_during_a_write_forwards_it_to_the_new_leader() -> None:
    async def scenario() -> None:
        async with running_node(LocalRaft(2)) as new_leader:
            await start_brokers(new_leader)
            to_new = httpx.AsyncClient(transport=httpx.ASGITransport(app=new_leader.app))
            async with running_node(DeposedRaft(), controller_urls={2: LEADER_URL},
                                    forward_client=to_new) as deposed:
                assert deposed.context.controller.is_leader()
                answer = await deposed.post("create-topics", TOPIC)
                assert answer.status_code == 200, answer.text
                assert answer.json()["topics"][0]["error_code"] == 0
                assert new_leader.context.controller.image.topics.get_by_name("forwarded")
                assert deposed.context.controller.image.offset == -1

    asyncio.run(scenario())


def test_a_path_with_any_character_is_forwarded_encoded() -> None:
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    async def scenario() -> None:
        async with running_node(node_id=1) as leader:
            to_leader = httpx.AsyncClient(transport=httpx.ASGITransport(app=leader.app),
                                          event_hooks={"request": [record]})
            async with running_node(FollowerRaft(2, leader=1),
                                    controller_urls={1: LEADER_URL, 2: "http://follower"},
                                    forward_client=to_leader) as follower:
                cluster = follower.context.cluster_id_text
                answer = await follower.http.put(
                    f"/v3/clusters/{cluster}/broker-configs/a%1Ab%2Cc d", json={"value": "1"})
                assert answer.status_code == 400, answer.text
                assert answer.json()["error_name"] == "INVALID_CONFIG"
                assert "a\x1ab,c d" in answer.json()["message"]
                (forwarded,) = seen
                assert forwarded.url.raw_path.endswith(b"/broker-configs/a%1Ab,c%20d")

    asyncio.run(scenario())
