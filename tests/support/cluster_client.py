"""A synchronous client of a controller quorum for integration tests (real processes, httpx).

Every write carries an explicit ``Idempotency-Key`` and is retried with that same key over all
controller URLs, in turn, while the outcome is unknown: a connection error or timeout, a 5xx,
421, or a body naming NOT_CONTROLLER / REQUEST_TIMED_OUT. Retries are bounded by a deadline and
an attempt count, so a test never loops for ever. A write is *acknowledged* when a controller
answered it with 200: its outcome (success or a per-item error) is then known and final.

One :class:`ClusterClient` per thread (it holds one ``httpx.Client``).
"""

from __future__ import annotations

import secrets
import ssl
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records import decode_record
from chunkraft.records.files import read_batches
from chunkraft.records.uuids import kafka_uuid_str

__all__ = [
    "RETRIABLE_ERRORS",
    "ClusterClient",
    "ClusterFactory",
    "Converged",
    "Outcome",
    "admin_client",
    "image_from_snapshot",
    "new_key",
    "registration_body",
    "wait_converged",
    "wait_leader",
]

API = "/controller/v1"
RETRIABLE_ERRORS = frozenset({"NOT_CONTROLLER", "REQUEST_TIMED_OUT"})
"""Whole-request error names after which the same request (same key) is sent again."""
RETRIABLE_STATUSES = frozenset({421})

ClusterFactory = Callable[..., LocalCluster]
"""``make_cluster(extra_properties=None, size=3)`` of the integration tests' fixture."""


def new_key() -> str:
    """A fresh idempotency key: 32 hex characters (16 random bytes, never all zero)."""
    while True:
        key = secrets.token_hex(16)
        if int(key, 16):
            return key


@dataclass
class Outcome:
    """What became of one request after its retries.

    ``acknowledged``: a controller answered 200, so ``body`` is the operation's response and
    the outcome is final. Otherwise ``body`` is the last error body (if any) and ``status`` the
    last HTTP status (None when no controller answered at all); the outcome may be unknown.
    """

    path: str
    key: str
    acknowledged: bool
    status: int | None
    body: dict[str, Any] | None
    attempts: int
    errors: list[str] = field(default_factory=list)
    """Each transient failure met on the way (bounded by the attempt count)."""

    def describe(self) -> str:
        return (f"{self.path} key={self.key} acknowledged={self.acknowledged} "
                f"status={self.status} attempts={self.attempts} body={self.body} "
                f"last errors={self.errors[-3:]}")


