"""Three RaftNodes in one process on 127.0.0.1: replication, restart from disk, compaction and a
wiped node catching up from the leader's dump; and three controller processes, one of them of
the older message format, replicating with sealed messages between the others. Every wait is
bounded."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from chunkraft.controller.raft import BatchOutcome, BatchStatus, ProposalError, ProposedBatch
from chunkraft.controller.raft.dump import read_dump_header
from chunkraft.controller.raft.durable_journal import DurableJournal
from chunkraft.controller.raft.journal_check import check_dump, check_journal
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.sealed_messages import OLDER_FORMAT_ENV
from chunkraft.controller.raft.term_vote import read_term_vote, term_vote_path
from chunkraft.errors import JournalCorruptError
from chunkraft.local.local_cluster import LocalCluster, free_ports
from tests.integration.conftest import BASE_PROPERTIES, READY_TIMEOUT, stop_cluster
from tests.support.cluster_client import admin_client, new_key, wait_converged
from tests.support.raft import batch, key, topic_record, wait_until

# pysyncobj 0.3.17 leaves files to the garbage collector: MetaStorer.getMeta reads journal.meta
# with open(...).read(), and Serializer.getTransmissionData never closes the dump it streams.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

BATCHES = 200
TIMEOUT = 15.0


class Cluster:
    """Three voters sharing one cluster id; nodes can be stopped, wiped and started again."""

    def __init__(self, root: Path, **options: Any) -> None:
        ports = free_ports(3)
        voters = {node_id: f"127.0.0.1:{port}" for node_id, port in zip((1, 2, 3), ports,
                                                                         strict=True)}
        cluster_id = uuid.uuid4()
        self.settings = {
            node_id: RaftSettings(
                node_id=node_id, voters=voters, data_dir=root / f"node-{node_id}",
                password="integration", cluster_id=cluster_id,
                # A little slower than production: three tick threads share one GIL here.
                election_timeout_min=0.4, election_timeout_max=0.8, **options)
            for node_id in voters
        }
        self.nodes: dict[int, RaftNode] = {}

    def start(self, *node_ids: int) -> None:
        for node_id in node_ids or tuple(self.settings):
            self.nodes[node_id] = RaftNode(self.settings[node_id])

    def stop(self, *node_ids: int) -> None:
        for node_id in node_ids or tuple(self.nodes):
            self.nodes.pop(node_id).close()

    def leader(self) -> RaftNode:
        def one_leader() -> bool:
            leaders = [n for n in self.nodes.values() if n.is_leader()]
            return len(leaders) == 1 and all(
                n.leader_id() == leaders[0].node_id for n in self.nodes.values())

        wait_until(one_leader, TIMEOUT, "the nodes never agreed on one leader")
        return next(n for n in self.nodes.values() if n.is_leader())

    def propose(self, proposed: ProposedBatch, via: RaftNode | None = None) -> BatchOutcome:
        """Commits ``proposed``, retrying with its key while the outcome is unknown."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            node = via or self.leader()
            try:
                (outcome,) = node.propose([proposed]).result(TIMEOUT)
                return outcome
            except ProposalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def wait_for_offset(self, offset: int) -> None:
        wait_until(
            lambda: all(n.state_machine.image.offset == offset for n in self.nodes.values()),
            TIMEOUT,
            f"not every node reached offset {offset}: "
            + str({i: n.state_machine.image.offset for i, n in self.nodes.items()}))

    def hashes(self) -> dict[int, str]:
        return {i: n.state_machine.image.content_hash() for i, n in self.nodes.items()}


ClusterFactory = Callable[..., Cluster]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterFactory]:
    """Makes clusters (RaftSettings options as keywords) and closes their nodes afterwards."""
    made: list[Cluster] = []

    def make(**options: Any) -> Cluster:
        made.append(Cluster(tmp_path, **options))
        return made[-1]

    yield make
    for each in made:
        each.stop()


