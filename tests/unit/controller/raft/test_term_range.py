"""term_range and DurableSyncObj's message check: a term no epoch can hold is never adopted.

A term of 71776119061217291 (one flipped journal byte) reached the whole quorum in
one election. Every Raft message pysyncobj 0.3.17 sends is checked here, field by field, with
terms just inside and just outside 0..MAX_EPOCH, and the SyncObj subclass is driven without its
__init__ (no sockets, no tick thread) to show a refused message never reaches pysyncobj.
"""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pysyncobj import SyncObj

from chunkraft.controller.raft.durable_syncobj import DurableSyncObj
from chunkraft.controller.raft.entry import MAX_EPOCH
from chunkraft.controller.raft.pre_vote import PreVote
from chunkraft.controller.raft.term_range import out_of_range_term, term_in_range

FLIPPED_BYTE_TERM = 71776119061217291


def messages(term: int) -> list[dict[str, Any]]:
    """One of each pysyncobj message that holds a term, with ``term`` in one term field each."""
    return [
        {"type": "request_vote", "term": term, "last_log_index": 5, "last_log_term": 1},
        {"type": "request_vote", "term": 2, "last_log_index": 5, "last_log_term": term},
        {"type": "response_vote", "term": term},
        {"type": "append_entries", "term": term, "commit_index": 3, "prevLogIdx": 4,
         "prevLogTerm": 1, "entries": []},
        {"type": "append_entries", "term": 2, "commit_index": 3, "prevLogIdx": 4,
         "prevLogTerm": term, "entries": []},
        {"type": "append_entries", "term": 2, "commit_index": 3, "prevLogIdx": 4,
         "prevLogTerm": 1, "entries": [(b"x", 5, 2), (b"y", 6, term)]},
        {"type": "apply_command_response", "request_id": 1, "log_idx": 5, "log_term": term},
        {"type": "timeout_now", "term": term},
    ]


@given(st.integers(0, MAX_EPOCH))
def test_every_term_an_epoch_can_hold_passes(term: int) -> None:
    assert term_in_range(term)
    for message in messages(term):
        assert out_of_range_term(message) is None


@given(st.one_of(st.integers(MAX_EPOCH + 1, 2**64), st.integers(max_value=-1),
                 st.just(FLIPPED_BYTE_TERM), st.just(MAX_EPOCH + 1)))
def test_every_term_field_beyond_an_epoch_is_refused(term: int) -> None:
    for message in messages(term):
        why = out_of_range_term(message)
        assert why is not None and str(term) in why, message


@pytest.mark.parametrize("term", [True, 1.0, "1", None])
def test_a_term_that_is_not_an_int_is_refused(term: object) -> None:
    assert out_of_range_term({"type": "request_vote", "term": term}) is not None


def test_messages_without_terms_pass() -> None:
    assert out_of_range_term({"type": "next_node_idx", "next_node_idx": 4, "reset": False,
                              "success": True}) is None
    assert out_of_range_term({"type": "apply_command", "command": b"x"}) is None
    assert out_of_range_term(b"not a dict") is None


def node() -> DurableSyncObj:
    """A DurableSyncObj without __init__ (pysyncobj's handler is the ``reached`` fixture)."""
    syncobj = DurableSyncObj.__new__(DurableSyncObj)
    syncobj.messages_refused = 0
    syncobj._refusal_logged_at = float("-inf")
    syncobj._SyncObj__recvTransmission = ""
    # What the pre-vote bookkeeping reads after pysyncobj's handler: a follower of term 0.
    syncobj.pre_vote = PreVote()
    syncobj._SyncObj__votedForNodeId = None
    syncobj._SyncObj__raftLeader = None
    syncobj._SyncObj__raftCurrentTerm = 0
    return syncobj


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []

    def handler(self: Any, node: Any, message: Any) -> None:
        seen.append(message)

    monkeypatch.setattr(SyncObj, "_SyncObj__onMessageReceived", handler)
    return seen


def test_an_oversize_term_never_reaches_pysyncobj(
    reached: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    syncobj = node()
    caplog.set_level(logging.ERROR, "chunkraft.controller.raft.durable_syncobj")
    for message in messages(FLIPPED_BYTE_TERM):
        syncobj._SyncObj__onMessageReceived("peer", message)
    assert reached == []
    assert syncobj.messages_refused == len(messages(FLIPPED_BYTE_TERM))
    # Logged, but once per interval: a peer repeating the term must not flood the log.
    assert len(caplog.records) == 1
    assert str(FLIPPED_BYTE_TERM) in caplog.text and "never adopted" in caplog.text
    for message in messages(MAX_EPOCH):
        syncobj._SyncObj__onMessageReceived("peer", message)
    assert reached == messages(MAX_EPOCH)


def test_a_large_entry_sent_in_pieces_is_checked_when_complete(reached: list[Any]) -> None:
    syncobj = node()
    for term, passes in ((7, True), (FLIPPED_BYTE_TERM, False)):
        data = pickle.dumps((b"x" * 100, 9, term))
        syncobj._SyncObj__recvTransmission = data[:50]
        finish = {"type": "append_entries", "term": 7, "commit_index": 3, "prevLogIdx": 8,
                  "prevLogTerm": 7, "transmission": "finish", "data": data[50:]}
        syncobj._SyncObj__onMessageReceived("peer", finish)
        assert (finish in reached) is passes
