"""Write load for power cuts: unique createTopics from writer threads, and the check after.

:class:`WriteLoad` runs ``writers`` threads, each with its own :class:`ClusterClient`, creating
one topic at a time, each with a name never used before (``<prefix>-w<k>-<n>``) and a fresh
idempotency key. A write is *acknowledged* when a controller answered 200 with error code 0;
*unknown* when no answer came within the client's short deadline (the cut came first); any
other answer is *refused* (kept with its error name). Nothing is retried once
:meth:`WriteLoad.stop` returns, so after it nothing of the load is in flight.

:func:`check_after_restart` waits until every node runs the same image (offset and hash), then
reads every node's topics and reports acknowledged topics that are missing (lost), names that
appear twice, and names of this load that were never written (neither acknowledged nor
unknown). Unknown writes may or may not be there.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from chunkraft.local.local_cluster import LocalCluster
from tests.support.cluster_client import admin_client, new_key, wait_converged

__all__ = ["AfterRestart", "LoadResult", "WriteLoad", "check_after_restart"]

MAX_WRITES_PER_WRITER = 100_000
"""A bound on one writer's loop (a writer normally stops long before)."""


@dataclass
class LoadResult:
    """What the writers of one :class:`WriteLoad` saw."""

    acknowledged: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)
    refused: dict[str, str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    """Seconds per acknowledged write."""


class WriteLoad:
    """Writer threads creating unique topics on ``cluster`` until :meth:`stop`; see the
    module doc. ``deadline`` bounds each write's retries (seconds), ``request_timeout`` one
    HTTP request. Start and stop from one thread."""

    def __init__(self, cluster: LocalCluster, prefix: str, writers: int, *,
                 deadline: float = 1.5, request_timeout: float = 1.0) -> None:
        self.cluster = cluster
        self.prefix = prefix
        self.writers = writers
        self.deadline = deadline
        self.request_timeout = request_timeout
        self.result = LoadResult()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for writer in range(self.writers):
            thread = threading.Thread(target=self._write, args=(writer,),
                                      name=f"writer-{writer}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 30.0) -> LoadResult:
        """Stops the writers and waits for them (each ends its current write first)."""
        self._stop.set()
        ends = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, ends - time.monotonic()))
        alive = [thread.name for thread in self._threads if thread.is_alive()]
        if alive:
            raise TimeoutError(f"writers {alive} did not stop within {timeout} s")
        return self.result

    def _write(self, writer: int) -> None:
        with admin_client(self.cluster, deadline=self.deadline, pause=0.02,
                          request_timeout=self.request_timeout,
                          start_at=writer) as client:
            for n in range(MAX_WRITES_PER_WRITER):
                if self._stop.is_set():
                    return
                name = f"{self.prefix}-w{writer}-{n}"
                started = time.monotonic()
                outcome = client.create_topics([(name, 1, 1)], key=new_key())
                elapsed = time.monotonic() - started
                with self._lock:
                    if not outcome.acknowledged:
                        self.result.unknown.add(name)
                        continue
                    body = outcome.body or {}
                    topic = (body.get("topics") or [{}])[0]
                    if topic.get("error_code") == 0:
                        self.result.acknowledged.add(name)
                        self.result.latencies.append(elapsed)
                    else:
                        self.result.refused[name] = str(topic.get("error_name")
                                                        or topic.get("error_code"))


@dataclass(frozen=True)
class AfterRestart:
    """What every node held after a restart."""

    offset: int
    image_hash: str
    topics: int
    lost: frozenset[str]
    """Acknowledged topics missing on some node."""
    duplicates: frozenset[str]
    """Names listed twice by a node."""
    never_written: frozenset[str]
    """Names with the load's prefix that no writer acknowledged or left unknown."""
    unknown_present: int
    """Unknown writes that took effect."""

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicates or self.never_written)


def check_after_restart(cluster: LocalCluster, prefix: str, result: LoadResult, *,
                        timeout: float = 60.0) -> AfterRestart:
    """Waits for every node to run one image, then checks each node's topics against
    ``result`` (topics named ``<prefix>-...`` only); see the module doc."""
    converged = wait_converged(cluster, list(cluster.nodes), timeout=timeout)
    lost: set[str] = set()
    duplicates: set[str] = set()
    never_written: set[str] = set()
    present: set[str] = set()
    with admin_client(cluster, deadline=timeout) as client:
        for node in cluster.nodes.values():
            topics = client.metadata(min_offset=converged.offset, url=node.url)["topics"]
            names = [str(t["name"]) for t in topics
                     if str(t.get("name")).startswith(prefix + "-")]
            counts = Counter(names)
            duplicates |= {name for name, count in counts.items() if count > 1}
            lost |= result.acknowledged - counts.keys()
            never_written |= counts.keys() - result.acknowledged - result.unknown
            present |= counts.keys()
            total = len(topics)
    return AfterRestart(converged.offset, converged.image_hash, total, frozenset(lost),
                        frozenset(duplicates), frozenset(never_written),
                        len(result.unknown & present))
