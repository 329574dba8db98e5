"""A crash between a new dump and pysyncobj's compaction of the journal loses nothing.

pysyncobj compacts its journal one tick after the dump thread renamed the new dump into place.
A crash in between leaves a dump at index D and a journal that starts before D and goes on
past it. pysyncobj keeps a journal after loading a dump only if the journal starts with the
dump's last two entries; otherwise it clears it to those two, so every entry after D was gone
from the node (acknowledged ones included). The node now compacts the journal to the dump
first, as pysyncobj would have a tick later.

The gap is made by never reporting the dump's success to pysyncobj (so it never compacts),
which is what a crash within that tick looks like on disk.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pysyncobj import SERIALIZER_STATE

from chunkraft.controller.raft import BatchStatus
from chunkraft.controller.raft.dump import read_dump_header
from chunkraft.controller.raft.journal_check import check_journal
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.local.local_cluster import free_ports
from tests.support.raft import batch, topic_record, wait_until

# pysyncobj reads journal.meta with an open() it never closes.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _node(data_dir: Path, cluster_id: uuid.UUID) -> RaftNode:
    (port,) = free_ports(1)
    return RaftNode(RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=data_dir,
                                 password="test", cluster_id=cluster_id))


def _commit_topics(node: RaftNode, numbers: range) -> None:
    for n in numbers:
        offset = node.state_machine.image.offset + 1
        (outcome,) = node.propose([batch([topic_record(n)], expected=offset)]).result(10)
        assert outcome.status is BatchStatus.COMMITTED, outcome


def test_entries_after_a_dump_that_pysyncobj_had_not_compacted_to_survive_a_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster_id = uuid.uuid4()
    with monkeypatch.context() as patch:
        # The dump is written and renamed into place, but pysyncobj never hears it succeeded
        # (as after a crash between the two), so it never compacts its journal.
        real_dump_state = RaftNode._dump_state

        def dump_state_never_done(self: RaftNode) -> int:
            status = real_dump_state(self)
            if status == SERIALIZER_STATE.SUCCESS:
                return int(SERIALIZER_STATE.SERIALIZING)
            return status

        patch.setattr(RaftNode, "_dump_state", dump_state_never_done)
        node = _node(tmp_path, cluster_id)
        try:
            wait_until(node.is_leader, 10, "a one-voter node never became leader")
            _commit_topics(node, range(0, 5))
            node._syncobj.forceLogCompaction()
            wait_until(lambda: node.dumps_written == 1, 10, "no dump written")
            _commit_topics(node, range(5, 10))  # acknowledged: synced after the dump
            before = node.state_machine.image
        finally:
            node.close()
    dump = read_dump_header(tmp_path / "raft" / "dump")
    journal = check_journal(tmp_path / "raft" / "journal")
    assert journal.first_index < dump.last_entry[1] < journal.last_index, (journal, dump)

    restarted = _node(tmp_path, cluster_id)
    try:
        wait_until(restarted.is_leader, 10, "the restarted node never became leader")
        wait_until(lambda: restarted.state_machine.image.offset >= before.offset, 10,
                   f"the restarted node stopped at offset {restarted.state_machine.image.offset}"
                   f", before {before.offset}: the entries after the dump were dropped")
        image = restarted.state_machine.image
        assert image.content_hash() == before.content_hash()
    finally:
        restarted.close()
    assert check_journal(tmp_path / "raft" / "journal").first_index == dump.previous_entry[1]
