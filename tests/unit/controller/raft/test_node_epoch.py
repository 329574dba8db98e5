"""RaftNode at a term no epoch can hold: not the leader, and proposals fail as values.

Issue 24: once the quorum's term passed int32, every barrier raised ``struct.error`` inside
``propose`` and writes answered HTTP 500. A one-voter node is pushed past MAX_EPOCH here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.controller.raft.entry import MAX_EPOCH
from chunkraft.controller.raft.log import ProposalError
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.deploy.local_cluster import free_ports
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
