"""Recovery with real controller processes: a follower behind the compacted log catches up from
the leader's dump, and a node refuses to start on a corrupt journal, dump or term/vote file (then
re-syncs once its Raft directory is removed)."""

from __future__ import annotations

import pickle
import re
import shutil
import struct
import time
from pathlib import Path

import httpx
import pytest

from chunkraft.controller.raft.checked_journal import journal_records as journal_records_of
from chunkraft.controller.raft.dump import read_dump_header
from chunkraft.controller.raft.journal_check import check_dump, check_journal
from chunkraft.controller.raft.term_vote import read_term_vote, term_vote_path
from chunkraft.errors import JournalCorruptError
from chunkraft.local.local_cluster import LocalCluster
from tests.support.cluster_client import (
    ClusterClient,
    admin_client,
    image_from_snapshot,
    new_key,
    wait_converged,
    wait_leader,
)

CLUSTER_PROPERTIES = {"raft.log.compaction.min.entries": "50"}
"""Compaction every 50 Raft entries (read by the ``module_cluster`` fixture)."""
ENTRY_MAGIC = b"CRE1"


def client_of(cluster: LocalCluster) -> ClusterClient:
    """A client of ``cluster`` that asks the leader first (no forwarding hop), with broker 1
    registered and unfenced to place topics on."""
    client = admin_client(cluster, start_at=list(cluster.nodes).index(wait_leader(cluster)))
    client.ensure_unfenced([1], cluster.cluster_id)
    return client


def create_topics_one_by_one(client: ClusterClient, prefix: str, count: int) -> None:
    """``count`` acknowledged writes, one Raft entry each (one request at a time)."""
    for i in range(count):
        outcome = client.create_topics([(f"{prefix}-{i}", 1, 1)], key=new_key())
        assert outcome.acknowledged, outcome.describe()
        assert outcome.body is not None and outcome.body["topics"][0]["error_code"] == 0, \
            outcome.describe()


def log_size(cluster: LocalCluster, node_id: int) -> int:
    path = cluster.nodes[node_id].log_path
    return path.stat().st_size if path.exists() else 0


def log_since(cluster: LocalCluster, node_id: int, start: int) -> str:
    return cluster.nodes[node_id].log_path.read_bytes()[start:].decode("utf-8", "replace")


def raft_dir(cluster: LocalCluster, node_id: int) -> Path:
    return cluster.nodes[node_id].data_dir / "raft"


def a_follower(cluster: LocalCluster) -> tuple[int, int]:
    leader = wait_leader(cluster)
    return leader, next(n for n in cluster.nodes if n != leader)


# ------------------------------------------------------------------ compaction catch-up


def test_stopped_follower_behind_compaction_catches_up_from_the_dump(
        quorum: LocalCluster) -> None:
    cluster = quorum
    with client_of(cluster) as client:
        create_topics_one_by_one(client, "before", 5)
        before = wait_converged(cluster, list(cluster.nodes))
        leader, follower = a_follower(cluster)
        cluster.stop(follower)

        leader_log_start = log_size(cluster, leader)
        create_topics_one_by_one(client, "while-stopped", 200)  # ~4 compactions of 50 entries
        leader = wait_leader(cluster)
        dump = raft_dir(cluster, leader) / "dump"
        assert dump.exists(), f"no Raft dump at {dump} after 200 entries"
        assert read_dump_header(dump).offset > before.offset
        dumps_written = log_since(cluster, leader, leader_log_start).count("Raft dump written")
        assert dumps_written >= 3, f"the leader compacted {dumps_written} times, expected >= 3"
        ahead = wait_converged(cluster, [n for n in cluster.nodes if n != follower])

        follower_log_start = log_size(cluster, follower)
        cluster.start(follower)
        caught_up = wait_converged(cluster, list(cluster.nodes), timeout=60,
                                   min_offset=ahead.offset)
        assert caught_up.image_hash == ahead.image_hash
        assert caught_up.statuses[follower]["topics"] == before.statuses[follower]["topics"] + 200
        # Its own journal ends before the leader's oldest entry: it must have loaded a dump the
        # leader wrote while it was away (its own dumps are all from before it stopped).
        loaded = [int(offset) for offset in re.findall(
            r"Raft dump loaded at offset (-?\d+)", log_since(cluster, follower,
                                                           follower_log_start))]
        assert any(offset > before.offset for offset in loaded), (
            f"the follower loaded dumps at offsets {loaded}, none from after it stopped at "
            f"{before.offset}")

        # Its metadata log now starts after the dump: a subscriber from the start is sent to
        # the snapshot (DESIGN.md section 7), which replays to the same image.
        url = cluster.nodes[follower].url
        page = httpx.get(f"{url}/controller/v1/metadata-log", params={"after": -1},
                         timeout=10, headers=cluster.headers).json()
        assert page["snapshot_needed"] is True and page["batches"] == [], page
        snapshot = httpx.get(f"{url}/controller/v1/snapshot", timeout=10,
                             headers=cluster.headers)
        assert snapshot.status_code == 200, snapshot.text
        assert int(snapshot.headers["X-Snapshot-End-Offset"]) == caught_up.offset + 1
        image = image_from_snapshot(snapshot.content, caught_up.offset)
        assert image.content_hash() == caught_up.image_hash


