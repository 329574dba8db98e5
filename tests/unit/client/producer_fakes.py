"""A fake cluster of brokers behind httpx MockTransports, for Producer unit tests.

It keeps one log per partition with Kafka's idempotence rules (a retried batch of one of the
producer's recent sequences is a DUPLICATE_SEQUENCE_NUMBER answering its first offset; a gap
is OUT_OF_ORDER_SEQUENCE_NUMBER), refuses a stale partition count (INVALID_PARTITION_COUNT)
and a produce at a broker that does not lead the partition, answers the transaction
coordinator's requests, and can be scripted to fail requests.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from chunkraft.client.producer import Producer
from chunkraft.dataplane.record_batch import decode_records, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.protocol.batch_frame import decode_frame, is_frame_type
from chunkraft.protocol.data_plane import ProduceRequest

__all__ = ["FakeCluster"]

Script = Callable[[str, dict[str, Any]], "httpx.Response | Exception | None"]


@dataclass
class Appended:
    producer_id: int
    epoch: int
    base_sequence: int
    count: int
    base_offset: int
    transactional: bool


@dataclass
class FakeCluster:
    """Brokers 0..2 at ``http://b<id>:90<id>``; ``topics`` name -> partition count; the
    leader of partition p is broker ``p % 3`` unless ``leaders`` says otherwise."""

    topics: dict[str, int] = field(default_factory=dict)
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    logs: dict[tuple[str, int], list[tuple[bytes | None, bytes | None]]] = field(
        default_factory=dict)
    batches: dict[tuple[str, int], list[Appended]] = field(default_factory=dict)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    scripts: list[Script] = field(default_factory=list)
    epochs: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_producer_id: int = 7

    def url(self, broker: int) -> str:
        return f"http://b{broker}:90{broker}"

    def leader(self, topic: str, partition: int) -> int:
        return self.leaders.get((topic, partition), partition % 3)

    def values(self, topic: str, partition: int) -> list[bytes | None]:
        return [value for _, value in self.logs.get((topic, partition), [])]

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.calls]

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/broker/v1/")
        if is_frame_type(request.headers.get("content-type")):
            # A produce arrives as a batch frame; its JSON form (base64 records) is what the
            # routes below read.
            body = decode_frame(request.content, ProduceRequest).model_dump(mode="json")
        else:
            body = json.loads(request.content or b"{}")
        broker = int(request.url.host.removeprefix("b"))
        with self.lock:
            self.calls.append((request.url.host, path, body))
            for script in list(self.scripts):
                outcome = script(path, body)
                if isinstance(outcome, Exception):
                    raise outcome
                if outcome is not None:
                    return outcome
            return httpx.Response(200, json=getattr(self, "_" + path.replace("-", "_"))(
                broker, body))

    # ------------------------------------------------------------------ routes

    def _metadata(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        names = [t["name"] for t in body["topics"]] if body.get("topics") else list(self.topics)
        topics: list[dict[str, Any]] = []
        for name in names:
            if name not in self.topics:
                topics.append({"name": name, "error_code": 3, "partitions": []})
                continue
            topics.append({"name": name, "topic_id": "id-" + name, "partitions": [
                {"partition_index": p, "leader_id": self.leader(name, p), "leader_epoch": 0,
                 "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2]}
                for p in range(self.topics[name])]})
        return {"cluster_id": "fake", "controller_id": 3000, "metadata_offset": 1,
                "brokers": [{"node_id": b, "host": f"b{b}", "port": 9000 + b}
                            for b in range(3)], "topics": topics}

    def _produce(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        topics = []
        for topic in body["topics"]:
            name = topic["name"]
            results = []
            for part in topic["partitions"]:
                results.append(self._append(broker, name, topic["partition_count"],
                                            part["index"], part["records"]))
            topics.append({"name": name, "partitions": results})
        return {"topics": topics}

    def _append(self, broker: int, topic: str, count: int, partition: int,
                records: str) -> dict[str, Any]:
        def error(code: Errors) -> dict[str, Any]:
            return {"index": partition, "error_code": code.code, "error_message": code.name}

        if topic not in self.topics:
            return error(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if count != self.topics[topic]:
            return error(Errors.INVALID_PARTITION_COUNT)
        if self.leader(topic, partition) != broker:
            return error(Errors.NOT_LEADER_OR_FOLLOWER)
        data = base64.b64decode(records)
        ((header, view),) = list(iter_batches(data))
        log = self.logs.setdefault((topic, partition), [])
        appended = self.batches.setdefault((topic, partition), [])
        if header.producer_id >= 0:
            mine = [a for a in appended if a.producer_id == header.producer_id
                    and a.epoch == header.producer_epoch]
            for old in mine[-5:]:
                if old.base_sequence == header.base_sequence:
                    return {"index": partition, "error_code":
                            Errors.DUPLICATE_SEQUENCE_NUMBER.code,
                            "base_offset": old.base_offset}
            expected = mine[-1].base_sequence + mine[-1].count if mine else 0
            if header.base_sequence != expected:
                return error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
        base = len(log)
        decoded = decode_records(view)
        log.extend((r.key, r.value) for r in decoded)
        appended.append(Appended(header.producer_id, header.producer_epoch,
                                 header.base_sequence, len(decoded), base,
                                 header.is_transactional))
        return {"index": partition, "base_offset": base}

    def _init_producer_id(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        txn = body.get("transactional_id")
        if txn is None:
            self.next_producer_id += 1
            return {"producer_id": self.next_producer_id - 1, "producer_epoch": 0}
        self.epochs[txn] = self.epochs.get(txn, -1) + 1
        return {"producer_id": 500, "producer_epoch": self.epochs[txn]}

    def _find_coordinator(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"coordinators": [{"key": key, "node_id": 1, "host": "b1", "port": 9001,
                                  "url": self.url(1)} for key in body["keys"]]}

    def _add_partitions_to_txn(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"results": [{"name": t["name"], "results": [
            {"partition_index": p} for p in t["partitions"]]} for t in body["topics"]]}

    def _add_offsets_to_txn(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _txn_offset_commit(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"topics": [{"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"]} for p in t["partitions"]]}
            for t in body["topics"]]}

    def _end_txn(self, broker: int, body: dict[str, Any]) -> dict[str, Any]:
        return {}


def once(path: str, outcome: Callable[[dict[str, Any]], httpx.Response | Exception | None],
         times: int = 1) -> Script:
    """A script answering ``outcome(body)`` for the first ``times`` requests to ``path``."""
    left = [times]

    def script(seen: str, body: dict[str, Any]) -> httpx.Response | Exception | None:
        if seen != path or left[0] <= 0:
            return None
        left[0] -= 1
        return outcome(body)

    return script


def make(cluster: FakeCluster, **options: Any) -> Producer:
    options.setdefault("retry_backoff_ms", 5)
    return Producer([cluster.url(0)], transport=cluster.transport(),
                    async_transport=cluster.transport(), **options)


def error_answer(code: Errors) -> Any:
    def answer(body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(200, json={"topics": [
            {"name": t["name"], "partitions": [
                {"index": p["index"], "error_code": code.code} for p in t["partitions"]]}
            for t in body["topics"]]})

    return answer
