"""Fail-stop with real controller processes: a node whose applied entries the leader's
log contradicts exits with status 70 and a CRITICAL line instead of truncating them; the other
two keep leading, writing and agreeing on the image, and removing its ``raft/`` directory brings
it back on the same image.

Raft's safety rules such a conflict out, so it is made by hand, the way a bug (or a
corrupt term no record CRC caught) would make it: a stopped follower's journal is rewritten with
good CRCs but with the entries of the last term relabelled with the term before it. The node
starts cleanly ("journal checked": the log is well formed), applies those entries (its journal's
commit index covers them), loses every election (its last term is older), and when a leader
walks its log back to the first relabelled index, the leader's entry there conflicts with one it
has applied.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chunkraft.controller.raft.checked_journal import encode_journal, journal_records, read_header
from chunkraft.controller.raft.journal_check import check_journal
from chunkraft.controller.raft.safe_journal import EXIT_APPLIED_TRUNCATION
from chunkraft.controller.raft.term_vote import read_term_vote, term_vote_path
from chunkraft.local.local_cluster import LocalCluster
from tests.integration.test_controller_recovery import (
    a_follower,
    client_of,
    create_topics_one_by_one,
    log_since,
    log_size,
    raft_dir,
    restore_and_resync,
)
from tests.support.cluster_client import wait_converged, wait_leader

MAX_EPOCH = 2**31 - 1


def relabel_the_last_term(journal: Path) -> tuple[int, int, int, int]:
    """Rewrites ``journal`` (format 2, every CRC good) with the entries of its last term given
    the term of the entry before them. Returns (first relabelled index, last index, the term
    they now have, the term they had)."""
    data = journal.read_bytes()
    _first, _end, commit_index = read_header(data, str(journal))
    records = list(journal_records(data, str(journal)))
    last_term = records[-1].term
    start = next(n for n, record in enumerate(records) if record.term == last_term)
    # The journal's first two entries are the dump's, if there is one: leave them as they are.
    assert start >= 2, [(r.index, r.term) for r in records[:4]]
    older = records[start - 1].term
    assert older < last_term
    entries = [(r.command, r.index, older if n >= start else r.term)
               for n, r in enumerate(records)]
    journal.write_bytes(encode_journal(entries, commit_index))
    # Applied at start: the commit index the node stored covers the relabelled entries.
    assert commit_index >= records[start].index, (commit_index, records[start].index)
    return records[start].index, records[-1].index, older, last_term


def wait_exit(cluster: LocalCluster, node_id: int, timeout: float = 60.0) -> int:
    process = cluster.nodes[node_id].process
    assert process is not None
    ends = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < ends:
        time.sleep(0.1)
    assert process.poll() is not None, f"node {node_id} still runs after {timeout} s"
    return int(process.returncode)


@pytest.mark.leader_changes("forces a second history from a new leader")
def test_a_node_whose_applied_entries_conflict_with_the_leader_fail_stops_and_resyncs(
        quorum: LocalCluster) -> None:
    cluster = quorum
    with client_of(cluster) as client:
        create_topics_one_by_one(client, "term-a", 10)
    # A second term: the leader goes away, another is elected, the first comes back.
    first_leader = wait_leader(cluster)
    cluster.stop(first_leader)
    wait_leader(cluster, exclude=first_leader)
    cluster.start(first_leader)
    cluster.wait_ready(timeout=60)
    with client_of(cluster) as client:
        create_topics_one_by_one(client, "term-b", 10)
        good = wait_converged(cluster, list(cluster.nodes))
        leader, victim = a_follower(cluster)
        cluster.stop(victim)
        journal = raft_dir(cluster, victim) / "journal"
        stored = read_term_vote(term_vote_path(journal))
        assert stored is not None
        first, last, older, newer = relabel_the_last_term(journal)
        # Well formed: every CRC good, indexes consecutive, terms rising, none above the stored.
        assert check_journal(journal, current_term=stored.term).last_index == last

        starts = {n: log_size(cluster, n) for n in cluster.nodes}
        cluster.start(victim)
        # The quorum keeps writing while the victim starts, applies and stops.
        create_topics_one_by_one(client, "during", 10)
        status = wait_exit(cluster, victim)
        log = log_since(cluster, victim, starts[victim])
        assert status == EXIT_APPLIED_TRUNCATION, f"exit status {status}:\n{log[-3000:]}"
        assert "journal checked" in log, log[-3000:]
        assert (f"CRITICAL chunkraft.controller.raft.node: FAIL-STOP: the leader's log "
                f"conflicts with Raft index {first}, which this node has already applied "
                f"(entry {first} of term {newer} conflicts with term {older})") in log, (
            f"no FAIL-STOP line for index {first} (relabelled {first}..{last} from term "
            f"{newer} to {older}):\n{log[-3000:]}")
        assert "truncating the Raft log" not in log
        # Its journal is as it left it: nothing was truncated or appended over it.
        records = list(journal_records(journal.read_bytes(), str(journal)))
        assert [(r.index, r.term) for r in records if r.index >= first] == [
            (index, older) for index in range(first, last + 1)]

        create_topics_one_by_one(client, "after", 5)
        others = [n for n in cluster.nodes if n != victim]
        latest = wait_converged(cluster, others, min_offset=good.offset + 15)
        assert wait_leader(cluster) in others
        for node_id in others:
            status_of = cluster.status(node_id, timeout=5)
            assert status_of is not None and int(str(status_of["epoch"])) <= MAX_EPOCH
            other_log = log_since(cluster, node_id, starts[node_id])
            assert "CRITICAL" not in other_log, (  # no applied entry truncated anywhere
                f"node {node_id} logged CRITICAL:\n{other_log[-3000:]}")
        del leader

        # The documented way back: remove its raft/ directory, start it, and it re-syncs onto
        # the same image (not one record behind, as a re-synced node once was).
        restore_and_resync(cluster, victim, latest.offset, latest.image_hash)
        create_topics_one_by_one(client, "resynced", 3)
        everyone = wait_converged(cluster, list(cluster.nodes), min_offset=latest.offset + 3)
        assert everyone.offset >= latest.offset + 3
