"""MetadataFollower: a broker's copy of the metadata image, kept current from the controllers.

It long-polls ``GET /controller/v1/metadata-log?after=<offset>`` (``api/stream.py``), replays
each answer's batches onto its image in one :class:`MetadataDelta`, and hands the delta and the
new image to its listeners (the ReplicaManager) before it reads on. A controller that answers
``snapshot_needed`` (the broker is behind its retained tail) is asked for
``GET /controller/v1/snapshot``; the snapshot becomes the image, and listeners get the delta from
the old image to the snapshot's (:func:`~chunkraft.broker_agent.image_diff.delta_between`).

Which controller: any answers, so the follower starts with one and moves to another on any
failure. Each answer names the answering node and the leader; once the follower knows the
leader's URL it reads from the leader (the first to know of a commit: lowest propagation
latency) and otherwise tries the next URL. The controller's cluster id must match the broker's.

Commit-to-applied latency: for each batch, now minus the leader's ``append_time_ms``, after the
listeners ran; the last samples are kept for p50 / p99.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import math
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from chunkraft.broker_agent.controller_channel import ControllerChannel
from chunkraft.broker_agent.image_diff import delta_between
from chunkraft.cluster_timeouts import cluster_timeout
from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.controller.image.snapshot import gc_paused
from chunkraft.records import decode_record, decode_records
from chunkraft.records.files.reader import read_batches
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid

__all__ = ["LatencyStats", "MetadataFollower", "MetadataListener", "StreamError",
           "image_from_snapshot"]

logger = logging.getLogger(__name__)

LATENCY_SAMPLES = 10_000
_MAX_BACKOFF = 1.0


class MetadataListener(Protocol):
    """Told of every new image, in order; must tolerate a snapshot's delta too."""

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None: ...


class StreamError(Exception):
    """A controller's answer the follower cannot use (an error status, another cluster)."""


class LatencyStats:
    """Commit-to-applied samples in milliseconds (the last ``size``), each also kept as
    ``(base offset, append_time_ms, applied_ms)`` in ``batches`` so that a benchmark can match
    one batch across brokers; not thread-safe."""

    def __init__(self, size: int = LATENCY_SAMPLES) -> None:
        self.samples: deque[float] = deque(maxlen=size)
        self.batches: deque[tuple[int, float, float]] = deque(maxlen=size)
        self.count = 0

    def add(self, value_ms: float, *, offset: int = -1, append_ms: float = 0.0,
            applied_ms: float = 0.0) -> None:
        self.samples.append(value_ms)
        self.batches.append((offset, append_ms, applied_ms))
        self.count += 1

    def percentile(self, fraction: float) -> float | None:
        """The nearest-rank percentile of the kept samples, None without samples."""
        if not self.samples:
            return None
        ordered = sorted(self.samples)
        index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
        return ordered[index]

    def summary(self) -> dict[str, float | int | None]:
        return {"count": self.count, "p50_ms": self.percentile(0.5),
                "p99_ms": self.percentile(0.99),
                "max_ms": max(self.samples) if self.samples else None}


def image_from_snapshot(content: bytes, end_offset: int, epoch: int) -> MetadataImage:
    """The image the snapshot batches ``content`` replay to, at ``end_offset - 1``.

    All or nothing: a torn or corrupt body raises (CorruptBatchError, TornTailError,
    RecordDecodeError, InvariantError, StreamError without an end marker)."""
    delta = MetadataDelta(MetadataImage.EMPTY)
    ended = False
    with gc_paused():
        for batch in read_batches(content):
            delta.replay_all(decode_records(batch.records))
            ended = batch.is_end_of_snapshot
        if not ended:
            raise StreamError("the snapshot ends without its end-of-snapshot marker")
        return delta.apply(MetadataProvenance(end_offset - 1, epoch))