# ------------------------------------------------------------------ corruption


def journal_records(data: bytes) -> list[tuple[int, int, bytes]]:
    """(position of the command, Raft index, command) of every record of a Raft journal."""
    # Both formats: u32 size | u64 index | u64 term | command | u32 trailer (checked_journal.py).
    return [(r.position + 20, r.index, r.command) for r in journal_records_of(data, "journal")]


def flip_inside_an_entry(journal: Path) -> tuple[int, int, int]:
    """Flips one bit of a record's bytes inside the last chunkraft entry of ``journal`` (an
    ASCII byte, so the pickle around it still reads); returns (file position, Raft index, the
    byte of the record that holds it)."""
    data = bytearray(journal.read_bytes())
    for command_at, index, command in reversed(journal_records(bytes(data))):
        if ENTRY_MAGIC not in command or command[:1] != b"\x00":
            continue
        _method, (payload,) = pickle.loads(command[1:])
        assert payload[:4] == ENTRY_MAGIC
        # In the batch body, past the entry and batch headers (magic, count, length, CRC) and
        # the body's own header, so only the batch CRC can notice (a record or the response).
        for k in range(len(payload) - 8, 40, -1):
            if payload[k] < 0x7F:
                # pysyncobj pickles bytes as latin-1 text stored as UTF-8.
                where = (command_at + command.index(ENTRY_MAGIC)
                         + len(payload[:k].decode("latin-1").encode("utf-8")))
                assert data[where] == payload[k]
                data[where] ^= 0x01
                journal.write_bytes(bytes(data))
                return where, index, command_at - 20
    raise AssertionError(f"no chunkraft entry with a record byte to flip in {journal}")


def wait_refused_start(cluster: LocalCluster, node_id: int, expected_hash: str,
                       timeout: float = 30.0) -> int:
    """Waits for the started node's process to exit; fails if it ever answers the quorum
    status (it must not serve any image). Returns the exit status."""
    node = cluster.nodes[node_id]
    assert node.process is not None
    served: list[object] = []
    ends = time.monotonic() + timeout
    while node.process.poll() is None and time.monotonic() < ends:
        status = cluster.status(node_id, timeout=0.5)
        if status is not None:
            served.append({k: status.get(k) for k in ("metadata_offset", "image_hash",
                                                      "failure")})
        time.sleep(0.1)
    assert node.process.poll() is not None, f"node {node_id} still runs after {timeout} s"
    assert not served, (f"node {node_id} served requests on a corrupt Raft directory "
                        f"(the good image's hash is {expected_hash}): {served[:3]}")
    return int(node.process.returncode)


