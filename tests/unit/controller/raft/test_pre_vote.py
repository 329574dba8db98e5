"""controller/raft/pre_vote and DurableSyncObj's use of it: a node asks before raising the
term, so one that missed the leader for a while does not unseat it, while a dead leader is
still replaced and a leadership transfer still happens.

The cluster tests run three real DurableSyncObj nodes on 127.0.0.1 (pysyncobj's in-memory
journal), ticked by hand in this thread; "pausing" a node is not ticking it, as a stopped or
starved process does not."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pysyncobj.syncobj
import pysyncobj.tcp_connection
import pytest
from pysyncobj import _RAFT_STATE, SyncObjConf

from chunkraft.controller.raft.clock import raft_clock
from chunkraft.controller.raft.durable_syncobj import DurableSyncObj
from chunkraft.controller.raft.pre_vote import (
    PRE_VOTE,
    PRE_VOTE_RESPONSE,
    PreVote,
    grants,
    log_up_to_date,
)
from chunkraft.local.local_cluster import free_ports

# ------------------------------------------------------------------ the rules


def _grants(**changes: object) -> bool:
    asked: dict[str, object] = {
        "term": 5, "last_index": 10, "last_term": 4, "my_term": 4, "my_last_index": 10,
        "my_last_term": 4, "is_leader": False, "leader_recent": False}
    asked.update(changes)
    return grants(**asked)  # type: ignore[arg-type]


def test_a_peer_grants_only_without_a_leader_and_for_an_up_to_date_log() -> None:
    assert _grants()
    assert not _grants(is_leader=True)
    assert not _grants(leader_recent=True)
    assert not _grants(term=4)  # not past the peer's own term
    assert not _grants(last_index=9)  # the same last term, a shorter log
    assert not _grants(last_term=3, last_index=99)  # an older last term
    assert _grants(last_term=5, last_index=1)  # a newer last term wins over length
    assert log_up_to_date(10, 4, 10, 4) and not log_up_to_date(9, 4, 10, 4)


def test_a_round_is_won_by_a_majority_of_grants_for_its_own_term() -> None:
    votes = PreVote()
    assert not votes.start(7, "a", voters=3, now=1.0)
    assert not votes.answer(7, "b", granted=False, voters=3)
    assert not votes.answer(6, "b", granted=True, voters=3)  # an old round's answer
    assert votes.answer(7, "b", granted=True, voters=3) and votes.won()
    assert not votes.answer(7, "c", granted=True, voters=3)  # already won: once
    votes.reset()
    assert not votes.won() and votes.term is None
    assert votes.start(1, "a", voters=1, now=2.0)  # the only voter needs nobody else
    assert votes.rounds == 2


def test_a_round_stands_until_a_leader_a_vote_or_a_new_term_overtakes_it() -> None:
    votes = PreVote()
    votes.start(5, "a", voters=3, now=10.0)
    assert votes.stands(4)
    assert not votes.stands(5)  # the node's term moved to the round's (a vote request came)
    votes.note_contact(10.5)  # a leader heard after the round began
    assert not votes.stands(4)
    votes.reset()
    votes.start(5, "a", voters=3, now=11.0)
    assert votes.stands(4)  # a contact before the round does not overtake it
    assert votes.contact_within(10.6, 0.2) and not votes.contact_within(10.8, 0.2)


# ------------------------------------------------------------------ one node, by hand


class _Sent:
    def __init__(self) -> None:
        self.messages: list[tuple[Any, dict[str, Any]]] = []

    def send(self, node: Any, message: dict[str, Any]) -> bool:
        self.messages.append((node, message))
        return True


def _follower(term: int = 3) -> DurableSyncObj:
    """A DurableSyncObj built by hand (no sockets, no thread): a follower of ``term`` among
    three voters whose election deadline has just passed."""
    node = DurableSyncObj.__new__(DurableSyncObj)
    node.pre_vote_enabled = True
    node.pre_vote = PreVote()
    node._SyncObj__selfNode = type("Me", (), {"id": "me"})()
    node._SyncObj__otherNodes = {"b", "c"}
    node._SyncObj__raftState = _RAFT_STATE.FOLLOWER
    node._SyncObj__raftCurrentTerm = term
    node._SyncObj__raftLeader = "b"
    node._SyncObj__votedForNodeId = None
    node._SyncObj__raftElectionDeadline = raft_clock() - 0.01
    node._SyncObj__transferInProgress = False
    node._SyncObj__conf = SyncObjConf(raftMinTimeout=0.2, raftMaxTimeout=0.5)
    node._SyncObj__transport = _Sent()
    node._SyncObj__connectedToAnyone = lambda: True
    node._SyncObj__generateRaftTimeout = lambda: 0.3
    node._SyncObj__getCurrentLogIndex = lambda: 10
    node._SyncObj__getCurrentLogTerm = lambda: term
    return node


def _grant(node: DurableSyncObj, peer: str, term: int) -> None:
    node._answer_pre_vote(peer, {"type": PRE_VOTE_RESPONSE, "term": term, "granted": True})


def test_a_grant_that_arrives_after_the_leader_was_heard_starts_nothing() -> None:
    node = _follower(term=3)
    node._pre_vote_before_electing()
    assert node.pre_vote.term == 4 and len(node._SyncObj__transport.messages) == 2
    # The leader's AppendEntries comes first (pysyncobj moves the deadline), then a peer's
    # grant that was already on its way: the round was overtaken, the grant counts for nothing.
    node._SyncObj__raftElectionDeadline = raft_clock() + 0.3
    node._note_leader_contact("b", {"type": "append_entries", "term": 3}, None)
    _grant(node, "c", 4)
    assert not node.pre_vote.won() and node._SyncObj__raftElectionDeadline > raft_clock()
    node._pre_vote_before_electing()
    assert node.pre_vote.term is None  # dropped


def test_a_won_round_overtaken_before_the_electing_tick_does_not_elect() -> None:
    node = _follower(term=3)
    node._pre_vote_before_electing()
    _grant(node, "c", 4)
    assert node.pre_vote.won() and node._SyncObj__raftElectionDeadline == 0  # elect next tick
    # Before that tick, a vote request of term 4 (refused: it moves the term, not the deadline).
    node._SyncObj__raftCurrentTerm = 4
    node._pre_vote_before_electing()
    assert not node.pre_vote.won() and node.pre_vote.term is None
    # A whole election timeout starts again instead of pysyncobj electing at term 5 at once.
    assert node._SyncObj__raftElectionDeadline > raft_clock() + 0.2


def test_a_won_round_that_still_stands_lets_pysyncobj_elect() -> None:
    node = _follower(term=3)
    node._pre_vote_before_electing()
    _grant(node, "c", 4)
    node._pre_vote_before_electing()
    assert node.pre_vote.term is None and node._SyncObj__raftElectionDeadline == 0


def _asked(node: DurableSyncObj, term: int) -> bool:
    transport = node._SyncObj__transport
    transport.messages.clear()
    node._answer_pre_vote("a", {"type": PRE_VOTE, "term": term, "last_log_index": 10,
                                "last_log_term": 3})
    ((_to, answer),) = transport.messages
    return bool(answer["granted"])


def test_a_peer_that_heard_the_leader_or_voted_within_the_minimum_timeout_refuses() -> None:
    node = _follower(term=3)
    assert _asked(node, 4)  # nothing heard yet
    node._note_leader_contact("b", {"type": "append_entries", "term": 3}, None)
    assert not _asked(node, 4)
    node.pre_vote.contact_at = raft_clock() - 0.25  # more than the 0.2 s minimum ago
    assert _asked(node, 4)
    node._note_leader_contact("b", {"type": "append_entries", "term": 2}, None)
    assert _asked(node, 4)  # an old term's AppendEntries is not this term's leader
    node._SyncObj__votedForNodeId = "c"  # pysyncobj granted c's vote request just now
    node._note_leader_contact("c", {"type": "request_vote", "term": 3}, None)
    assert not _asked(node, 4)


# ------------------------------------------------------------------ three real nodes

_MIN, _MAX = 0.1, 0.2


class _Trio:
    """Three DurableSyncObj nodes ticked by hand; ``paused`` ones are not ticked."""

    def __init__(self, pre_vote: tuple[bool, bool, bool] = (True, True, True)) -> None:
        ports = free_ports(3)
        addresses = [f"127.0.0.1:{port}" for port in ports]
        conf = SyncObjConf(autoTick=False, raftMinTimeout=_MIN, raftMaxTimeout=_MAX,
                           appendEntriesPeriod=0.02, connectionRetryTime=0.1)
        self.nodes = [DurableSyncObj(address, [a for a in addresses if a != address], conf,
                                     pre_vote=enabled)
                      for address, enabled in zip(addresses, pre_vote, strict=True)]
        self.paused: set[int] = set()
        self.gone: set[int] = set()

    def tick(self, seconds: float) -> None:
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            for position, node in enumerate(self.nodes):
                if position not in self.paused and position not in self.gone:
                    node.doTick(0.0)
            time.sleep(0.002)

    def until(self, condition: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
        ends = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > ends:
                raise AssertionError(f"timed out waiting for {what}")
            self.tick(0.02)

    def leader(self) -> int | None:
        leaders = [i for i, node in enumerate(self.nodes)
                   if i not in self.gone and node._isLeader()]
        return leaders[0] if len(leaders) == 1 else None

    def terms(self) -> list[int]:
        return [node.raftCurrentTerm for i, node in enumerate(self.nodes) if i not in self.gone]

    def close(self) -> None:
        for position, node in enumerate(self.nodes):
            if position not in self.gone:
                node.destroy()


@pytest.fixture
def trio() -> Iterator[_Trio]:
    nodes = _Trio()
    try:
        nodes.until(lambda: nodes.leader() is not None, "a first leader")
        nodes.tick(0.3)  # every follower has heard it
        yield nodes
    finally:
        nodes.close()


def _pause_a_follower(nodes: _Trio, seconds: float) -> tuple[int, int, int]:
    """Leaves one follower unticked for ``seconds``, then ticks all for a second: (leader
    before, its term before, the follower)."""
    leader = nodes.leader()
    assert leader is not None
    term = nodes.nodes[leader].raftCurrentTerm
    follower = next(i for i in range(3) if i != leader)
    nodes.paused = {follower}
    nodes.tick(seconds)
    nodes.paused = set()
    nodes.tick(1.0)
    return leader, term, follower


def test_a_follower_that_missed_the_leader_does_not_unseat_it(trio: _Trio) -> None:
    leader, term, follower = _pause_a_follower(trio, 5 * _MAX)
    assert trio.leader() == leader
    assert trio.terms() == [term] * 3  # nobody raised the term
    assert trio.nodes[follower].pre_vote.rounds >= 1  # it did ask, and was refused


def test_without_pre_vote_the_same_pause_raises_the_term() -> None:
    # The same scenario with pre-vote off on every node: the returning follower campaigns at
    # once and the healthy leader steps down (what 4 of 12 rolling restarts showed).
    nodes = _Trio(pre_vote=(False, False, False))
    try:
        nodes.until(lambda: nodes.leader() is not None, "a first leader")
        nodes.tick(0.3)
        _leader, term, _follower = _pause_a_follower(nodes, 5 * _MAX)
        nodes.until(lambda: nodes.leader() is not None, "a leader again")
        assert max(nodes.terms()) > term
    finally:
        nodes.close()


def test_a_dead_leader_is_still_replaced(trio: _Trio) -> None:
    leader = trio.leader()
    assert leader is not None
    term = trio.nodes[leader].raftCurrentTerm
    trio.nodes[leader].destroy()
    trio.gone = {leader}
    trio.until(lambda: trio.leader() is not None, "a new leader among the two left")
    new = trio.leader()
    assert new is not None and new != leader
    assert trio.nodes[new].raftCurrentTerm > term


def test_a_leadership_transfer_skips_the_pre_vote(trio: _Trio) -> None:
    leader = trio.leader()
    assert leader is not None
    target = next(i for i in range(3) if i != leader)
    trio.nodes[leader].transferLeadership(trio.nodes[target]._SyncObj__selfNode)
    trio.until(lambda: trio.leader() == target, "the transfer's target leading", 5.0)


def test_an_idle_trio_keeps_its_first_leader_when_pysyncobjs_clock_is_not_time_monotonic(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pysyncobj reads CLOCK_MONOTONIC_RAW, which on some machines runs 0.24 s behind
    time.monotonic(): pre-vote that read time.monotonic() saw every fresh election deadline as
    already passed and the idle trio changed leader about twice a second. Here pysyncobj's
    clock is shifted a second behind (more than the longest election timeout): one election,
    then the same leader and term for three seconds of ticks."""
    raw = pysyncobj.syncobj.monotonicTime

    def behind() -> float:
        return float(raw()) - 1.0

    monkeypatch.setattr(pysyncobj.syncobj, "monotonicTime", behind)
    monkeypatch.setattr(pysyncobj.tcp_connection, "monotonicTime", behind)
    nodes = _Trio()
    try:
        nodes.until(lambda: nodes.leader() is not None, "a first leader")
        nodes.tick(0.3)
        leader, terms = nodes.leader(), nodes.terms()
        assert len(set(terms)) == 1
        rounds = sum(node.pre_vote.rounds for node in nodes.nodes)
        nodes.tick(3.0)
        assert nodes.leader() == leader
        assert nodes.terms() == terms
        assert sum(node.pre_vote.rounds for node in nodes.nodes) == rounds  # nobody even asked
    finally:
        nodes.close()