def commit_topics(cluster: Cluster, first: int, count: int) -> None:
    """Topics first .. first+count-1 at offsets first .. first+count-1, one batch each."""
    for n in range(first, first + count):
        outcome = cluster.propose(batch([topic_record(n)], key_=key(n), expected=n))
        assert outcome.status in (BatchStatus.COMMITTED, BatchStatus.DUPLICATE), outcome
        assert (outcome.base_offset, outcome.count) == (n, 1)


def test_three_nodes_replicate_and_restart_from_disk(cluster: ClusterFactory) -> None:
    nodes = cluster()
    nodes.start()
    leader = nodes.leader()
    commit_topics(nodes, 0, BATCHES)
    nodes.wait_for_offset(BATCHES - 1)
    hashes = nodes.hashes()
    assert len(set(hashes.values())) == 1, hashes
    expected_image = leader.state_machine.image
    assert len(expected_image.topics) == BATCHES

    # A follower never forwards a proposal to the leader (pysyncobj would: a forwarded barrier
    # once landed inside the leader's chain of batches): it fails NOT_LEADER and
    # nothing is appended anywhere. Proposals go to the leader, as the HTTP layer sends them.
    follower = next(n for n in nodes.nodes.values() if n is not leader)
    refused = batch([topic_record(BATCHES)], key_=key(BATCHES), expected=BATCHES)
    with pytest.raises(ProposalError, match="NOT_LEADER"):
        follower.propose([refused]).result(TIMEOUT)
    time.sleep(0.5)
    assert {n.state_machine.image.offset for n in nodes.nodes.values()} == {BATCHES - 1}
    outcome = nodes.propose(refused)
    assert (outcome.status, outcome.base_offset) == (BatchStatus.COMMITTED, BATCHES)
    nodes.wait_for_offset(BATCHES)
    assert follower.state_machine.image.offset == BATCHES

    status = leader.status()
    assert status.state == "leader"
    assert status.has_quorum
    assert status.leader_id == leader.node_id
    assert status.high_watermark == BATCHES + 1
    assert all(v.connected for v in status.voters)
    assert {v.node_id for v in status.voters} == {1, 2, 3}
    final_hash = leader.state_machine.image.content_hash()

    nodes.stop()
    for settings in nodes.settings.values():
        assert check_journal(settings.journal_path).chunkraft_entries == BATCHES + 1
    nodes.start()
    nodes.wait_for_offset(BATCHES)
    assert set(nodes.hashes().values()) == {final_hash}
    for node in nodes.nodes.values():
        remembered = node.state_machine.outcome_of(key(7))
        assert remembered is not None
        assert remembered.base_offset == 7
    # The restarted cluster elects a leader and goes on where it stopped.
    commit_topics(nodes, BATCHES + 1, 3)
    nodes.wait_for_offset(BATCHES + 3)
    assert len(set(nodes.hashes().values())) == 1


def test_compaction_and_a_wiped_node_catching_up_from_the_leaders_dump(
    cluster: ClusterFactory,
) -> None:
    nodes = cluster(log_compaction_min_entries=20)
    nodes.start()
    commit_topics(nodes, 0, 60)
    leader = nodes.leader()
    leader.force_compaction()
    wait_until(leader.settings.dump_path.exists, TIMEOUT, "the leader wrote no dump")
    check_dump(leader.settings.dump_path)
    wait_until(lambda: check_journal(leader.settings.journal_path).first_index > 1, TIMEOUT,
               "the leader's journal was not compacted")
    header = read_dump_header(leader.settings.dump_path)
    assert 0 < header.offset <= 59
    assert header.cluster_id == leader.settings.cluster_id

    victim = next(node_id for node_id in nodes.nodes if node_id != leader.node_id)
    nodes.stop(victim)
    shutil.rmtree(nodes.settings[victim].data_dir)
    commit_topics(nodes, 60, 40)  # more entries, more compactions: the log the wiped node
    leader.force_compaction()     # needs from offset 0 is long gone
    wait_until(lambda: check_journal(leader.settings.journal_path).first_index > 60, TIMEOUT,
               "the leader's journal was not compacted past the first 60 entries")

    nodes.start(victim)
    fresh = nodes.nodes[victim]
    nodes.wait_for_offset(99)
    assert len(set(nodes.hashes().values())) == 1
    # Restored from a dump (its tail starts after the dump's image), not replayed from 0 ...
    assert fresh.state_machine.tail_start_offset > 0
    assert fresh.settings.dump_path.exists()
    # ... which carried the idempotency table along.
    early = fresh.state_machine.outcome_of(key(3))
    assert early is not None
    assert early.base_offset == 3
    # And it takes part in what comes next.
    commit_topics(nodes, 100, 5)
    nodes.wait_for_offset(104)
    assert len(set(nodes.hashes().values())) == 1