def restore_and_resync(cluster: LocalCluster, node_id: int, min_offset: int,
                       image_hash: str) -> None:
    shutil.rmtree(raft_dir(cluster, node_id))
    cluster.start(node_id)
    converged = wait_converged(cluster, list(cluster.nodes), timeout=60, min_offset=min_offset)
    assert converged.image_hash == image_hash


def test_flipped_journal_byte_stops_the_node_and_a_removed_raft_dir_resyncs(
        quorum: LocalCluster) -> None:
    cluster = quorum
    with client_of(cluster) as client:
        create_topics_one_by_one(client, "journal", 60)  # a compaction, then entries after it
        good = wait_converged(cluster, list(cluster.nodes))
        _leader, victim = a_follower(cluster)
        cluster.stop(victim)
        journal = raft_dir(cluster, victim) / "journal"
        assert check_journal(journal).chunkraft_entries > 0
        position, index, record_at = flip_inside_an_entry(journal)
        with pytest.raises(JournalCorruptError, match="CRC"):
            check_journal(journal)

        log_start = log_size(cluster, victim)
        cluster.start(victim)
        status = wait_refused_start(cluster, victim, good.image_hash)
        log = log_since(cluster, victim, log_start)
        assert status != 0, log
        assert (str(journal) in log and f"Raft index {index}" in log and "CRC" in log
                and f"at byte {record_at}" in log), (
            f"the log does not name the journal, index {index}, the record's byte {record_at} "
            f"and the CRC failure (flipped byte {position}):\n{log[-3000:]}")

        create_topics_one_by_one(client, "journal-meanwhile", 5)  # the quorum still works on two
        latest = wait_converged(cluster, [n for n in cluster.nodes if n != victim])
        restore_and_resync(cluster, victim, latest.offset, latest.image_hash)