class ClusterClient:
    """Writes and reads against a quorum given by its controllers' URLs; see the module doc."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        request_timeout: float = 5.0,
        deadline: float = 30.0,
        max_attempts: int = 2000,
        pause: float = 0.05,
        start_at: int = 0,
        token: str | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        if not urls:
            raise ValueError("no controller URL")
        self.urls = list(urls)
        self.deadline = deadline
        self.max_attempts = max_attempts
        self.pause = pause
        self._next = start_at % len(self.urls)
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(timeout=request_timeout, headers=headers, verify=verify)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ClusterClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the retry loop

    def write(self, path: str, body: dict[str, Any], *, key: str | None = None,
              deadline: float | None = None) -> Outcome:
        """POSTs ``body`` to ``path`` with idempotency key ``key`` until a controller answers
        it for good (200 or a non-retriable error), or the deadline / attempt count runs out."""
        key = key or new_key()
        ends = time.monotonic() + (self.deadline if deadline is None else deadline)
        outcome = Outcome(path, key, False, None, None, 0)
        while outcome.attempts < self.max_attempts:
            url = self.urls[self._next]
            outcome.attempts += 1
            try:
                answer = self._http.post(url + API + path, json=body,
                                         headers={"Idempotency-Key": key})
            except httpx.HTTPError as error:
                outcome.errors.append(f"{url}: {type(error).__name__}")
                self._rotate()
            else:
                outcome.status = answer.status_code
                outcome.body = _json(answer)
                if answer.status_code == 200:
                    outcome.acknowledged = True
                    return outcome
                name = (outcome.body or {}).get("error_name")
                if not (answer.status_code >= 500 or answer.status_code in RETRIABLE_STATUSES
                        or name in RETRIABLE_ERRORS):
                    return outcome  # a definite refusal (400, 404, ...): retrying cannot help
                outcome.errors.append(f"{url}: {answer.status_code} {name}")
                self._rotate()
            if time.monotonic() + self.pause >= ends:
                break
            time.sleep(self.pause)
        return outcome

    def _rotate(self) -> None:
        self._next = (self._next + 1) % len(self.urls)

    def read(self, path: str, body: dict[str, Any] | None = None, *, min_offset: int = -1,
             url: str | None = None, deadline: float | None = None) -> tuple[dict[str, Any], int]:
        """A read route's answer and its ``X-Metadata-Offset``, from ``url`` (or any
        controller, retried like a write). Raises AssertionError if no controller answers."""
        urls = [url] if url is not None else self.urls
        ends = time.monotonic() + (self.deadline if deadline is None else deadline)
        errors: list[str] = []
        for attempt in range(self.max_attempts):
            target = urls[attempt % len(urls)]
            try:
                answer = self._http.post(target + API + path, json=body or {},
                                         params={"min_offset": min_offset, "wait_ms": 2000})
                if answer.status_code == 200:
                    return answer.json(), int(answer.headers["X-Metadata-Offset"])
                errors.append(f"{target}: {answer.status_code} {answer.text[:200]}")
            except httpx.HTTPError as error:
                errors.append(f"{target}: {type(error).__name__}")
            if time.monotonic() + self.pause >= ends:
                break
            time.sleep(self.pause)
        raise AssertionError(f"no controller answered {path}: {errors[-5:]}")

    # ------------------------------------------------------------------ operations

    def register_broker(self, broker_id: int, cluster_id: str, *, key: str,
                        port: int | None = None) -> Outcome:
        return self.write("/broker-registration", registration_body(broker_id, cluster_id, port),
                          key=key)

    def heartbeat(self, broker_id: int, broker_epoch: int, current_metadata_offset: int, *,
                  key: str) -> Outcome:
        return self.write("/broker-heartbeat", {
            "broker_id": broker_id,
            "broker_epoch": broker_epoch,
            "current_metadata_offset": current_metadata_offset,
        }, key=key)

    def register_and_unfence(self, broker_ids: Sequence[int], cluster_id: str) -> dict[int, int]:
        """Registers each broker, then heartbeats it with ``current_metadata_offset`` at its
        broker epoch so it is unfenced; returns broker id -> broker epoch. AssertionError if
        any step is refused or not acknowledged."""
        epochs: dict[int, int] = {}
        for broker_id in broker_ids:
            registered = self.register_broker(broker_id, cluster_id, key=new_key())
            assert registered.acknowledged, registered.describe()
            assert registered.body is not None and registered.body["error_code"] == 0, \
                registered.describe()
            epochs[broker_id] = int(registered.body["broker_epoch"])
        for broker_id, epoch in epochs.items():
            beat = self.heartbeat(broker_id, epoch, epoch, key=new_key())
            assert beat.acknowledged, beat.describe()
            assert beat.body is not None and beat.body["error_code"] == 0, beat.describe()
            assert beat.body["is_fenced"] is False, beat.describe()
        return epochs

    def ensure_unfenced(self, broker_ids: Sequence[int], cluster_id: str) -> None:
        """Registers and unfences those of ``broker_ids`` that are not registered and
        unfenced already (a quorum shared by several tests keeps its brokers)."""
        brokers = {b["node_id"]: b for b in self.metadata()["brokers"]}
        missing = [b for b in broker_ids if b not in brokers or brokers[b]["fenced"]]
        if missing:
            self.register_and_unfence(missing, cluster_id)

    def create_topics(self, topics: Sequence[tuple[str, int, int]], *, key: str) -> Outcome:
        """Creates ``(name, partitions, replication factor)`` topics."""
        return self.write("/create-topics", {"topics": [
            {"name": name, "num_partitions": partitions, "replication_factor": factor}
            for name, partitions, factor in topics]}, key=key)

    def create_partitions(self, name: str, count: int, *, key: str) -> Outcome:
        """Raises ``name``'s partition count to ``count`` (absolute, KIP-195)."""
        return self.write("/create-partitions",
                          {"topics": [{"name": name, "count": count, "assignments": None}]},
                          key=key)

    def create_chunks(self, name: str, partition: int, *, broker_ids: Sequence[int],
                      start_offset: int, prev_end_offset: int, start_timestamp: int,
                      key: str) -> Outcome:
        """Cuts the active chunk of ``name``-``partition`` as an operator (broker_id -1):
        ``prev_stop_offset = start_offset - 1``."""
        return self.write("/create-chunks", {"topics": [{"name": name, "partitions": [{
            "partition_index": partition,
            "broker_ids": list(broker_ids),
            "prev_stop_offset": start_offset - 1,
            "prev_end_offset": prev_end_offset,
            "start_offset": start_offset,
            "start_timestamp": start_timestamp,
        }]}]}, key=key)

    def metadata(self, *, min_offset: int = -1, url: str | None = None) -> dict[str, Any]:
        """Metadata of every topic (with chunks), at ``min_offset`` or later."""
        body, _offset = self.read("/metadata", {"topics": None, "include_chunks": True},
                                  min_offset=min_offset, url=url)
        return body


