"""Fixtures the producer's tests share: a fake cluster with a topic of 3 partitions, and a
producer on it that lingers 20 ms and batches 10 records."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chunkraft.client.producer import Producer
from tests.unit.client.producer_fakes import FakeCluster, make


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(topics={"t": 3})


@pytest.fixture
def producer(cluster: FakeCluster) -> Iterator[Producer]:
    with make(cluster, linger_ms=20, batch_size=10) as sender:
        yield sender
