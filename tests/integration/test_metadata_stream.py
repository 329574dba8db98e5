"""The metadata stream of a follower, read as a broker would: records from offset -1 in small
pages (long poll), and the snapshot; replaying either onto the empty image gives the image the
controller has at that offset (same content hash)."""

from __future__ import annotations

import base64
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records import NoOpRecord, PartitionRecord, TopicRecord, decode_record
from tests.support.cluster_client import (
    ClusterClient,
    admin_client,
    image_from_snapshot,
    new_key,
    wait_converged,
    wait_leader,
)

BROKERS = (1, 2, 3)
PAGE_RECORDS = 3
MAX_PAGES = 5000


@dataclass
class Subscriber:
    """A broker-like reader of one controller's metadata log: pages of records after
    ``offset``, replayed onto its own image."""

    url: str
    http: httpx.Client
    image: MetadataImage = field(default_factory=lambda: MetadataImage.EMPTY)
    pages: int = 0
    record_types: set[str] = field(default_factory=set)

    @property
    def offset(self) -> int:
        return self.image.offset

    def poll(self, *, wait_ms: int, max_records: int = PAGE_RECORDS,
             after: int | None = None) -> dict[str, Any]:
        """One page of records after ``after`` (default: the image's offset)."""
        answer = self.http.get(f"{self.url}/controller/v1/metadata-log", params={
            "after": self.offset if after is None else after, "max_records": max_records,
            "wait_ms": wait_ms})
        assert answer.status_code == 200, answer.text
        page: dict[str, Any] = answer.json()
        assert page["snapshot_needed"] is False, page
        self.pages += 1
        return page

    def apply(self, page: dict[str, Any], max_records: int = PAGE_RECORDS) -> int:
        """Replays one page onto the image; returns the number of records."""
        batches = page["batches"]
        count = sum(len(b["records"]) for b in batches)
        assert count <= max_records or len(batches) == 1, (
            f"a page of {count} records in {len(batches)} batches for max_records={max_records}")
        if not batches:
            return 0
        delta = MetadataDelta(self.image)
        expected, epoch = self.offset + 1, self.image.epoch
        for batch in batches:
            assert batch["base_offset"] == expected, (
                f"a batch at offset {batch['base_offset']}, expected {expected}: {page}")
            for encoded in batch["records"]:
                record = decode_record(base64.b64decode(encoded))
                self.record_types.add(type(record).__name__)
                delta.replay(record)
            expected += len(batch["records"])
            epoch = batch["epoch"]
        self.image = delta.apply(MetadataProvenance(expected - 1, epoch))
        return count

    def catch_up(self, offset: int, *, timeout: float = 30.0) -> None:
        """Reads pages (long poll) until the image reaches ``offset``."""
        ends = time.monotonic() + timeout
        for _ in range(MAX_PAGES):
            if self.offset >= offset:
                return
            assert time.monotonic() < ends, f"at offset {self.offset}, not {offset}, in time"
            self.apply(self.poll(wait_ms=1000))
        raise AssertionError(f"{MAX_PAGES} pages did not reach offset {offset}")


def make_history(cluster: LocalCluster, client: ClusterClient, prefix: str) -> None:
    """Writes of every kind the stream must carry: brokers, topics, partitions, chunks."""
    client.ensure_unfenced(BROKERS, cluster.cluster_id)
    created = client.create_topics([(f"{prefix}-a", 3, 2), (f"{prefix}-b", 1, 3)],
                                   key=new_key())
    assert created.acknowledged and created.body is not None, created.describe()
    assert all(t["error_code"] == 0 for t in created.body["topics"]), created.body
    grown = client.create_partitions(f"{prefix}-a", 5, key=new_key())
    assert grown.acknowledged and grown.body is not None, grown.describe()
    assert grown.body["results"][0]["error_code"] == 0, grown.body
    for j in (1, 2):
        cut = client.create_chunks(f"{prefix}-b", 0, broker_ids=[3, 1, 2], start_offset=50 * j,
                                   prev_end_offset=50 * j + 5, start_timestamp=1000 * j,
                                   key=new_key())
        assert cut.acknowledged and cut.body is not None, cut.describe()
        assert cut.body["topics"][0]["partitions"][0]["error_code"] == 0, cut.body


def a_follower(cluster: LocalCluster) -> int:
    leader = wait_leader(cluster)
    return next(n for n in cluster.nodes if n != leader)


