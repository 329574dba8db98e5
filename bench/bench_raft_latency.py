"""Single-op commit latency of the Raft log alone: 3 RaftNodes in one process on 127.0.0.1.

One client proposes one batch (one TopicRecord) at a time to the leader and waits for its
outcome, so each figure is one full round: append, replicate, the followers' fdatasync and
acknowledgement, the leader's sync, commit, apply and the answering flush. No HTTP, no
brokers: it isolates what the Raft layer costs, e.g. the journal's fsyncs. Also prints the
disk's own fdatasync latency (300 syncs of a 300-byte write) for scale.

``--journal-records N`` (default 5,000) also measures the journal a RaftNode gets
(``pysyncobj.syncobj.createJournal`` as ``node.py`` replaces it), alone: the CPU cost of one
append, one append plus the sync a follower makes before acknowledging, and a restart's read and
check of N records (``check_journal``, then opening the journal). Run with another tree's ``src``
first on PYTHONPATH, it measures that tree's journal with the same code.

    PYTHONPATH=src:. python bench/bench_raft_latency.py [--ops 500] [--journal-records 5000]

Prints one JSON line per measurement; nothing is appended to RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import pysyncobj.syncobj
from tests.support.raft import batch, key, topic_record

from chunkraft.controller.raft import encode_entry
from chunkraft.controller.raft.journal_check import check_journal
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.local.local_cluster import free_ports

WARM_UP = 50


def _percentile(sorted_ms: list[float], fraction: float) -> float:
    return round(sorted_ms[min(int(fraction * len(sorted_ms)), len(sorted_ms) - 1)], 3)


def raft_latency(ops: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="chunkraft-raft-latency-") as root:
        voters = {node: f"127.0.0.1:{port}"
                  for node, port in zip((1, 2, 3), free_ports(3), strict=True)}
        cluster_id = uuid.uuid4()
        nodes = [RaftNode(RaftSettings(node_id=node, voters=voters,
                                       data_dir=Path(root) / f"node-{node}", password="bench",
                                       cluster_id=cluster_id, election_timeout_min=0.4,
                                       election_timeout_max=0.8))
                 for node in voters]
        try:
            deadline = time.monotonic() + 15
            while not any(node.is_leader() for node in nodes):
                if time.monotonic() > deadline:
                    raise RuntimeError("no leader in 15 s")
                time.sleep(0.05)
            leader = next(node for node in nodes if node.is_leader())
            latencies: list[float] = []
            for n in range(ops + WARM_UP):
                began = time.perf_counter()
                leader.propose([batch([topic_record(n)], key_=key(n))]).result(10)
                if n >= WARM_UP:
                    latencies.append((time.perf_counter() - began) * 1000)
        finally:
            for node in nodes:
                node.close()
    latencies.sort()
    return {"item": "raft single op", "ops": ops,
            "p50_ms": round(statistics.median(latencies), 3),
            "p90_ms": _percentile(latencies, 0.9), "p99_ms": _percentile(latencies, 0.99),
            "ops_per_s": round(ops / (sum(latencies) / 1000), 1)}


def disk_fdatasync() -> dict[str, object]:
    latencies = []
    with tempfile.NamedTemporaryFile(prefix="chunkraft-fsync-") as file:
        for n in range(300):
            os.pwrite(file.fileno(), b"x" * 300, n * 300)
            began = time.perf_counter()
            os.fdatasync(file.fileno())
            latencies.append((time.perf_counter() - began) * 1000)
    latencies.sort()
    return {"item": "fdatasync of a 300-byte write",
            "p50_ms": round(statistics.median(latencies), 3),
            "p99_ms": _percentile(latencies, 0.99)}


def journal_costs(records: int) -> list[dict[str, object]]:
    """The node's journal alone: append, append + sync, and a restart's read and check."""
    # What a RaftNode journals for one create-topic call: our entry point's pickled call.
    command = b"\x00" + pickle.dumps(
        (0, (encode_entry([batch([topic_record(1)], key_=key(1))]),)), protocol=2)
    with tempfile.TemporaryDirectory(prefix="chunkraft-journal-cost-") as root:
        path = str(Path(root) / "journal")
        journal = pysyncobj.syncobj.createJournal(path)  # as node.py makes it
        began = time.perf_counter()
        for index in range(1, records + 1):
            journal.add(command, index, 1)
        append_us = (time.perf_counter() - began) / records * 1e6
        synced = []
        for index in range(records + 1, records + 301):
            began = time.perf_counter()
            journal.add(command, index, 1)
            journal.sync()
            synced.append((time.perf_counter() - began) * 1000)
        journal._destroy()
        began = time.perf_counter()
        check_journal(path)
        checked = time.perf_counter() - began
        began = time.perf_counter()
        pysyncobj.syncobj.createJournal(path)._destroy()
        opened = time.perf_counter() - began
    synced.sort()
    return [
        {"item": "journal append, no sync", "command_bytes": len(command),
         "us_per_append": round(append_us, 2)},
        {"item": "journal append + fdatasync", "p50_ms": round(statistics.median(synced), 3),
         "p99_ms": _percentile(synced, 0.99)},
        {"item": "journal restart: check + open", "records": records + 300,
         "check_ms": round(checked * 1000, 1), "open_ms": round(opened * 1000, 1)},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--journal-records", type=int, default=5000)
    args = parser.parse_args()
    print(json.dumps(raft_latency(args.ops)))
    print(json.dumps(disk_fdatasync()))
    for line in journal_costs(args.journal_records):
        print(json.dumps(line))


if __name__ == "__main__":
    main()
