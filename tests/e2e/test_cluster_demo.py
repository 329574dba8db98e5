"""End to end: ``chunkraft cluster --demo --exit`` on a fresh dir, then the same dir again.

The first run starts three real controller processes and three broker agents, walks through
the demo against them (KIP-195 + KIP-253 expansion, a KIP-1114 chunk cut and move, the KIP's
chunk test plan with real data on the brokers, kill -9 of the leader) and stops them; the
output is what an operator reads, so the test reads it too. The second run restarts the same
cluster from its data. Finally the cluster is started once more here, to ask it over
HTTP whether the demo's topics survived both restarts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from chunkraft.cli.cluster import open_local_cluster
from chunkraft.client.controller_rpc import ControllerRpcClient
from chunkraft.local.local_cluster import LocalCluster

RUN_TIMEOUT = 180
CLUSTER_LINE = re.compile(r"^chunkraft: 3 controllers ready in [\d.]+ s; cluster id (\S+);",
                          re.MULTILINE)
PARTITION_LINE = re.compile(r"^\tPartition: (\d+)\tLeader: (-?\d+)\tLeaderEpoch: (\d+)\t"
                            r"Replicas: ([\d,]+)\tIsr: ([\d,]+)\tStartOffset: (\d+)"
                            r"(?:\tPriorPartitionEpochs: (\S+))?$")
CHUNK_LINE = re.compile(r"^\t\tChunk: start (\d+) stop (\d+) end (\d+)\tEpoch: (\d+)\t"
                        r"Replicas: ([\d,]+)\tIsr: ([\d,]+)"
                        r"(?:\tAdding: ([\d,]*)\tRemoving: ([\d,]*))?$")


def run_cluster(directory: Path, *flags: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "chunkraft", "cluster", "--dir", str(directory), *flags],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def sections(output: str) -> dict[str, str]:
    """The demo's steps: the text under each ``== title`` line, by the title's first words."""
    parts = re.split(r"^== ", output, flags=re.MULTILINE)
    return {part.split(":")[0].split("(")[0].strip(): part for part in parts[1:]}


def partitions(text: str) -> list[dict[int, tuple[int, int, str | None]]]:
    """Each topic printed in ``text``: partition -> (leader, leader epoch, prior epochs)."""
    topics: list[dict[int, tuple[int, int, str | None]]] = []
    for line in text.splitlines():
        if line.startswith("Topic: "):
            topics.append({})
        match = PARTITION_LINE.match(line)
        if match:
            topics[-1][int(match[1])] = (int(match[2]), int(match[3]), match[7])
    return topics


def chunks(text: str) -> list[re.Match[str]]:
    return [m for line in text.splitlines() if (m := CHUNK_LINE.match(line))]


@pytest.mark.slow
def test_the_demo_runs_and_the_cluster_restarts_with_its_data(tmp_path: Path) -> None:
    directory = tmp_path / "cluster"
    first = run_cluster(directory, "--demo", "--exit")
    cluster_id = CLUSTER_LINE.search(first)
    assert cluster_id, first
    steps = sections(first)
    topic = re.search(r"^== Create topic (\S+):", first, re.MULTILINE)
    assert topic and topic[1] == "orders"  # the demo's first run on a fresh cluster

    # KIP-195 + KIP-253: the created topic, then the same topic expanded to 5 partitions.
    (created,) = partitions(next(v for k, v in steps.items() if k.startswith("Create topic")))
    expansion = next(v for k, v in steps.items() if k.startswith("createPartitions to 5"))
    (expanded,) = partitions(expansion)
    assert sorted(created) == [0, 1, 2] and sorted(expanded) == [0, 1, 2, 3, 4]
    for partition_id, (leader, epoch, prior) in created.items():
        assert prior is None
        assert expanded[partition_id] == (leader, epoch + 1, None)  # bumped by exactly one
    priors = ",".join(f"{p}@{created[p][1]}" for p in sorted(created))
    for partition_id in (3, 4):
        assert expanded[partition_id][1:] == (0, priors), expansion
    assert "PriorPartitionEpochs: 0@0,1@0,2@0" in expansion
    assert "createPartitions to 4 is refused: 37 " in expansion

    # KIP-1114: the cut leaves chunk [0..99] (end 104: an open transaction), epoch 0 ...
    cut = next(v for k, v in steps.items() if k.startswith("Partition 0's leader cuts"))
    (chunk,) = chunks(cut)
    assert chunk.group(1, 2, 3, 4) == ("0", "99", "104", "0")
    assert "StartOffset: 100" in cut
    # ... which moves: first target + current with one adding replica, then the target alone.
    move = next(v for k, v in steps.items() if k.startswith("Move the inactive chunk"))
    moving, moved = chunks(move)
    assert moving[4] == "1" and moving[7] and moving[8]
    assert moved[4] == "2" and moved[7] is None
    target = [int(b) for b in moved[5].split(",")]
    assert moved[5] == moved[6] and int(moving[7]) in target and int(moving[8]) not in target
    assert "report their copies complete: the move finishes" in move

    # KIP-1114's AlterChunkAssignmentsTest on the real broker agents, checked on their disks.
    kip = next(v for k, v in steps.items() if k.startswith("KIP-1114 on the broker agents"))
    assert "broker 0 appended offsets 0..9 (acks=all)" in kip, kip
    cut_on_disk = next(v for k, v in steps.items()
                       if k.startswith("Cut the active chunk onto broker 1"))
    assert "inactive chunk start 0 stop 9 end 9: replicas [0], epoch 0" in cut_on_disk
    assert "broker 1 appended offsets 10..19" in cut_on_disk
    assert "broker 0 disk: inactive chunk 0: offsets 0..9" in cut_on_disk
    assert "broker 1 disk: active chunk 10: offsets 10..19" in cut_on_disk
    moved_on_disk = next(v for k, v in steps.items()
                         if k.startswith("Move the inactive chunk [0..9] to broker 2"))
    assert "inactive chunk start 0 stop 9 end 9: replicas [2], epoch 2" in moved_on_disk
    assert "broker 0 disk: nothing of kip-0" in moved_on_disk
    assert "broker 2 disk: inactive chunk 0: offsets 0..9" in moved_on_disk
    read = next(v for k, v in steps.items() if k.startswith("A reader walks"))
    assert "broker 2 served offsets 0..9 (inactive chunk, stop offset 9)" in read, read
    assert "broker 1 served offsets 10..19 (active chunk, high watermark 20)" in read, read

    # kill -9 of the leader: the next write commits, and all three nodes end on one image.
    failover = next(v for k, v in steps.items() if k.startswith("kill -9 the leader"))
    committed = re.search(r"controller \d killed; the next write committed \d+ ms later, at "
                          r"offset (\d+)", failover)
    assert committed, failover
    hashes = dict(re.findall(r"node (\d) hash ([0-9a-f]{12})", failover))
    assert sorted(hashes) == ["1", "2", "3"] and len(set(hashes.values())) == 1, failover
    assert "stopping the controllers..." in first

    # The same dir again: the same cluster, restarted from its data.
    second = run_cluster(directory, "--exit")
    again = CLUSTER_LINE.search(second)
    assert again and again[1] == cluster_id[1], second
    assert "== " not in second  # no demo this time

    cluster = open_local_cluster(directory, 3)
    assert cluster.cluster_id == cluster_id[1]
    try:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=60)
        with ControllerRpcClient(cluster.urls, token=cluster.admin_token) as client:
            # whichever node answers must have applied the demo's last write first
            answer = client.call("/controller/v1/metadata", {
                "topics": [{"name": "orders"}, {"name": "orders-after-failover"}]},
                params={"min_offset": int(committed[1]), "wait_ms": 10_000})
        assert answer["cluster_id"] == cluster_id[1]
        orders, after_failover = answer["topics"]
        assert orders["error_code"] == 0 and after_failover["error_code"] == 0
        assert len(orders["partitions"]) == 5 and len(after_failover["partitions"]) == 2
        kept = orders["partitions"][0]
        assert kept["start_offset"] == 100
        assert [(c["start_offset"], c["stop_offset"], c["replicas"]) for c in kept["chunks"]] \
            == [(0, 99, target)]
        assert [p["partition_index"] for p in orders["partitions"][3]["prior_partition_epochs"]
                ] == [0, 1, 2]
    finally:
        stop(cluster)


def stop(cluster: LocalCluster) -> None:
    """Stops every process this test started (SIGTERM, then SIGKILL), by PID only."""
    try:
        cluster.stop(timeout=10.0)
    finally:
        for node in cluster.nodes.values():
            if node.process is not None and node.process.poll() is None:
                node.process.kill()
                node.process.wait(timeout=10)
