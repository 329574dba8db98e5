"""The campaign's clients: metadata writes and reads against a quorum, recorded as a history.

Run as its own process on a client host of the harness (``python -m chunkraft.chaos.workload
CONFIG.json``), so that it reaches the controllers over the harness's network and its requests
meet the same faults as any other client's. It writes every operation's invoke and completion
to a JSON-lines history (:class:`~chunkraft.chaos.history.HistoryRecorder`, flushed per line,
so a killed workload still leaves what it recorded) and stops by itself after ``seconds``.

What it does:

- **Brokers.** Controllers place replicas only on registered, unfenced brokers, so a keeper
  thread registers ``brokers`` fake brokers and heartbeats them (they never fetch: a chunk
  move it starts never completes, which the model does not need).
- **Clients.** ``clients`` threads, each one Jepsen process at a time, pick topics from a small
  pool that rotates every ``rotate_seconds`` (the checker searches each topic alone, and its
  cost grows with the operations per topic) and send creates, createPartitions, chunk cuts,
  chunk moves and describes.
- **Outcomes.** A write carries one ``Idempotency-Key`` over all its attempts, which go to the
  controllers in turn while the outcome is unknown (no answer, 5xx, 421, NOT_CONTROLLER,
  REQUEST_TIMED_OUT), until ``request_deadline``. A 200 with the item's error code 0 is *ok*;
  a definite error (a 4xx, or another per-item code) is *fail*, unless an earlier attempt's
  outcome was unknown (see :class:`WriteAnswer`); otherwise, and when the deadline passes
  without a definite answer, it is *info*, after which the client goes on as a new process,
  because its old request may still take effect.
- **Reads.** A describe is ``POST /controller/v1/metadata`` for one topic with chunks, with
  ``min_offset`` the offset of this client's last write (``X-Metadata-Offset``): the read-your-
  writes guarantee of docs/api.md, which the checker verifies.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from chunkraft.chaos.history import (
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    HistoryRecorder,
    MoveChunk,
    Op,
    TopicView,
)
from chunkraft.error_codes import Errors

__all__ = ["WorkloadConfig", "final_reads", "main", "run", "topic_view"]

API = "/controller/v1"
RETRIABLE_NAMES = frozenset({"NOT_CONTROLLER", "REQUEST_TIMED_OUT"})
"""Error names after which a write's outcome is unknown and the same key is sent again."""
CUT_TIMESTAMP_BASE = 4_000_000_000_000
"""Milliseconds (year 2096): later than any partition's creation time."""


@dataclass(frozen=True)
class WorkloadConfig:
    """What a workload process is told (as a JSON file)."""

    urls: tuple[str, ...]
    token: str
    cluster_id: str
    history: str
    seconds: float
    clients: int = 4
    brokers: tuple[int, ...] = (0, 1, 2)
    seed: int = 0
    run: str = "r0"
    topics_per_pool: int = 3
    rotate_seconds: float = 8.0
    request_timeout: float = 1.5
    request_deadline: float = 6.0
    pause: float = 0.02
    stop_file: str = ""
    """When this file exists the clients stop (``seconds`` is then an upper bound)."""

    @classmethod
    def from_json(cls, text: str) -> WorkloadConfig:
        data = json.loads(text)
        data["urls"] = tuple(data["urls"])
        data["brokers"] = tuple(data.get("brokers", (0, 1, 2)))
        return cls(**data)

    def to_json(self) -> str:
        data = dict(vars(self))
        data["urls"], data["brokers"] = list(self.urls), list(self.brokers)
        return json.dumps(data)


def error_name(code: int) -> str:
    """Kafka's name of ``code`` (``UNKNOWN_<code>`` for one chunkraft does not know)."""
    error = Errors.for_code(code)
    return error.name if error.code == code else f"UNKNOWN_{code}"


def topic_view(topic: dict[str, Any]) -> TopicView | None:
    """A metadata answer's topic as the history records it: None when it does not exist;
    else its id, partition count and, per partition, the inactive chunks by start offset with
    their target replicas (a moving chunk's leaving replicas left out), then the active chunk
    with the partition's replicas."""
    if topic.get("error_code", 0) == Errors.UNKNOWN_TOPIC_OR_PARTITION.code:
        return None
    partitions = sorted(topic.get("partitions", ()), key=lambda p: p["partition_index"])
    chunks = []
    for partition in partitions:
        inactive = []
        for chunk in sorted(partition.get("chunks", ()), key=lambda c: c["start_offset"]):
            if chunk["start_offset"] == partition["start_offset"]:
                continue  # the active chunk, if listed: it comes last, below
            leaving = set(chunk.get("removing_replicas", ()))
            target = tuple(sorted(r for r in chunk["replicas"] if r not in leaving))
            inactive.append((int(chunk["start_offset"]), target))
        active = (int(partition["start_offset"]), tuple(sorted(partition["replica_nodes"])))
        chunks.append((*inactive, active))
    return TopicView(topic.get("topic_id"), len(partitions), tuple(chunks))


NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
"""Attempts that certainly never reached a controller."""


@dataclass(frozen=True)
class WriteAnswer:
    """What one write came to: ``outcome`` ok (``answer`` is the 200 body: per-item errors are
    the caller's to read), fail (``answer`` is the error name) or info (the reason), the
    ``X-Metadata-Offset`` of the answer, and whether an earlier attempt's outcome is unknown.

    A definite refusal answers for its own attempt only: an earlier attempt with the same key
    that is still on its way (queued on a slow leader, say) may be validated after it and
    commit. So after an unknown attempt, a refusal cannot prove the write did not happen.
    """

    outcome: str
    answer: dict[str, Any] | str | None
    offset: int | None
    earlier_unknown: bool


class _Http:
    """One client thread's connection to the quorum, with the retry rules of the module doc."""

    def __init__(self, config: WorkloadConfig, start_at: int) -> None:
        self.config = config
        self._next = start_at % len(config.urls)
        self._http = httpx.Client(timeout=config.request_timeout,
                                  headers={"authorization": f"Bearer {config.token}"})

    def close(self) -> None:
        self._http.close()

    def _rotate(self) -> None:
        self._next = (self._next + 1) % len(self.config.urls)

    def write(self, path: str, body: dict[str, Any], key: str) -> WriteAnswer:
        """Sends one write until a definite answer or the deadline (module doc)."""
        ends = time.monotonic() + self.config.request_deadline
        reason = "no attempt"
        unknown = False
        for _attempt in range(1000):
            url = self.config.urls[self._next]
            try:
                answer = self._http.post(url + API + path, json=body,
                                         headers={"Idempotency-Key": key})
            except httpx.HTTPError as error:
                reason = f"{url}: {type(error).__name__}"
                # Only a connection never made proves the request did not arrive.
                unknown = unknown or not isinstance(error, NEVER_SENT)
                self._rotate()
            else:
                offset = _offset(answer)
                parsed = _json(answer)
                name = str(parsed.get("error_name") or "") if parsed else ""
                if answer.status_code == 200 and parsed is not None:
                    return WriteAnswer("ok", parsed, offset, unknown)
                if answer.status_code < 500 and answer.status_code != 421 \
                        and name not in RETRIABLE_NAMES:
                    return WriteAnswer("fail", name or f"HTTP_{answer.status_code}", offset,
                                       unknown)
                reason = f"{url}: {answer.status_code} {name}"
                unknown = True
                self._rotate()
            if time.monotonic() + self.config.pause >= ends:
                break
            time.sleep(self.config.pause)
        return WriteAnswer("info", reason, None, unknown)

    def describe(self, topic: str, min_offset: int) -> tuple[bool, TopicView | None, str]:
        """``(True, view, "")`` or ``(False, None, reason)``: one attempt per controller
        until the deadline; a read that never got an answer constrains nothing."""
        ends = time.monotonic() + self.config.request_deadline
        reason = "no attempt"
        for _attempt in range(1000):
            url = self.config.urls[self._next]
            try:
                answer = self._http.post(
                    url + API + "/metadata",
                    json={"topics": [{"name": topic}], "include_chunks": True},
                    params={"min_offset": min_offset, "wait_ms": 1000})
            except httpx.HTTPError as error:
                reason = f"{url}: {type(error).__name__}"
            else:
                parsed = _json(answer)
                if answer.status_code == 200 and parsed is not None:
                    topics = parsed.get("topics") or []
                    return True, (topic_view(topics[0]) if topics else None), ""
                reason = f"{url}: {answer.status_code}"
            self._rotate()
            if time.monotonic() + self.config.pause >= ends:
                break
            time.sleep(self.config.pause)
        return False, None, reason


def _json(answer: httpx.Response) -> dict[str, Any] | None:
    try:
        value = answer.json()
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _offset(answer: httpx.Response) -> int | None:
    try:
        return int(answer.headers["X-Metadata-Offset"])
    except (KeyError, ValueError):
        return None


