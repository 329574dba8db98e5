"""chunkraft.api.readiness: /readyz and quorum describe say not ready when Raft stops ticking.

The Raft thread's tick is watched with :class:`TickWatch`; here its clock is a fake one, moved
by hand, so a stall is as long as the test says.
"""

from __future__ import annotations

import asyncio
import dataclasses

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from chunkraft.api.readiness import assess_readiness
from chunkraft.controller.raft.entry import MAX_EPOCH
from chunkraft.controller.raft.log import QuorumStatus, TickWatch, VoterStatus
from tests.unit.api.support import V1, FollowerRaft, running_node

ELECTION_TIMEOUT_MAX = 0.5


def leader_status(ticks: TickWatch) -> QuorumStatus:
    return QuorumStatus(
        node_id=1, state="leader", leader_id=1, epoch=3, has_quorum=True, commit_index=10,
        last_applied_index=10, high_watermark=8, voters=(VoterStatus(1, "a", 10, 0, 0, True),),
        failure=None, tick_lag_seconds=ticks.lag(), tick_lag_limit_seconds=ticks.limit)


def test_a_raft_thread_that_has_not_ticked_within_the_election_timeout_is_not_ready() -> None:
    now = [100.0]
    ticks = TickWatch(ELECTION_TIMEOUT_MAX, clock=lambda: now[0])
    now[0] += 0.3
    ticks.tick()
    now[0] += 0.45  # ticking, if slowly: still within the election timeout
    fine = assess_readiness(leader_status(ticks))
    assert fine.ready and fine.reason is None
    assert fine.tick_lag_seconds == pytest.approx(0.45)
    now[0] += 0.1  # 0.55 s without a tick: a follower would have started an election
    stalled = assess_readiness(leader_status(ticks))
    assert not stalled.ready
    assert stalled.reason == ("the Raft thread has not ticked for 0.55 s, more than the "
                              "election timeout (0.50 s)")
    # Everything else still says "leader with a quorum": only the tick lag tells.
    assert stalled.leader_id == 1 and stalled.has_quorum
    ticks.tick()
    assert assess_readiness(leader_status(ticks)).ready


def test_the_first_failing_check_is_the_reason() -> None:
    ticks = TickWatch(ELECTION_TIMEOUT_MAX, clock=lambda: 0.0)
    base = leader_status(ticks)
    cases = [
        (dataclasses.replace(base, failure="entry 7 is corrupt", tick_lag_seconds=9.0),
         "the metadata log stopped applying: entry 7 is corrupt"),
        (dataclasses.replace(base, leader_id=None), "no leader is known"),
        (dataclasses.replace(base, has_quorum=False),
         "not in touch with a majority of the voters"),
        (dataclasses.replace(base, last_applied_index=-91),
         "101 committed Raft entries not applied yet (more than 100)"),
        (dataclasses.replace(base, tick_lag_seconds=None), None),  # no Raft thread (LocalRaft)
    ]
    for status, reason in cases:
        readiness = assess_readiness(status)
        assert readiness.reason == reason
        assert readiness.ready is (reason is None)


async def scrape_value(http: httpx.AsyncClient, name: str) -> float:
    answer = await http.get("/metrics")
    assert answer.status_code == 200, answer.text
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    raise AssertionError(f"{name} is not in /metrics")


class StalledRaft(FollowerRaft):
    """A node whose Raft thread stopped ticking ``lag`` seconds ago, still a leader on paper."""

    def __init__(self, lag: float) -> None:
        super().__init__(1, leader=1)
        self.set_leader(True)
        self.lag = lag

    def status(self) -> QuorumStatus:
        return dataclasses.replace(super().status(), tick_lag_seconds=self.lag,
                                   tick_lag_limit_seconds=ELECTION_TIMEOUT_MAX)


def test_readyz_quorum_describe_and_metrics_show_a_stalled_raft_thread() -> None:
    async def scenario() -> None:
        async with running_node(StalledRaft(2.5)) as node:
            ready = await node.http.get("/readyz")
            assert ready.status_code == 503
            body = ready.json()
            assert body["ready"] is False and body["tick_lag_seconds"] == 2.5
            assert body["reason"].startswith("the Raft thread has not ticked for 2.50 s")
            assert body["leader_id"] == 1 and body["has_quorum"] is True
            quorum = (await node.http.get(f"{V1}/quorum")).json()
            assert quorum["ready"] is False and quorum["not_ready_reason"] == body["reason"]
            assert quorum["tick_lag_seconds"] == 2.5
            assert quorum["tick_lag_limit_seconds"] == ELECTION_TIMEOUT_MAX
            assert await scrape_value(node.http, "chunkraft_raft_tick_lag_seconds") == 2.5
        async with running_node(StalledRaft(0.1)) as node:
            assert (await node.http.get("/readyz")).status_code == 200
            assert (await node.http.get(f"{V1}/quorum")).json()["not_ready_reason"] is None

    asyncio.run(scenario())


def test_a_term_no_epoch_can_hold_is_not_ready() -> None:
    """At term 71776119061217291 (one flipped journal byte) no leader can commit: not ready."""
    ticks = TickWatch(ELECTION_TIMEOUT_MAX)
    ticks.tick()
    at_the_limit = dataclasses.replace(leader_status(ticks), epoch=MAX_EPOCH)
    assert assess_readiness(at_the_limit).ready
    beyond = assess_readiness(dataclasses.replace(leader_status(ticks), epoch=MAX_EPOCH + 1))
    assert not beyond.ready
    assert beyond.reason is not None and str(MAX_EPOCH + 1) in beyond.reason


def test_a_node_that_refuses_to_campaign_at_the_last_epoch_is_not_ready() -> None:
    """At term MAX_EPOCH with no leader heard from, no election can ever succeed: not ready,
    and the reason says why (rather than a bare "no leader is known")."""
    ticks = TickWatch(ELECTION_TIMEOUT_MAX)
    ticks.tick()
    stuck = dataclasses.replace(leader_status(ticks), state="follower", leader_id=None,
                                epoch=MAX_EPOCH, campaign_refused=True)
    readiness = assess_readiness(stuck)
    assert not readiness.ready
    assert readiness.reason == (f"the Raft term is {MAX_EPOCH}, the largest epoch ({MAX_EPOCH}): "
                                "no leader is heard from and this node will not start an "
                                "election past it")
    following = dataclasses.replace(stuck, leader_id=2, campaign_refused=False)
    assert assess_readiness(following).ready  # a leader of term MAX_EPOCH can still commit


def test_a_node_that_learnt_it_is_not_a_voter_says_so_first_and_names_its_voters() -> None:
    ticks = TickWatch(ELECTION_TIMEOUT_MAX, clock=lambda: 100.0)
    status = dataclasses.replace(leader_status(ticks), voters=(
        VoterStatus(3, "c", 10, 0, 0, True), VoterStatus(1, "a", 10, 0, 0, True),
        VoterStatus(-1, "unnamed", 10, 0, 0, True)))
    assert assess_readiness(status).voter_ids == [1, 3]  # an address no id names is left out
    out = assess_readiness(status, "controller 1 is not a voter of the quorum (...)")
    assert not out.ready
    assert out.reason == "controller 1 is not a voter of the quorum (...)"
