"""RaftNode's fail-stop: a leader that would replace an applied entry ends the process.

The exit function is replaced so the test process survives; the journal pysyncobj really uses
(ConflictOnlyJournal over DurableJournal) is driven as an AppendEntries from a leader whose
entry conflicts with an applied one would drive it.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import NoReturn

import pytest

from chunkraft.controller.raft import BatchStatus
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.safe_journal import EXIT_APPLIED_TRUNCATION, ConflictOnlyJournal
from chunkraft.local.local_cluster import free_ports
from tests.support.raft import batch, topic_record, wait_until


class _Exited(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def test_a_conflict_with_an_applied_entry_exits_with_its_status_and_keeps_the_journal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (port,) = free_ports(1)
    node = RaftNode(RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=tmp_path,
                                 password="test", cluster_id=uuid.uuid4()))
    try:
        wait_until(node.is_leader, 10, "a one-voter node never became leader")
        (outcome,) = node.propose([batch([topic_record(0)], expected=0)]).result(10)
        assert outcome.status is BatchStatus.COMMITTED
        wait_until(lambda: node.status().last_applied_index >= 3, 10, "not applied")
    finally:
        node.close()  # the tick thread stops: the journal is ours to drive now
    journal = node._syncobj._SyncObj__raftLog
    assert isinstance(journal, ConflictOnlyJournal)

    def exit_(status: int) -> NoReturn:
        raise _Exited(status)

    node._exit = exit_
    entries = [journal[i] for i in range(len(journal))]
    _command, index, term = entries[1]
    assert index <= node.status().last_applied_index
    caplog.set_level(logging.CRITICAL)
    journal.deleteEntriesFrom(1)
    with pytest.raises(_Exited) as exited:
        journal.add(b"\x01", index, term + 2**40)
    assert exited.value.status == EXIT_APPLIED_TRUNCATION
    assert [journal[i] for i in range(len(journal))] == entries
    assert f"FAIL-STOP: the leader's log conflicts with Raft index {index}" in caplog.text
    assert str(tmp_path) in caplog.text