def _item_error(body: dict[str, Any], op: Op) -> int:
    """The per-item error code of a v1 answer to ``op`` (one item per request)."""
    if isinstance(op, CreateTopic):
        return int(body["topics"][0]["error_code"])
    if isinstance(op, CreatePartitions):
        return int(body["results"][0]["error_code"])
    if isinstance(op, CutChunk):
        if body.get("error_code", 0):
            return int(body["error_code"])
        return int(body["topics"][0]["partitions"][0]["error_code"])
    return int(body["results"][0]["error_code"])


def _request(op: Op) -> tuple[str, dict[str, Any]]:
    if isinstance(op, CreateTopic):
        return "/create-topics", {"topics": [{
            "name": op.topic, "num_partitions": op.partitions,
            "replication_factor": op.replication_factor}]}
    if isinstance(op, CreatePartitions):
        return "/create-partitions", {"topics": [{"name": op.topic, "count": op.count,
                                                  "assignments": None}]}
    if isinstance(op, CutChunk):
        assert op.replicas is not None
        return "/create-chunks", {"topics": [{"name": op.topic, "partitions": [{
            "partition_index": op.partition, "broker_ids": list(op.replicas),
            "prev_stop_offset": op.start_offset - 1, "prev_end_offset": op.start_offset - 1,
            "start_offset": op.start_offset,
            # Derived from the offset, so a later cut always has a later timestamp whatever
            # order concurrent clients' cuts commit in (a timestamp before the active chunk's
            # is INVALID_CHUNK_OFFSETS, which the model does not predict from clocks).
            "start_timestamp": CUT_TIMESTAMP_BASE + op.start_offset}]}]}
    assert isinstance(op, MoveChunk)
    return "/alter-chunk-assignments", {"chunks": [{
        "topic_name": op.topic, "partition_id": op.partition, "start_offset": op.chunk_start,
        "broker_ids": list(op.replicas)}]}


@dataclass
class _Client:
    """One client thread: its process id, what it last saw of each topic, its last offset."""

    index: int
    config: WorkloadConfig
    recorder: HistoryRecorder
    rng: random.Random
    started: float
    incarnation: int = 0
    min_offset: int = -1
    seen: dict[str, TopicView | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def process(self) -> str:
        return f"{self.index}.{self.incarnation}"

    def pool(self) -> list[str]:
        generation = int((time.monotonic() - self.started) / self.config.rotate_seconds)
        return [f"{self.config.run}-g{generation}-t{j}"
                for j in range(self.config.topics_per_pool)]

    def choose(self) -> Op:
        topic = self.rng.choice(self.pool())
        view = self.seen.get(topic)
        roll = self.rng.random()
        if topic not in self.seen or roll < 0.25:
            return Describe(topic)
        if view is None:
            return CreateTopic(topic, 2, min(2, len(self.config.brokers)))
        if roll < 0.35:
            return CreatePartitions(topic, view.partitions + self.rng.choice((0, 1, 1, 2)))
        partition = self.rng.randrange(view.partitions)
        chunks = view.chunks[partition] if view.chunks else ((0, None),)
        replicas = tuple(sorted(self.rng.sample(self.config.brokers,
                                                min(2, len(self.config.brokers)))))
        inactive = chunks[:-1]
        if roll < 0.55 and inactive:
            start, _ = self.rng.choice(inactive)
            return MoveChunk(topic, partition, start, replicas)
        if roll < 0.6:
            return CreateTopic(topic, 2, min(2, len(self.config.brokers)))  # already exists
        active_start = chunks[-1][0]
        return CutChunk(topic, partition, active_start + self.rng.choice((0, 5, 10, 20)),
                        replicas)

    def step(self, http: _Http) -> None:
        op = self.choose()
        self.recorder.invoke(self.process, op)
        if isinstance(op, Describe):
            ok, view, reason = http.describe(op.topic, self.min_offset)
            if ok:
                self.recorder.ok(self.process, view)
                self.seen[op.topic] = view
            else:
                self.recorder.info(self.process, reason)
                self.incarnation += 1
            return
        path, body = _request(op)
        written = http.write(path, body, _key(self.rng))
        if written.offset is not None and written.outcome != "info":
            self.min_offset = max(self.min_offset, written.offset)
        if written.outcome == "ok":
            assert isinstance(written.answer, dict)
            code = _item_error(written.answer, op)
            if code == 0:
                value = None
                if isinstance(op, CreateTopic):
                    value = str(written.answer["topics"][0].get("topic_id"))
                self.recorder.ok(self.process, value)
                return
            name = error_name(code)
        elif written.outcome == "fail":
            name = str(written.answer)
        else:
            self._unknown(str(written.answer))
            return
        if name in RETRIABLE_NAMES:
            self._unknown(name)  # a per-item REQUEST_TIMED_OUT: the change may still commit
        elif written.earlier_unknown:
            self._unknown(f"{name} after an attempt of unknown outcome")
        else:
            self.recorder.fail(self.process, name)

    def _unknown(self, reason: str) -> None:
        self.recorder.info(self.process, reason)
        self.incarnation += 1


def _stopped(config: WorkloadConfig) -> bool:
    return bool(config.stop_file) and os.path.exists(config.stop_file)


def _key(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def _keep_brokers(config: WorkloadConfig, stop: threading.Event) -> None:
    """Registers the fake brokers and heartbeats them until ``stop``; a broker the
    controllers no longer know (or fence for good) registers again."""
    http = _Http(config, 0)
    rng = random.Random(config.seed ^ 0x5EED)
    epochs: dict[int, int] = {}
    try:
        for _round in range(100_000):
            if stop.wait(0.0 if not epochs else 0.4):
                return
            for broker in config.brokers:
                if broker not in epochs:
                    written = http.write("/broker-registration", {
                        "broker_id": broker, "cluster_id": config.cluster_id,
                        "incarnation_id": _incarnation(rng),
                        "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1",
                                       "port": 9000 + broker, "security_protocol": 0}],
                        "rack": None}, _key(rng))
                    answer = written.answer
                    if written.outcome == "ok" and isinstance(answer, dict) \
                            and answer.get("error_code") == 0:
                        epochs[broker] = int(answer["broker_epoch"])
                    continue
                epoch = epochs[broker]
                written = http.write("/broker-heartbeat", {
                    "broker_id": broker, "broker_epoch": epoch,
                    "current_metadata_offset": epoch}, _key(rng))
                answer = written.answer
                if written.outcome == "ok" and isinstance(answer, dict) \
                        and answer.get("error_code", 0) != 0:
                    del epochs[broker]  # stale epoch or unknown broker: register again
    finally:
        http.close()


