"""DurableSyncObj: a follower's acknowledgement leaves only after its journal's fdatasync, and
the leader syncs its own entries before pysyncobj's commit loop counts them.

The SyncObj is built without its __init__ (no sockets, no tick thread): a scripted journal and
transport record every call in one list, so the order is what the tests assert. The last tests
tick a real one-voter node by hand: at term MAX_EPOCH it must never campaign."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from pysyncobj import SyncObj, SyncObjConf

from chunkraft.controller.raft.clock import raft_clock
from chunkraft.controller.raft.durable_syncobj import DurableSyncObj
from chunkraft.controller.raft.entry import MAX_EPOCH
from chunkraft.controller.raft.pre_vote import PreVote
from chunkraft.local.local_cluster import free_ports


class _Journal:
    """Stands in for ConflictOnlyJournal(DurableJournal(...)): records syncs."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.unsynced = False
        self.entries = [(b"", 1, 1)]

    def add(self, index: int) -> None:
        self.entries.append((b"x", index, 1))
        self.unsynced = True

    def sync(self) -> None:
        if self.unsynced:
            self.events.append(f"fdatasync through {self.entries[-1][1]}")
            self.unsynced = False

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, item: Any) -> Any:
        return self.entries[item]


class _Transport:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def send(self, node: Any, message: dict[str, Any]) -> bool:
        self.events.append(f"send {message['type']} {message['next_node_idx']} to {node}")
        return True


def _node(events: list[str]) -> tuple[DurableSyncObj, _Journal]:
    node = DurableSyncObj.__new__(DurableSyncObj)
    node._held_acks = []
    node.acks_held = 0
    journal = _Journal(events)
    node._SyncObj__raftLog = journal
    node._SyncObj__transport = _Transport(events)
    node._SyncObj__raftCurrentTerm = 1
    node._SyncObj__raftState = 0  # a follower
    node._SyncObj__raftElectionDeadline = raft_clock() + 60
    node._SyncObj__raftLeader = "leader"
    node._SyncObj__selfNode = "self"
    node.campaign_refused = False
    node.pre_vote_enabled = True
    node.pre_vote = PreVote()
    return node, journal


def _ack(node: DurableSyncObj, next_index: int | None = None) -> None:
    # What pysyncobj's append_entries handler calls after appending a message's entries.
    node._SyncObj__sendNextNodeIdx("leader", nextNodeIdx=next_index, success=True)


def test_an_ack_of_unsynced_entries_waits_for_the_sync() -> None:
    events: list[str] = []
    node, journal = _node(events)
    journal.add(2)
    _ack(node, 3)
    assert events == []  # nothing acknowledged while entry 2 is only in the page cache
    node._sync_journal_and_release_acks()
    assert events == ["fdatasync through 2", "send next_node_idx 3 to leader"]
    assert node.acks_held == 1


def test_one_sync_per_tick_covers_every_message_of_the_tick() -> None:
    events: list[str] = []
    node, journal = _node(events)
    for index in (2, 3, 4):
        journal.add(index)
        _ack(node, index + 1)
    node._sync_journal_and_release_acks()
    assert events == ["fdatasync through 4", "send next_node_idx 3 to leader",
                      "send next_node_idx 4 to leader", "send next_node_idx 5 to leader"]


def test_an_ack_with_nothing_unsynced_leaves_at_once_but_never_overtakes_a_held_one() -> None:
    events: list[str] = []
    node, journal = _node(events)
    _ack(node)  # a heartbeat: nothing written, default index taken from the log
    assert events == ["send next_node_idx 2 to leader"]
    journal.add(2)
    _ack(node, 3)
    journal.sync()  # synced by someone else meanwhile: still behind the held ack
    _ack(node, 3)
    assert events[1:] == ["fdatasync through 2"]
    node._sync_journal_and_release_acks()
    assert events[2:] == ["send next_node_idx 3 to leader", "send next_node_idx 3 to leader"]


def test_a_failing_sync_keeps_the_acks_held() -> None:
    events: list[str] = []
    node, journal = _node(events)

    def failing() -> None:
        raise OSError(5, "EIO")

    journal.add(2)
    _ack(node, 3)
    journal.sync = failing  # type: ignore[method-assign]
    with pytest.raises(OSError):
        node._sync_journal_and_release_acks()
    assert events == [] and len(node._held_acks) == 1


