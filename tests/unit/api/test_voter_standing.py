"""VoterStanding: a node learns from the others' /readyz that it is not a voter, and forgets it
the moment it is ready again."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from chunkraft.api.voter_standing import UNREADY_SECONDS, VoterStanding


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ready(voters: list[int], leader: int | None = 2, ready: bool = True) -> dict[str, Any]:
    return {"ready": ready, "leader_id": leader, "voter_ids": voters}


def test_a_ready_node_never_asks_and_is_a_voter() -> None:
    clock = Clock()
    standing = VoterStanding(1, clock)
    clock.now += 60
    assert standing.observe(True) is False
    assert standing.refusal() is None


def test_a_node_asks_only_after_it_has_not_been_ready_for_a_while() -> None:
    clock = Clock()
    standing = VoterStanding(1, clock)
    assert standing.observe(False) is False  # an election is under way, perhaps
    clock.now += UNREADY_SECONDS - 0.1
    assert standing.observe(False) is False
    clock.now += 0.2
    assert standing.observe(False) is True
    assert standing.observe(True) is False  # ready again: the count starts afresh
    clock.now += UNREADY_SECONDS - 0.1
    assert standing.observe(False) is False


def test_a_ready_controller_naming_other_voters_makes_it_refuse_until_it_is_ready() -> None:
    clock = Clock()
    standing = VoterStanding(1, clock)
    assert standing.judge(3, _ready([3, 2])) is True
    refusal = standing.refusal()
    assert refusal is not None
    assert refusal.startswith("controller 1 is not a voter of the quorum (controller 3 names "
                              "the voters 2, 3)")
    assert standing.observe(True) is False  # added back: it hears from the leader
    assert standing.refusal() is None


def test_answers_that_prove_nothing_change_nothing() -> None:
    standing = VoterStanding(1, Clock())
    for answer in (_ready([2, 3], ready=False), _ready([2, 3], leader=None), _ready([]),
                   {"ready": True, "leader_id": 2, "voter_ids": "2,3"},
                   {"ready": True, "leader_id": 2}, _ready([1, 2, 3])):
        assert standing.judge(2, answer) is False, answer
    assert standing.refusal() is None
    standing.judge(2, _ready([2, 3]))
    standing.judge(3, _ready([1, 2, 3]))  # a ready voter that counts it again
    assert standing.refusal() is None


def test_the_probe_skips_silent_and_unready_controllers_and_takes_a_ready_ones_word() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.host)
        if request.url.host == "two":
            raise httpx.ConnectError("refused", request=request)
        if request.url.host == "three":
            return httpx.Response(503, json=_ready([1, 3, 4], ready=False))
        return httpx.Response(200, json=_ready([3, 4, 5], leader=4))

    async def scenario() -> VoterStanding:
        standing = VoterStanding(1, Clock())
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            await standing.probe(client, {1: "http://one", 2: "http://two",
                                          3: "http://three", 4: "http://four",
                                          5: "http://five"})
        return standing

    standing = asyncio.run(scenario())
    assert asked == ["two", "three", "four"]  # never itself; stops at the first ready one
    assert standing.excluded == (4, (3, 4, 5))
