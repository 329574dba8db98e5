"""The demo against a running quorum: what ``chunkraft cluster --demo`` tells, step by step.

Everything goes through the controllers' HTTP RPC surface, as brokers and admin tools would:
four brokers register (by RPC, on closed ports: the story's own, next to the cluster's real
broker agents) and are unfenced, a topic is created on them and expanded (KIP-195, with
KIP-253's epochs), a partition's active chunk is cut and an inactive chunk moved (KIP-1114), and
then the leader is killed with SIGKILL and the quorum carries on without losing a write. That
topic's replicas are assigned to the story's brokers by hand; the real broker agents follow its
metadata, and then run KIP-1114's chunk test plan with real data
(:mod:`chunkraft.local.data_plane_story`); at the end each shows the image hash it reached.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from chunkraft.client.controller_rpc import ControllerRpcClient
from chunkraft.local.data_plane_story import run_data_plane_demo
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records.uuids import kafka_uuid_str

__all__ = ["run_demo"]

V1 = "/controller/v1"


def _say(step: str) -> None:
    print(f"\n== {step}")


def _describe(client: ControllerRpcClient, min_offset: int, name: str) -> dict[str, Any]:
    answer = client.call(f"{V1}/metadata", {"topics": [{"name": name}], "include_chunks": True},
                         params={"min_offset": min_offset})
    topic: dict[str, Any] = answer["topics"][0]
    return topic


def _print_topic(topic: dict[str, Any]) -> None:
    print(f"Topic: {topic['name']}\tTopicId: {topic['topic_id']}\t"
          f"PartitionCount: {len(topic['partitions'])}")
    for partition in topic["partitions"]:
        prior = ",".join(f"{p['partition_index']}@{p['leader_epoch']}"
                         for p in partition["prior_partition_epochs"])
        print(f"\tPartition: {partition['partition_index']}\tLeader: {partition['leader_id']}\t"
              f"LeaderEpoch: {partition['leader_epoch']}\t"
              f"Replicas: {','.join(map(str, partition['replica_nodes']))}\t"
              f"Isr: {','.join(map(str, partition['isr_nodes']))}\t"
              f"StartOffset: {partition['start_offset']}"
              + (f"\tPriorPartitionEpochs: {prior}" if prior else ""))
        for chunk in partition["chunks"]:
            moving = ""
            if chunk["adding_replicas"] or chunk["removing_replicas"]:
                moving = (f"\tAdding: {','.join(map(str, chunk['adding_replicas']))}"
                          f"\tRemoving: {','.join(map(str, chunk['removing_replicas']))}")
            print(f"\t\tChunk: start {chunk['start_offset']} stop {chunk['stop_offset']} "
                  f"end {chunk['end_offset']}\tEpoch: {chunk['chunk_epoch']}\t"
                  f"Replicas: {','.join(map(str, chunk['replicas']))}\t"
                  f"Isr: {','.join(map(str, chunk['isr']))}{moving}")


def _check(answer: dict[str, Any], what: str) -> None:
    codes = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("error_code"):
                codes.append((value["error_code"], value.get("error_message")))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(answer)
    if codes:
        raise RuntimeError(f"{what} failed: {codes}")


def _show_broker_agents(cluster: LocalCluster, offset: int) -> None:
    """Each running broker agent's metadata offset and image hash once it reached ``offset``."""
    running = [b for b in cluster.broker_nodes.values() if b.running]
    if not running:
        return
    _say("The broker agents followed every change through the metadata stream")
    deadline = time.monotonic() + 30
    for broker in running:
        status = None
        while time.monotonic() < deadline:
            status = cluster.broker_status(broker.broker_id, with_hash=True, timeout=5)
            if status is not None and int(status["metadata_offset"]) >= offset:
                break
            time.sleep(0.2)
        if status is None:
            print(f"broker agent {broker.broker_id}: no answer")
            continue
        print(f"broker agent {broker.broker_id}: {broker.url} epoch {status['broker_epoch']} "
              f"fenced={status['fenced']} metadata offset {status['metadata_offset']} image hash "
              f"{str(status['image_hash'])[:12]}")