def test_paged_log_from_the_start_replays_to_the_followers_image(quorum: LocalCluster) -> None:
    cluster = quorum
    follower = a_follower(cluster)
    url = cluster.nodes[follower].url
    with admin_client(cluster) as client, \
            httpx.Client(timeout=15.0, headers=cluster.headers) as http:
        make_history(cluster, client, "paged")
        first = wait_converged(cluster, list(cluster.nodes))
        reader = Subscriber(url, http)
        reader.catch_up(first.offset)
        assert reader.offset == first.offset
        assert reader.image.content_hash() == first.image_hash
        assert reader.pages >= 5  # it really read in small pages
        assert {"RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "TopicRecord",
                "PartitionRecord", "PartitionChangeRecord", "ChunkRecord"} <= reader.record_types

        # More writes: the reader continues from where it was, not from the start.
        make_history(cluster, client, "paged-more")
        second = wait_converged(cluster, list(cluster.nodes), min_offset=first.offset + 1)
        pages_before = reader.pages
        reader.catch_up(second.offset)
        assert reader.offset == second.offset
        assert reader.image.content_hash() == second.image_hash
        assert reader.pages - pages_before <= (second.offset - first.offset) + 1


def test_snapshot_replays_to_the_followers_image(quorum: LocalCluster) -> None:
    cluster = quorum
    follower = a_follower(cluster)
    with admin_client(cluster) as client, \
            httpx.Client(timeout=15.0, headers=cluster.headers) as http:
        make_history(cluster, client, "snap")
        converged = wait_converged(cluster, list(cluster.nodes))
        answer = http.get(f"{cluster.nodes[follower].url}/controller/v1/snapshot")
        assert answer.status_code == 200, answer.text
        assert int(answer.headers["X-Snapshot-End-Offset"]) == converged.offset + 1
        assert answer.headers["X-Cluster-Id"] == cluster.cluster_id
        image = image_from_snapshot(answer.content, converged.offset)
        assert image.content_hash() == converged.image_hash
        topic = image.topics.get_by_name("snap-a")
        assert topic is not None and len(topic.partitions) == 5


def test_long_poll_waits_and_returns_promptly_when_a_write_lands(quorum: LocalCluster) -> None:
    cluster = quorum
    follower = a_follower(cluster)
    with admin_client(cluster) as client, \
            httpx.Client(timeout=15.0, headers=cluster.headers) as http:
        client.ensure_unfenced(BROKERS, cluster.cluster_id)
        start = wait_converged(cluster, list(cluster.nodes))
        reader = Subscriber(cluster.nodes[follower].url, http)
        # Nothing to read: the poll waits about wait_ms and answers an empty page.
        began = time.monotonic()
        empty = reader.poll(wait_ms=500, after=start.offset)
        waited = time.monotonic() - began
        assert empty["batches"] == [] and 0.4 <= waited < 5.0, (waited, empty)

        result: dict[str, Any] = {}

        def long_poll() -> None:
            try:
                result["page"] = reader.poll(wait_ms=10_000, max_records=1000,
                                             after=start.offset)
            except BaseException as error:  # reported below
                result["error"] = error
            result["returned"] = time.monotonic()

        poller = threading.Thread(target=long_poll, daemon=True)
        poller.start()
        time.sleep(0.5)
        assert poller.is_alive(), f"the long poll returned before any write: {result}"
        created = client.create_topics([("long-poll", 1, 1)], key=new_key())
        acked = time.monotonic()
        assert created.acknowledged, created.describe()
        poller.join(timeout=12)
        assert not poller.is_alive(), "the long poll did not return"
        assert "error" not in result, result["error"]
        latency = result["returned"] - acked
        assert latency < 2.0, f"the long poll returned {latency:.2f} s after the write"
        page = result["page"]
        assert page["batches"] and page["batches"][0]["base_offset"] == start.offset + 1, page
        records = [decode_record(base64.b64decode(r))
                   for b in page["batches"] for r in b["records"]]
        for _ in range(3):  # a leader's barrier (a NoOpRecord) may have come first, alone
            if any(isinstance(r, TopicRecord) for r in records):
                break
            after = page["batches"][-1]["base_offset"] + len(page["batches"][-1]["records"]) - 1
            page = reader.poll(wait_ms=2000, max_records=1000, after=after)
            records += [decode_record(base64.b64decode(r))
                        for b in page["batches"] for r in b["records"]]
        assert [r.name for r in records if isinstance(r, TopicRecord)] == ["long-poll"], records
        assert all(isinstance(r, TopicRecord | PartitionRecord | NoOpRecord) for r in records)