def test_flipped_dump_byte_stops_the_node_and_a_removed_raft_dir_resyncs(
        quorum: LocalCluster) -> None:
    cluster = quorum
    with client_of(cluster) as client:
        create_topics_one_by_one(client, "dump", 60)  # a compaction on every node
        good = wait_converged(cluster, list(cluster.nodes))
        _leader, victim = a_follower(cluster)
        cluster.stop(victim)
        dump = raft_dir(cluster, victim) / "dump"
        assert dump.exists(), f"the follower has no dump after 60 entries: {dump}"
        original = dump.read_bytes()
        check_dump(dump)  # whole before the flip
        # The header (JSON with the idempotency table, its own CRC) is most of a small dump,
        # so its middle byte is in the header; the image's batches follow it. Flip one byte in
        # the middle of each: both must be found. The node is started on the second.
        batches_start = read_dump_header(dump).snapshot_start
        for where, problem in ((len(original) // 2, "CRC"),
                               ((batches_start + len(original)) // 2, "CRC")):
            data = bytearray(original)
            data[where] ^= 0x01
            dump.write_bytes(bytes(data))
            with pytest.raises(JournalCorruptError, match=f"dump is unusable.*{problem}"):
                check_dump(dump)

        log_start = log_size(cluster, victim)
        cluster.start(victim)
        status = wait_refused_start(cluster, victim, good.image_hash)
        log = log_since(cluster, victim, log_start)
        assert status != 0, log
        assert str(dump) in log and "dump is unusable" in log, (
            f"the log does not name the dump and the problem:\n{log[-3000:]}")

        restore_and_resync(cluster, victim, good.offset, good.image_hash)


def test_flipped_term_vote_byte_stops_the_node_and_a_removed_raft_dir_resyncs(
        quorum: LocalCluster) -> None:
    """pysyncobj alone read a damaged journal.meta as "term 0, no vote" and could vote twice in
    one term; the CRC'd term/vote file makes the node refuse to start instead."""
    cluster = quorum
    with client_of(cluster) as client:
        create_topics_one_by_one(client, "term", 5)
        good = wait_converged(cluster, list(cluster.nodes))
        _leader, victim = a_follower(cluster)
        cluster.stop(victim)
        term_file = term_vote_path(raft_dir(cluster, victim) / "journal")
        stored = read_term_vote(term_file)
        assert stored is not None and stored.term >= 1
        data = bytearray(term_file.read_bytes())
        data[len(data) // 2] ^= 0x01
        term_file.write_bytes(bytes(data))

        log_start = log_size(cluster, victim)
        cluster.start(victim)
        status = wait_refused_start(cluster, victim, good.image_hash)
        log = log_since(cluster, victim, log_start)
        assert status != 0, log
        assert str(term_file) in log and "term/vote" in log and "refusing to start" in log, (
            f"the log does not name the term/vote file and why:\n{log[-3000:]}")

        create_topics_one_by_one(client, "term-meanwhile", 3)
        latest = wait_converged(cluster, [n for n in cluster.nodes if n != victim])
        restore_and_resync(cluster, victim, latest.offset, latest.image_hash)


def flip_last_record_term(journal: Path) -> tuple[int, int, int]:
    """One flipped byte: XOR 0xFF into the second-highest byte of the last record's u64 term
    (term 11 became 71776119061217291 there). Returns (the record's byte, Raft index, new
    term)."""
    data = bytearray(journal.read_bytes())
    command_at, index, _command = journal_records(bytes(data))[-1]
    term_at = command_at - 8  # u32 size | u64 index | u64 term | command
    data[term_at + 6] ^= 0xFF
    journal.write_bytes(bytes(data))
    (term,) = struct.unpack_from("<Q", data, term_at)
    return command_at - 20, index, term


def test_flipped_term_byte_in_the_last_record_stops_the_node_and_the_quorum_keeps_writing(
        quorum: LocalCluster) -> None:
    """A corrupt term with real processes: write load, stop a follower, flip a byte of the
    term of its last journal record, start it. Before the fix it started ("journal checked"),
    won the next election with its huge term, truncated an applied entry on a healthy node and
    left the quorum at a term no epoch could hold (HTTP 500 on every write). Now the record's
    CRC32C fails: it refuses to start naming the file, the record's byte, the index and the term
    it reads, and the others keep leading."""
    cluster = quorum
    with client_of(cluster) as client:
        create_topics_one_by_one(client, "term-flip", 30)
        good = wait_converged(cluster, list(cluster.nodes))
        _leader, victim = a_follower(cluster)
        cluster.stop(victim)
        journal = raft_dir(cluster, victim) / "journal"
        stored = read_term_vote(term_vote_path(journal))
        assert stored is not None
        check_journal(journal, current_term=stored.term)  # whole before the flip
        record_at, index, term = flip_last_record_term(journal)
        assert term > 2**31 - 1, term
        with pytest.raises(JournalCorruptError, match=f"Raft index {index}: .*CRC32C"):
            check_journal(journal, current_term=stored.term)

        starts = {n: log_size(cluster, n) for n in cluster.nodes}
        cluster.start(victim)
        # Writes go on while the damaged node tries to start: every one is acknowledged.
        create_topics_one_by_one(client, "term-flip-during", 10)
        status = wait_refused_start(cluster, victim, good.image_hash)
        log = log_since(cluster, victim, starts[victim])
        assert status != 0, log
        assert (str(journal) in log and f"Raft index {index}" in log
                and f"at byte {record_at}" in log and str(term) in log), (
            f"the log does not name the journal, index {index}, byte {record_at} and term "
            f"{term}:\n{log[-3000:]}")
        assert "journal checked" not in log

        create_topics_one_by_one(client, "term-flip-after", 5)
        others = [n for n in cluster.nodes if n != victim]
        latest = wait_converged(cluster, others)
        assert wait_leader(cluster) in others
        for node_id in others:
            status_of = cluster.status(node_id, timeout=5)
            assert status_of is not None and int(str(status_of["epoch"])) <= 2**31 - 1, status_of
            other_log = log_since(cluster, node_id, starts[node_id])
            assert "CRITICAL" not in other_log, (  # no applied entry truncated anywhere
                f"node {node_id} logged CRITICAL:\n{other_log[-3000:]}")
        restore_and_resync(cluster, victim, latest.offset, latest.image_hash)
