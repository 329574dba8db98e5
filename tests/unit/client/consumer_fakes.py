"""A scripted two-broker cluster for the consumer's tests, and the helpers they share."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from chunkraft.client.consumer import Consumer
from chunkraft.client.consumer_fetcher import key_in_range
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.error_codes import Errors

URLS = {1: "http://b1:9001", 2: "http://b2:9002"}


@dataclass
class FakeCluster:
    """Topic ``t``: partition 0 has an inactive chunk 0..9 on broker 2 and its active chunk
    (10 ..) led by broker 1; each record is one batch, key ``k<offset % 4>``. Partition 1, made
    by an expansion, has prior partition 0 at epoch 3 and records 0..2 on broker 1."""

    records: dict[int, int] = field(default_factory=lambda: {0: 15, 1: 3})
    leader_moves: int = 0
    threshold: int = 12
    fetches: list[tuple[int, int, int, Any]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    committed: dict[str, Any] = field(default_factory=lambda: {"committed_offset": -1})
    list_offsets_failures: int = 0
    """ListOffsets answers NOT_LEADER_OR_FOLLOWER this many times first (a leader that moved
    or restarted)."""
    list_offsets_asked: int = 0

    def metadata(self) -> dict[str, Any]:
        leader = 1 if self.leader_moves <= 0 else 2
        return {
            "cluster_id": "c", "controller_id": 0, "metadata_offset": 5,
            "brokers": [{"node_id": b, "host": url.split("//")[1].split(":")[0],
                         "port": int(url.rsplit(":", 1)[1])} for b, url in URLS.items()],
            "topics": [{"name": "t", "topic_id": "x", "partitions": [
                {"partition_index": 0, "leader_id": leader, "leader_epoch": 4,
                 "replica_nodes": [1], "isr_nodes": [1], "start_offset": 10,
                 "chunks": [{"start_offset": 0, "start_timestamp": 1, "stop_offset": 9,
                             "end_offset": 9, "chunk_epoch": 0, "replicas": [2],
                             "isr": [2]}]},
                {"partition_index": 1, "leader_id": 1, "leader_epoch": 0,
                 "replica_nodes": [1], "isr_nodes": [1], "start_offset": 0,
                 "prior_partition_epochs": [{"partition_index": 0, "leader_epoch": 3}]}]}]}

    def batches(self, partition: int, start: int, stop: int,
                key_range: tuple[int, int] | None) -> bytes:
        out = b""
        for offset in range(start, stop):
            key = f"k{offset % 4}".encode()
            if key_range is not None and not key_in_range(key, (key_range[0], key_range[1])):
                continue
            out += build_batch([(key, f"p{partition}-{offset}".encode(), 1000 + offset)],
                               base_offset=offset)
        return out

    def fetch(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        want = body["topics"][0]["partitions"][0]
        partition, offset = want["partition"], want["fetch_offset"]
        key_range = want.get("key_range")
        self.fetches.append((broker, partition, offset, key_range))
        answer: dict[str, Any] = {"partition": partition}
        end = self.records[partition]
        if partition == 0 and offset <= 9:
            if broker != 2:
                answer["error_code"] = Errors.NOT_LEADER_OR_FOLLOWER.code
                return answer
            data = self.batches(0, offset, 10, key_range)
            answer.update(chunk_stop_offset=9, high_watermark=10)
        else:
            leader = 1 if partition == 1 or self.leader_moves <= 0 else 2
            if broker != leader:
                self.leader_moves -= 1 if self.leader_moves < 0 else 0
                answer["error_code"] = Errors.NOT_LEADER_OR_FOLLOWER.code
                return answer
            # One batch per answer, as a fetch with a small max_bytes would get.
            data = self.batches(partition, offset, min(offset + 1, end), key_range)
            answer.update(high_watermark=end, last_stable_offset=end)
        answer["records"] = base64.b64encode(data).decode()
        return answer

    def handle(self, request: httpx.Request) -> httpx.Response:
        broker = next(b for b, url in URLS.items() if str(request.url).startswith(url))
        path = request.url.path.rsplit("/", 1)[1]
        body = json.loads(request.content) if request.content else {}
        if path == "metadata":
            return httpx.Response(200, json=self.metadata())
        if path == "fetch":
            part = self.fetch(broker, body)
            return httpx.Response(200, json={"responses": [{"topic": "t",
                                                            "partitions": [part]}]})
        if path == "list-offsets":
            want = body["topics"][0]["partitions"][0]
            self.list_offsets_asked += 1
            if self.list_offsets_failures > 0:
                self.list_offsets_failures -= 1
                return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
                    {"partition_index": want["partition_index"], "offset": -1,
                     "error_code": Errors.NOT_LEADER_OR_FOLLOWER.code}]}]})
            offset = 0 if want["timestamp"] == -2 else self.records[want["partition_index"]]
            return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
                {"partition_index": want["partition_index"], "offset": offset}]}]})
        if path == "find-coordinator":
            return httpx.Response(200, json={"coordinators": [
                {"key": "g", "node_id": 1, "host": "b1", "port": 9001, "url": URLS[1]}]})
        if path == "offset-commit":
            self.commits.append(body)
            return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
                {"partition_index": p["partition_index"]}
                for p in body["topics"][0]["partitions"]]}]})
        if path == "offset-fetch":
            return httpx.Response(200, json={"topics": [{"name": "t", "partitions": [
                dict(partition_index=0, **self.committed)]}]})
        if path == "offsets-for-leader-epoch":
            return httpx.Response(200, json={"topics": [{"topic": "t", "partitions": [
                {"partition": 0, "leader_epoch": 3, "end_offset": self.threshold}]}]})
        return httpx.Response(404, json={"message": path})




def consumer(**options: Any) -> Consumer:
    return Consumer([URLS[1]], client_id="unit", **options)


def drain(reader: Consumer, polls: int = 60) -> list[Any]:
    out: list[Any] = []
    for _ in range(polls):
        out.extend(reader.poll(0))
    return out