def test_every_tick_syncs_before_pysyncobjs_commit_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    node, journal = _node(events)
    monkeypatch.setattr(SyncObj, "_onTick",
                        lambda self, timeToWait=0.0: events.append("pysyncobj tick"))
    journal.add(2)  # the leader's own entry, appended in the previous tick
    node._onTick(0.0)
    assert events == ["fdatasync through 2", "pysyncobj tick"]


def test_a_leader_syncs_the_proposals_it_appended_before_its_tick_waits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader's fdatasync runs while the followers handle the entries it just sent, not
    after their acknowledgements arrive; the next tick's sync then has nothing left to do."""
    events: list[str] = []
    node, journal = _node(events)
    node._SyncObj__raftState = 2  # the leader

    def append_and_send(self: Any) -> None:
        journal.add(2)
        events.append("send append_entries 2")

    monkeypatch.setattr(SyncObj, "_checkCommandsToApply", append_and_send)
    monkeypatch.setattr(SyncObj, "_isLeader", lambda self: True)
    node._checkCommandsToApply()
    assert events == ["send append_entries 2", "fdatasync through 2"]
    monkeypatch.setattr(SyncObj, "_onTick", lambda self, timeToWait=0.0: None)
    node._onTick(0.0)
    assert events == ["send append_entries 2", "fdatasync through 2"]


def test_a_leader_with_nothing_to_propose_does_not_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    node, _journal = _node(events)
    monkeypatch.setattr(SyncObj, "_checkCommandsToApply", lambda self: None)
    monkeypatch.setattr(SyncObj, "_isLeader", lambda self: True)
    node._checkCommandsToApply()
    assert events == []


def test_a_new_leader_syncs_its_no_op_before_its_first_commit_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    node, journal = _node(events)
    monkeypatch.setattr(SyncObj, "_SyncObj__onBecomeLeader", lambda self: journal.add(2))
    node._SyncObj__onBecomeLeader()
    assert events == ["fdatasync through 2"]


# ---------------------------------------------------------------- the last epoch


def _one_voter_at(term: int) -> DurableSyncObj:
    """A one-voter DurableSyncObj ticked by hand (pysyncobj's in-memory journal), at ``term``
    before its first election: alone, it campaigns as soon as its election timeout runs out."""
    (port,) = free_ports(1)
    node = DurableSyncObj(f"127.0.0.1:{port}", [],
                          SyncObjConf(autoTick=False, raftMinTimeout=0.05, raftMaxTimeout=0.1,
                                      appendEntriesPeriod=0.01))
    node._SyncObj__raftCurrentTerm = term
    return node


def _tick_for(node: DurableSyncObj, seconds: float) -> None:
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        node.doTick(0.01)


def test_a_node_at_the_last_epoch_never_campaigns_and_says_so_once(
    caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, "chunkraft.controller.raft.durable_syncobj")
    node = _one_voter_at(MAX_EPOCH)
    try:
        assert not node.campaign_refused  # its election timeout has not run out yet
        _tick_for(node, 0.6)  # six of its longest election timeouts
        assert node.raftCurrentTerm == MAX_EPOCH  # never MAX_EPOCH + 1
        assert not node._isLeader() and node._getLeader() is None
        assert node.campaign_refused
        refusals = [r for r in caplog.records if "not starting an election" in r.getMessage()]
        assert len(refusals) == 1, caplog.text
        assert f"Raft term is {MAX_EPOCH}" in refusals[0].getMessage()
        assert f"would need term {MAX_EPOCH + 1}" in refusals[0].getMessage()
    finally:
        node.destroy()


def test_a_node_just_below_the_last_epoch_may_still_campaign_up_to_it() -> None:
    node = _one_voter_at(MAX_EPOCH - 1)
    try:
        _tick_for(node, 0.5)
        assert node._isLeader() and node.raftCurrentTerm == MAX_EPOCH
        assert not node.campaign_refused  # a leader of term MAX_EPOCH can commit
    finally:
        node.destroy()


def test_a_leaders_message_at_the_last_epoch_clears_the_refusal_until_it_falls_silent() -> None:
    node = _one_voter_at(MAX_EPOCH)
    try:
        _tick_for(node, 0.3)
        assert node.campaign_refused
        # What pysyncobj does on an AppendEntries of term MAX_EPOCH: a fresh election deadline.
        node._SyncObj__raftElectionDeadline = raft_clock() + 0.2
        node.doTick(0.0)
        assert not node.campaign_refused
        _tick_for(node, 0.3)  # the leader falls silent: refused again, still no campaign
        assert node.campaign_refused and node.raftCurrentTerm == MAX_EPOCH
    finally:
        node.destroy()