def run_demo(cluster: LocalCluster) -> None:
    """Runs the story against ``cluster`` (already started and ready), printing each step."""
    with ControllerRpcClient(cluster.urls, token=cluster.admin_token) as client:
        # A second run on the same cluster uses new broker ids and a new topic name.
        before = client.call(f"{V1}/metadata", {"topics": None, "include_chunks": False})
        first = max([b["node_id"] for b in before["brokers"]], default=0) + 1
        topic_name = f"orders-{len(before['topics']) + 1}" if before["topics"] else "orders"
        b1, b2, b3, b4 = range(first, first + 4)
        _say(f"Four brokers ({b1}..{b4}, racks a, b, c, a) register and heartbeat until they "
             "are unfenced")
        epochs = {}
        for broker_id, rack in ((b1, "a"), (b2, "b"), (b3, "c"), (b4, "a")):
            answer = client.call(f"{V1}/broker-registration", {
                "broker_id": broker_id, "cluster_id": cluster.cluster_id,
                "incarnation_id": kafka_uuid_str(uuid.uuid4()), "rack": rack,
                "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1",
                               "port": 9092 + broker_id, "security_protocol": 0}]})
            _check(answer, "registration")
            epochs[broker_id] = answer["broker_epoch"]
        for broker_id, epoch in epochs.items():
            answer = client.call(f"{V1}/broker-heartbeat", {
                "broker_id": broker_id, "broker_epoch": epoch,
                "current_metadata_offset": client.last_offset + 100})
            print(f"broker {broker_id}: epoch {epoch}, fenced={answer['is_fenced']}")

        _say(f"Create topic {topic_name}: 3 partitions, replication factor 3, one replica per "
             f"rack on brokers {b1}..{b4}")
        answer = client.call(f"{V1}/create-topics", {"topics": [
            {"name": topic_name, "assignments": [
                {"partition_index": 0, "broker_ids": [b1, b2, b3]},
                {"partition_index": 1, "broker_ids": [b2, b3, b4]},
                {"partition_index": 2, "broker_ids": [b3, b4, b2]}]}]})
        _check(answer, "create-topics")
        _print_topic(_describe(client, client.last_offset, topic_name))

        _say("createPartitions to 5 (KIP-195): existing partitions' leader epochs are bumped and "
             "the new ones carry PriorPartitionEpochs (KIP-253), in one atomic batch")
        answer = client.call(f"{V1}/create-partitions", {"topics": [
            {"name": topic_name, "count": 5,
             "assignments": [{"broker_ids": [b4, b2, b3]}, {"broker_ids": [b1, b3, b2]}]}]})
        _check(answer, "create-partitions")
        print(f"committed at offset {client.last_offset}")
        _print_topic(_describe(client, client.last_offset, topic_name))
        answer = client.call(f"{V1}/create-partitions",
                             {"topics": [{"name": topic_name, "count": 4}]})
        print("createPartitions to 4 is refused: "
              f"{answer['results'][0]['error_code']} {answer['results'][0]['error_message']}")

        _say("Partition 0's leader cuts its active chunk (KIP-1114 CreateChunks): LSO 100, "
             f"HW 105 (a transaction is open), the new active chunk on brokers {b2},{b3},{b1}")
        topic = _describe(client, client.last_offset, topic_name)
        leader = topic["partitions"][0]["leader_id"]
        answer = client.call(f"{V1}/create-chunks", {
            "broker_id": leader, "broker_epoch": epochs[leader],
            "topics": [{"name": topic_name, "partitions": [{
                "partition_index": 0, "broker_ids": [b2, b3, b1],
                "prev_stop_offset": 99, "prev_end_offset": 104, "start_offset": 100,
                "start_timestamp": int(time.time() * 1000)}]}]})
        _check(answer, "create-chunks")
        topic = _describe(client, client.last_offset, topic_name)
        _print_topic(topic)

        chunk = topic["partitions"][0]["chunks"][0]
        newcomer = next(b for b in (b4, b2, b3, b1) if b not in chunk["replicas"])
        target = [newcomer, *chunk["replicas"][1:]]
        _say(f"Move the inactive chunk [0..99] to brokers {target} (AlterChunkAssignments)")
        answer = client.call(f"{V1}/alter-chunk-assignments", {"chunks": [{
            "topic_name": topic_name, "partition_id": 0, "start_offset": 0,
            "chunk_epoch": chunk["chunk_epoch"], "broker_ids": target}]})
        _check(answer, "alter-chunk-assignments")
        _print_topic(_describe(client, client.last_offset, topic_name))
        added = [b for b in target if b not in chunk["replicas"]]
        for broker_id in added:
            answer = client.call(f"{V1}/chunk-replica-state", {
                "broker_id": broker_id, "broker_epoch": epochs[broker_id],
                "chunks": [{"topic_name": topic_name, "partition_id": 0, "start_offset": 0,
                            "state": "in_sync"}]})
            _check(answer, "chunk-replica-state")
        print(f"broker(s) {added} report their copies complete: the move finishes")
        _print_topic(_describe(client, client.last_offset, topic_name))

        run_data_plane_demo(cluster)

        _say("kill -9 the leader controller while writing; the quorum elects another")
        old_leader = cluster.leader_id()
        assert old_leader is not None
        survivors = ControllerRpcClient(
            [n.url for n in cluster.nodes.values() if n.node_id != old_leader],
            token=cluster.admin_token)
        cluster.kill(old_leader)
        killed = time.monotonic()
        with survivors:
            answer = survivors.call(f"{V1}/create-topics", {"topics": [
                {"name": f"{topic_name}-after-failover", "num_partitions": 2,
                 "replication_factor": 3}]})
            _check(answer, "create-topics after failover")
            print(f"controller {old_leader} killed; the next write committed "
                  f"{(time.monotonic() - killed) * 1000:.0f} ms later, at offset "
                  f"{survivors.last_offset}; leader now: controller {cluster.leader_id()}")
            cluster.start(old_leader)
            cluster.wait_ready(timeout=60)
            offset = survivors.last_offset
        deadline = time.monotonic() + 30
        hashes: dict[int, object] = {}
        while time.monotonic() < deadline:
            statuses = {n: cluster.status(n) for n in cluster.nodes}
            hashes = {n: s.get("image_hash") for n, s in statuses.items()
                      if s is not None and int(str(s.get("metadata_offset", -1))) >= offset}
            if len(hashes) == len(cluster.nodes) and len(set(hashes.values())) == 1:
                break
            time.sleep(0.2)
        print(f"controller {old_leader} restarted and caught up: "
              + ", ".join(f"node {n} hash {str(h)[:12]}" for n, h in sorted(hashes.items())))
        _show_broker_agents(cluster, offset)
        _say("Done. The quorum keeps running: try `chunkraft quorum describe --replication "
             f"--bootstrap-server {','.join(cluster.urls)} "
             f"--command-config {cluster.command_config_path}`")
