"""LocalRaft: the in-memory RaftLog double commits at once and can lose leadership or acks."""

from __future__ import annotations

import pytest

from chunkraft.controller.raft import BatchStatus, ProposalError, RaftLog
from chunkraft.controller.raft.local import LocalRaft
from tests.support.raft import batch, key, topic_record


def test_it_is_a_raft_log() -> None:
    raft: RaftLog = LocalRaft(node_id=3)
    assert raft.node_id == 3
    assert raft.is_leader()
    assert raft.leader_id() == 3


def test_a_proposal_commits_at_once_and_calls_the_apply_listeners() -> None:
    raft = LocalRaft()
    calls: list[int] = []
    raft.add_apply_listener(lambda: calls.append(raft.state_machine.image.offset))
    future = raft.propose([batch([topic_record(0)]), batch([topic_record(1), topic_record(2)])])
    assert future.done()
    outcomes = future.result()
    assert [(o.status, o.base_offset, o.count) for o in outcomes] == [
        (BatchStatus.COMMITTED, 0, 1), (BatchStatus.COMMITTED, 1, 2)]
    assert calls == [2]  # after the entry applied, once per entry
    status = raft.status()
    assert (status.commit_index, status.last_applied_index, status.high_watermark) == (1, 1, 3)
    assert status.state == "leader"
    assert status.has_quorum
    assert status.failure is None


def test_a_follower_refuses_proposals_and_writes_nothing() -> None:
    raft = LocalRaft()
    raft.set_leader(False)
    future = raft.propose([batch([topic_record(0)])])
    with pytest.raises(ProposalError) as error:
        future.result()
    assert error.value.reason == "NOT_LEADER"
    assert raft.state_machine.image.offset == -1
    assert raft.leader_id() is None
    assert raft.status().state == "follower"
    assert not raft.status().has_quorum


def test_fail_next_commits_but_reports_an_unknown_outcome() -> None:
    raft = LocalRaft()
    raft.fail_next(2)
    for n in range(2):
        future = raft.propose([batch([topic_record(n)], key_=key(n))])
        with pytest.raises(ProposalError, match="unknown"):
            future.result()
        outcome = raft.state_machine.outcome_of(key(n))
        assert outcome is not None
        assert outcome.status is BatchStatus.COMMITTED
    assert raft.propose([batch([topic_record(2)])]).result()[0].base_offset == 2


def test_leadership_changes_call_listeners_and_start_a_new_epoch() -> None:
    raft = LocalRaft()
    seen: list[bool] = []
    raft.add_leadership_listener(seen.append)
    assert raft.epoch() == 1
    raft.set_leader(True)  # no change: no call, same epoch
    raft.set_leader(False)
    raft.set_leader(False)
    assert raft.epoch() == 1
    raft.set_leader(True)
    assert raft.epoch() == 2
    raft.close()
    assert seen == [False, True, False]
    assert not raft.is_leader()
    assert raft.status().epoch == 2


def test_a_small_retained_tail_is_passed_to_the_state_machine() -> None:
    raft = LocalRaft(max_retained_bytes=50)
    for n in range(20):
        raft.propose([batch([topic_record(n)])])
    assert raft.state_machine.tail_start_offset > 0
    assert raft.state_machine.read_after(-1, max_records=10, max_bytes=100).snapshot_needed


def test_status_reports_a_state_machine_failure() -> None:
    raft = LocalRaft()
    raft.state_machine.apply_entry(b"not an entry")
    outcomes = raft.propose([batch([topic_record(0)])]).result()
    assert [o.status for o in outcomes] == [BatchStatus.CORRUPT]
    assert raft.status().failure == raft.state_machine.failure