def test_settings_paths_live_under_the_data_dir(tmp_path: Path) -> None:
    settings = RaftSettings(node_id=1, voters={1: "127.0.0.1:1"}, data_dir=tmp_path,
                            password="x", cluster_id=uuid.uuid4())
    assert settings.address == "127.0.0.1:1"
    assert settings.journal_path == tmp_path / "raft" / "journal"
    assert replace(settings, data_dir=tmp_path / "b").dump_path == tmp_path / "b" / "raft" / "dump"


def test_a_node_whose_state_machine_failed_keeps_its_journal_and_refuses_to_restart(
    cluster: ClusterFactory, caplog: pytest.LogCaptureFixture,
) -> None:
    """A dump would claim the entries after the corrupt one; compacting them away would let the
    node restart silently behind. It must instead keep them and refuse to start on them."""
    nodes = cluster()
    nodes.settings = {1: replace(nodes.settings[1], voters={1: nodes.settings[1].address})}
    nodes.start()
    node = nodes.leader()
    commit_topics(nodes, 0, 3)
    # Only a torn or flipped journal makes a corrupt entry; inject one through the entry point.
    node._entry_point.commit_batches(b"not a chunkraft entry")
    wait_until(lambda: node.state_machine.failure is not None, TIMEOUT, "no failure")
    for n in range(3, 6):
        outcome = nodes.propose(batch([topic_record(n)], key_=key(n)))
        assert outcome.status is BatchStatus.CORRUPT
    node.force_compaction()
    wait_until(lambda: "Failed to store full dump" in caplog.text, TIMEOUT,
               "pysyncobj never tried (and failed) to write a dump")
    dump = node.settings.dump_path
    assert not dump.exists() or dump.stat().st_size == 0  # at most pysyncobj's placeholder
    nodes.stop()
    with pytest.raises(JournalCorruptError, match="Raft index"):
        nodes.start()


def test_followers_acknowledge_only_synced_entries_and_term_and_vote_survive_a_restart(
        cluster: ClusterFactory) -> None:
    nodes = cluster()
    nodes.start()
    leader = nodes.leader()
    commit_topics(nodes, 0, 30)
    nodes.wait_for_offset(29)
    for node in nodes.nodes.values():
        durable = node._syncobj._SyncObj__raftLog._inner  # ConflictOnlyJournal(DurableJournal)
        assert isinstance(durable, DurableJournal)
        assert durable.syncs > 0, f"node {node.node_id} never fdatasynced its journal"
        if node is not leader:
            # Every AppendEntries with entries left this follower's journal unsynced: its
            # acknowledgement waited for the next tick's fdatasync.
            assert node._syncobj.acks_held >= 30, (node.node_id, node._syncobj.acks_held)
        stored = read_term_vote(term_vote_path(node.settings.journal_path))
        assert stored is not None and stored.term == leader.epoch()
    epoch = leader.epoch()
    nodes.stop()
    nodes.start()
    assert all(n.epoch() >= epoch for n in nodes.nodes.values())
    nodes.leader()
    commit_topics(nodes, 30, 5)


def test_a_node_refuses_to_start_on_a_corrupt_term_and_vote(cluster: ClusterFactory) -> None:
    nodes = cluster()
    nodes.start()
    nodes.leader()
    commit_topics(nodes, 0, 3)
    nodes.stop()
    term_file = term_vote_path(nodes.settings[2].journal_path)
    data = bytearray(term_file.read_bytes())
    data[len(data) - 1] ^= 0x01
    term_file.write_bytes(bytes(data))
    with pytest.raises(JournalCorruptError, match="term/vote file fails its CRC"):
        nodes.start(2)


