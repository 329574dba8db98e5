"""Fixtures the client tests share: for the producer's, a fake cluster with a topic of 3
partitions and a producer on it that lingers 20 ms and batches 10 records; for the consumer's,
a scripted two-broker cluster every httpx.Client talks to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chunkraft.client.producer import Producer
from tests.unit.client.consumer_fakes import FakeCluster as ConsumerCluster
from tests.unit.client.producer_fakes import FakeCluster, make


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(topics={"t": 3})


@pytest.fixture
def producer(cluster: FakeCluster) -> Iterator[Producer]:
    with make(cluster, linger_ms=20, batch_size=10) as sender:
        yield sender


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ConsumerCluster:
    cluster = ConsumerCluster()
    transport = httpx.MockTransport(cluster.handle)
    original = httpx.Client.__init__

    def with_transport(self: httpx.Client, *args: Any, **kwargs: Any) -> None:
        kwargs["transport"] = transport
        original(self, *args, **kwargs)

    monkeypatch.setattr(httpx.Client, "__init__", with_transport)
    return cluster