def _incarnation(rng: random.Random) -> str:
    import base64
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode()[:22]


def run(config: WorkloadConfig) -> int:
    """Runs the workload for ``config.seconds``; returns how many operations it recorded."""
    stop = threading.Event()
    keeper = threading.Thread(target=_keep_brokers, args=(config, stop), daemon=True,
                              name="brokers")
    keeper.start()
    started = time.monotonic()
    ends = started + config.seconds
    with HistoryRecorder(Path(config.history)) as recorder:
        def client_loop(index: int) -> None:
            client = _Client(index, config, recorder, random.Random(config.seed * 1000 + index),
                             started)
            http = _Http(config, index)
            try:
                for _step in range(1_000_000):
                    if time.monotonic() >= ends or _stopped(config):
                        return
                    client.step(http)
                    time.sleep(config.pause)
            finally:
                http.close()

        threads = [threading.Thread(target=client_loop, args=(i,), name=f"client-{i}")
                   for i in range(config.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(config.seconds + 4 * config.request_deadline + 30)
        stop.set()
        keeper.join(10)
        return len(recorder.events())


def final_reads(config: WorkloadConfig, topics: Sequence[str], min_offset: int) -> int:
    """After the heal: a describe of every topic from every controller, each at ``min_offset``
    (the leader's offset, so every acknowledged write is in it), appended to the history as
    process ``final-<controller index>``. Returns how many reads got no answer."""
    unanswered = 0
    with HistoryRecorder(Path(config.history)) as recorder:
        for index, url in enumerate(config.urls):
            one = WorkloadConfig(**{**vars(config), "urls": (url,)})
            http = _Http(one, 0)
            try:
                for topic in topics:
                    process = f"final-{index}"
                    recorder.invoke(process, Describe(topic))
                    ok, view, reason = http.describe(topic, min_offset)
                    if ok:
                        recorder.ok(process, view)
                    else:
                        recorder.info(process, reason)
                        unanswered += 1
            finally:
                http.close()
    return unanswered


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chunkraft.chaos.workload",
                                     description="Run the campaign's clients (see the module doc).")
    parser.add_argument("config", type=Path, help="a JSON file of WorkloadConfig fields")
    parser.add_argument("--final", type=Path, default=None,
                        help="instead: read every topic named in this JSON file "
                             '({"topics": [...], "min_offset": N}) from every controller')
    args = parser.parse_args(argv)
    config = WorkloadConfig.from_json(args.config.read_text(encoding="utf-8"))
    if args.final is not None:
        final = json.loads(args.final.read_text(encoding="utf-8"))
        unanswered = final_reads(config, final["topics"], int(final["min_offset"]))
        print(json.dumps({"unanswered": unanswered}), flush=True)
        return 0
    events = run(config)
    print(json.dumps({"events": events}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