def transport_metrics(cluster: LocalCluster, node_id: int) -> dict[str, dict[str, float]]:
    """The node's Raft messages by ``(direction, format)`` and closed connections by reason."""
    answer = httpx.get(f"{cluster.nodes[node_id].url}/metrics", headers=cluster.headers,
                       timeout=5.0, verify=cluster.verify)
    assert answer.status_code == 200, answer.text
    found: dict[str, dict[str, float]] = {"messages": {}, "closed": {}}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == "chunkraft_raft_transport_messages_total":
                label = f"{sample.labels['direction']} {sample.labels['format']}"
                found["messages"][label] = sample.value
            elif sample.name == "chunkraft_raft_transport_closed_connections_total":
                found["closed"][sample.labels["reason"]] = sample.value
    return found


def test_peers_seal_their_messages_and_a_node_of_the_older_format_still_replicates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Controllers 1 and 2 are this version; 3 runs with OLDER_FORMAT_ENV, as a controller from
    before sealing: it never offers and cannot read a sealed message (one would close its
    connection as undecryptable). 1 and 2 elect a leader before 3 starts, so the leader is a
    sealing node and replicates sealed to the other, in Fernet to 3."""
    cluster = LocalCluster(tmp_path / "quorum", extra_properties=BASE_PROPERTIES)
    try:
        cluster.prepare()
        cluster.start(1)
        cluster.start(2)
        leader = cluster.wait_ready(timeout=READY_TIMEOUT)
        assert leader in (1, 2)
        # spawn_node copies os.environ: only controller 3 (and its Raft process) gets the hook.
        monkeypatch.setenv(OLDER_FORMAT_ENV, "1")
        cluster.start(3)
        monkeypatch.delenv(OLDER_FORMAT_ENV)
        assert cluster.wait_ready(timeout=READY_TIMEOUT) == leader
        with admin_client(cluster, deadline=READY_TIMEOUT) as client:
            client.ensure_unfenced([1, 2, 3], cluster.cluster_id)
            for n in range(20):
                outcome = client.create_topics([(f"sealed-{n}", 1, 3)], key=new_key())
                assert outcome.acknowledged and outcome.body is not None, outcome.describe()
                assert not any(t["error_code"] for t in outcome.body["topics"]), outcome.body
        converged = wait_converged(cluster, [1, 2, 3], timeout=READY_TIMEOUT)
        assert converged.offset >= 20
        metrics = {node_id: transport_metrics(cluster, node_id) for node_id in (1, 2, 3)}
        print(f"leader {leader}; messages by node: "
              f"{ {node_id: m['messages'] for node_id, m in metrics.items()} }")
        old = metrics[3]["messages"]
        for node_id in (1, 2):
            sealing = metrics[node_id]["messages"]
            # Sealed both ways between 1 and 2: AppendEntries one way, acknowledgements back.
            assert sealing["sent sealed"] >= 20 and sealing["received sealed"] >= 20, metrics
            # An offer follows a side's first send on a connection: the leader's go to both,
            # a follower's only to nodes it sent something (the leader, or one it dialled).
            assert sealing["sent offer"] >= (2 if node_id == leader else 1), metrics
            assert sealing["received offer"] >= 1, metrics
        # The leader replicates to 3 in Fernet (and sealed to the other one, above).
        assert metrics[leader]["messages"]["sent fernet"] >= 20, metrics
        # 3 replicated from Fernet alone; it got the leader's offer (handed on to pysyncobj,
        # which ignored them) and never offered, sealed nor was sent a sealed message.
        assert old["sent sealed"] == old["received sealed"] == old["sent offer"] == 0, old
        assert old["received offer"] >= 1 and old["received fernet"] >= 20, old
        assert all(m["closed"] == {} for m in metrics.values()), metrics
    finally:
        stop_cluster(cluster)
