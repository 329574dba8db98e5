"""RaftNode at a term no epoch can hold: not the leader, and proposals fail as values.

Once the quorum's term passed int32, every barrier raised ``struct.error`` inside
``propose`` and writes answered HTTP 500. A one-voter node is pushed past MAX_EPOCH here, and
one whose stored term is MAX_EPOCH must never campaign (its candidate term would not fit).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.api.readiness import assess_readiness
from chunkraft.controller.raft.entry import MAX_EPOCH
from chunkraft.controller.raft.log import ProposalError
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.term_vote import TermVote, store_term_vote, term_vote_path
from chunkraft.local.local_cluster import free_ports
from tests.support.raft import batch, topic_record, wait_until


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[RaftNode]:
    (port,) = free_ports(1)
    node = RaftNode(RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=tmp_path,
                                 password="test", cluster_id=uuid.uuid4()))
    try:
        wait_until(node.is_leader, 10, "a one-voter node never became leader")
        yield node
    finally:
        node.close()


def test_a_batch_whose_epoch_cannot_be_encoded_fails_as_a_proposal_error(
    leader: RaftNode
) -> None:
    future = leader.propose([batch([topic_record(0)], epoch=MAX_EPOCH + 1)])
    with pytest.raises(ProposalError, match="EPOCH_OUT_OF_RANGE"):
        future.result(5)


def test_a_leader_past_the_epoch_range_says_it_is_not_the_leader(
    leader: RaftNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leader, "epoch", lambda: MAX_EPOCH)
    assert leader.is_leader()
    monkeypatch.setattr(leader, "epoch", lambda: MAX_EPOCH + 1)
    assert not leader.is_leader()


def test_a_node_whose_stored_term_is_the_last_epoch_refuses_to_campaign_and_is_not_ready(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its next election would need term MAX_EPOCH + 1: it never starts one, logs why once,
    and its quorum status (so /readyz) says not ready, with that reason."""
    (port,) = free_ports(1)
    settings = RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=tmp_path,
                            password="test", cluster_id=uuid.uuid4())
    settings.journal_path.parent.mkdir(parents=True)
    store_term_vote(term_vote_path(settings.journal_path), TermVote(MAX_EPOCH, None))
    caplog.set_level(logging.ERROR)
    node = RaftNode(settings)
    try:
        wait_until(lambda: node.status().campaign_refused, 10,
                   "the node never reported that it refuses to campaign")
        time.sleep(5 * settings.election_timeout_max)  # time for several elections, had it run
        status = node.status()
        assert status.epoch == MAX_EPOCH and status.leader_id is None and not node.is_leader()
        readiness = assess_readiness(status)
        assert not readiness.ready and readiness.reason is not None
        assert "will not start an election" in readiness.reason
        future = node.propose([batch([topic_record(0)])])
        with pytest.raises(ProposalError):
            future.result(5)
    finally:
        node.close()
    assert caplog.text.count("not starting an election") == 1, caplog.text