class MetadataFollower:
    """Follows the metadata stream; see the module docstring.

    Runs on the broker's event loop (:meth:`run`); ``image`` and ``offset`` are read by
    anything on that loop. ``cluster_id`` (None: take the first controller's) is checked on
    every answer. ``now_ms`` is the wall clock the latency is measured with.
    """

    def __init__(self, channel: ControllerChannel, *, cluster_id: uuid.UUID | None = None,
                 wait_ms: int = 5_000, max_records: int = 10_000,
                 max_bytes: int = 16 * 1024 * 1024,
                 now_ms: Callable[[], float] = lambda: time.time() * 1000) -> None:
        self.channel = channel
        self.cluster_id = cluster_id
        self.wait_ms = wait_ms
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.now_ms = now_ms
        self.image = MetadataImage.EMPTY
        self.listeners: list[MetadataListener] = []
        self.latency = LatencyStats()
        self.applied_offset = -1
        """The last offset every listener has applied (what heartbeats report)."""
        self.high_watermark = -1
        """The controller's committed end (exclusive) at the last answer; -1 before one."""
        self.leader_id: int | None = None
        self.snapshots_loaded = 0
        self.batches_applied = 0
        self.failures = 0
        self.listener_failures = 0
        self.on_listener_error: Callable[[BaseException], None] | None = None
        """Called when a listener raised: its replicas no longer match the image (the process
        asks the controller to fence the broker)."""
        self._url_index = 0
        self._node_of_url: dict[str, int] = {}
        self._applied = asyncio.Condition()

    @property
    def offset(self) -> int:
        """The last metadata offset the image holds (-1: nothing yet)."""
        return self.image.offset

    @property
    def url(self) -> str:
        """The controller the next read goes to."""
        urls = self.channel.urls
        return urls[self._url_index % len(urls)]

    @property
    def caught_up(self) -> bool:
        """Whether the image (being applied, or applied) holds everything the controller last
        said was committed."""
        return self.high_watermark >= 0 and self.offset >= self.high_watermark - 1

    def add_listener(self, listener: MetadataListener) -> None:
        self.listeners.append(listener)

    async def run(self) -> None:
        """Reads and applies until cancelled; failures move to another controller, backing off
        up to a second (a whole quorum down costs one read a second)."""
        backoff = 0.02
        while True:
            try:
                await self.poll_once()
                backoff = 0.02
            except asyncio.CancelledError:
                raise
            except Exception as error:  # any controller's trouble: try the next one
                self.failures += 1
                logger.info("metadata stream from %s failed (%s); trying the next controller",
                            self.url, error)
                self._url_index += 1
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)

    async def poll_once(self, wait_ms: int | None = None) -> int:
        """One read of the stream (or one snapshot load); returns the records applied."""
        url = self.url
        wait = self.wait_ms if wait_ms is None else wait_ms
        answer = await self.channel.client.get(
            f"{url}/controller/v1/metadata-log",
            params={"after": self.offset, "wait_ms": wait, "max_records": self.max_records,
                    "max_bytes": self.max_bytes},
            timeout=cluster_timeout(wait / 1000 + 15.0))
        if answer.status_code != 200:
            raise StreamError(f"{url} answered {answer.status_code}: {answer.text[:300]}")
        body: dict[str, Any] = answer.json()
        self._check_cluster(str(body.get("cluster_id")))
        self._follow_leader(url, body.get("node_id"), body.get("leader_id"))
        self.high_watermark = max(self.high_watermark, int(body["high_watermark"]))
        if body.get("snapshot_needed"):
            await self.load_snapshot(url)
            return 0
        return await self._apply(body["batches"])

    def _check_cluster(self, text: str) -> None:
        cluster_id = parse_kafka_uuid(text)
        if self.cluster_id is None:
            self.cluster_id = cluster_id
        elif cluster_id != self.cluster_id:
            raise StreamError(f"controller of cluster {text}, not "
                              f"{kafka_uuid_str(self.cluster_id)}")

    def _follow_leader(self, url: str, node_id: Any, leader_id: Any) -> None:
        if isinstance(node_id, int):
            self._node_of_url[url] = node_id
        self.leader_id = leader_id if isinstance(leader_id, int) else None
        if self.leader_id is None:
            return
        if self.leader_id == node_id:
            self.channel.prefer(url)
            return
        urls = self.channel.urls
        for index, candidate in enumerate(urls):
            if self._node_of_url.get(candidate) == self.leader_id:
                self._url_index = index
                self.channel.prefer(candidate)  # writes too: no forwarding hop
                return
        # The leader's URL is not known yet: try one we have not heard from.
        unknown = [i for i, u in enumerate(urls) if u not in self._node_of_url]
        if unknown:
            self._url_index = unknown[0]

    async def _apply(self, batches: list[dict[str, Any]]) -> int:
        if not batches:
            return 0
        delta = MetadataDelta(self.image)
        expected = self.offset + 1
        epoch = self.image.epoch
        for batch in batches:
            if int(batch["base_offset"]) != expected:
                raise StreamError(f"a batch at offset {batch['base_offset']}, expected "
                                  f"{expected}")
            for encoded in batch["records"]:
                delta.replay(decode_record(base64.b64decode(encoded)))
            expected += len(batch["records"])
            epoch = int(batch["epoch"])
        image = delta.apply(MetadataProvenance(expected - 1, epoch))
        await self._publish(delta, image)
        now = self.now_ms()
        for batch in batches:
            appended = float(batch["append_time_ms"])
            self.latency.add(max(0.0, now - appended), offset=int(batch["base_offset"]),
                             append_ms=appended, applied_ms=now)
        self.batches_applied += len(batches)
        return expected - 1 - delta.image.offset

    async def load_snapshot(self, url: str | None = None) -> None:
        """Replaces the image with ``url``'s snapshot (default: the current controller's)."""
        url = url or self.url
        answer = await self.channel.client.get(f"{url}/controller/v1/snapshot",
                                               timeout=cluster_timeout(300.0))
        if answer.status_code != 200:
            raise StreamError(f"snapshot from {url}: {answer.status_code} {answer.text[:300]}")
        self._check_cluster(answer.headers.get("x-cluster-id", ""))
        end_offset = int(answer.headers["x-snapshot-end-offset"])
        epoch = int(answer.headers["x-snapshot-epoch"])
        if end_offset - 1 <= self.offset:
            return  # nothing newer than what we have
        started = time.monotonic()
        old = self.image
        # Decoding a large snapshot takes seconds: off the loop, so heartbeats keep going.
        image = await asyncio.to_thread(image_from_snapshot, answer.content, end_offset, epoch)
        delta = await asyncio.to_thread(delta_between, old, image)
        await self._publish(delta, image)
        self.snapshots_loaded += 1
        logger.info("loaded the snapshot at offset %d from %s (%d bytes) in %.2f s",
                    image.offset, url, len(answer.content), time.monotonic() - started)

    async def _publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        # The image is published first: a listener may read the follower's image.
        self.image = image
        for listener in self.listeners:
            try:
                await listener.on_metadata(delta, image)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                logger.exception("a metadata listener failed at offset %d", image.offset)
                self.listener_failures += 1
                if self.on_listener_error is not None:
                    self.on_listener_error(error)
        self.applied_offset = image.offset
        async with self._applied:
            self._applied.notify_all()

    async def wait_for_offset(self, offset: int, timeout: float) -> bool:
        """Whether the image reached ``offset`` within ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._applied:
                await self._applied.wait_for(lambda: self.applied_offset >= offset)
        return self.applied_offset >= offset