def registration_body(broker_id: int, cluster_id: str, port: int | None = None
                      ) -> dict[str, Any]:
    """A BrokerRegistration body for ``broker_id`` (a fresh incarnation, one listener)."""
    return {
        "broker_id": broker_id,
        "cluster_id": cluster_id,
        "incarnation_id": kafka_uuid_str(uuid.uuid4()),
        "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1",
                       "port": port if port is not None else 9000 + broker_id,
                       "security_protocol": 0}],
        "rack": None,
    }


def admin_client(cluster: LocalCluster, **options: Any) -> ClusterClient:
    """A ClusterClient over every node of ``cluster``, authenticated as its admin (a super
    user); ``options`` are ClusterClient's keyword arguments."""
    options.setdefault("token", cluster.admin_token)
    options.setdefault("verify", cluster.verify)
    return ClusterClient(cluster.urls, **options)


def _json(answer: httpx.Response) -> dict[str, Any] | None:
    try:
        value = answer.json()
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ------------------------------------------------------------------ the quorum's state


@dataclass(frozen=True)
class Converged:
    """Every node asked reports this metadata offset and image hash."""

    offset: int
    image_hash: str
    statuses: dict[int, dict[str, Any]]


def wait_converged(cluster: LocalCluster, node_ids: Sequence[int], *, timeout: float = 30.0,
                   min_offset: int = -1) -> Converged:
    """Polls ``cluster.status`` (the nodes' ``/controller/v1/quorum?hash=true``) until every
    node of ``node_ids`` answers with the same ``metadata_offset`` (>= ``min_offset``) and
    ``image_hash`` and no ``failure``; AssertionError with what each said after ``timeout``."""
    ends = time.monotonic() + timeout
    seen: dict[int, Any] = {}
    while True:
        seen = {node: cluster.status(node) for node in node_ids}
        answers = [s for s in seen.values() if s is not None]
        if len(answers) == len(node_ids):
            pairs = {(s["metadata_offset"], s["image_hash"]) for s in answers}
            if (len(pairs) == 1 and all(s.get("failure") is None for s in answers)
                    and answers[0]["metadata_offset"] >= min_offset):
                offset, image_hash = pairs.pop()
                return Converged(int(offset), str(image_hash), dict(seen))
        if time.monotonic() >= ends:
            break
        time.sleep(0.1)
    summary = {node: None if s is None else {k: s.get(k) for k in (
        "state", "leader_id", "metadata_offset", "image_hash", "failure", "commit_index",
        "last_applied_index")} for node, s in seen.items()}
    raise AssertionError(f"nodes {list(node_ids)} did not converge within {timeout} s "
                         f"(min offset {min_offset}): {summary}")


def wait_leader(cluster: LocalCluster, *, timeout: float = 30.0, exclude: int | None = None) -> int:
    """The leader every running node agrees on (not ``exclude``), waiting up to ``timeout``."""
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        leader = cluster.leader_id(timeout=1.0)
        if leader is not None and leader != exclude:
            return int(leader)
        time.sleep(0.1)
    raise AssertionError(f"no agreed leader (other than {exclude}) within {timeout} s")


def image_from_snapshot(content: bytes, offset: int) -> MetadataImage:
    """The MetadataImage that ``GET /controller/v1/snapshot``'s body (snapshot batches, the
    last one flagged END_OF_SNAPSHOT) replays to on the empty image, at ``offset``."""
    batches = list(read_batches(content))
    assert batches and batches[-1].is_end_of_snapshot, "the snapshot has no end marker"
    assert not any(b.is_end_of_snapshot for b in batches[:-1]), "an end marker mid-snapshot"
    delta = MetadataDelta(MetadataImage.EMPTY)
    for batch in batches:
        for raw in batch.records:
            delta.replay(decode_record(raw))
    return delta.apply(MetadataProvenance(offset, batches[-1].epoch))
