"""DurableSyncObj never lets pysyncobj forward a proposal to another node: a command queued on a
node that is not the leader fails NOT_LEADER, and a forwarded one ('apply_command') is dropped.

Found by the nemesis campaign: a paused old leader, resumed as a follower, had its
queued leadership barrier forwarded to the new leader, which appended it in the middle of its
own chain of batches; the barrier's record took the offsets a refused batch would have, and the
next batch applied on a state it was not validated against (a chunk vanished)."""

from __future__ import annotations

from typing import Any

import pytest
from pysyncobj import SyncObj
from pysyncobj.fast_queue import FastQueue
from pysyncobj.syncobj import FAIL_REASON

from chunkraft.controller.raft.durable_syncobj import DurableSyncObj
from chunkraft.controller.raft.pre_vote import PreVote


def _node(leader: bool, commands: list[Any]) -> DurableSyncObj:
    node = DurableSyncObj.__new__(DurableSyncObj)
    node.commands_refused = 0
    node.messages_refused = 0
    # What the pre-vote bookkeeping reads after pysyncobj's handler: a follower of term 0.
    node.pre_vote = PreVote()
    node._SyncObj__votedForNodeId = None
    node._SyncObj__raftLeader = None
    node._SyncObj__raftCurrentTerm = 0
    queue: FastQueue = FastQueue(100)
    for command in commands:
        queue.put_nowait(command)
    node._SyncObj__commandsQueue = queue
    node._SyncObj__raftLog = []  # pysyncobj's in-memory journal: nothing to sync
    node._isLeader = lambda: leader  # type: ignore[method-assign]
    return node


def test_a_node_that_is_not_the_leader_fails_what_it_queued_instead_of_forwarding_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    results: list[tuple[Any, int]] = []
    forwarded: list[str] = []
    monkeypatch.setattr(SyncObj, "_checkCommandsToApply",
                        lambda self: forwarded.append("pysyncobj would forward"))
    node = _node(False, [(b"barrier", lambda r, e: results.append((r, e))),
                         (b"batch", lambda r, e: results.append((r, e))),
                         (b"theirs", ("other-node", 7))])   # another node's forwarded command
    node._checkCommandsToApply()
    assert results == [(None, FAIL_REASON.NOT_LEADER)] * 2
    assert forwarded == []                       # pysyncobj's own handling never ran
    assert node.commands_refused == 3
    node._checkCommandsToApply()                 # nothing left: nothing more happens
    assert node.commands_refused == 3


def test_the_leader_appends_its_commands_as_pysyncobj_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    appended: list[str] = []
    monkeypatch.setattr(SyncObj, "_checkCommandsToApply",
                        lambda self: appended.append("appended"))
    node = _node(True, [(b"batch", lambda r, e: None)])
    node._checkCommandsToApply()
    assert appended == ["appended"] and node.commands_refused == 0


def test_a_forwarded_command_is_dropped_before_pysyncobj_sees_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(SyncObj, "_SyncObj__onMessageReceived",
                        lambda self, node, message: seen.append(message))
    node = _node(True, [])
    node._SyncObj__onMessageReceived("follower", {"type": "apply_command", "command": b"x"})
    assert seen == [] and node.commands_refused == 1
    node._SyncObj__onMessageReceived("follower", {"type": "append_entries", "term": 3})
    assert seen == [{"type": "append_entries", "term": 3}]
