"""The consumer's assignment and plumbing (``client.consumer_core``): key ranges, metadata."""

from __future__ import annotations

import pytest

from chunkraft.client.consumer import Consumer, ConsumerError
from chunkraft.client.metadata import ClusterMetadata
from chunkraft.protocol.data_plane import KEY_HASH_MAX
from tests.unit.client.consumer_fakes import URLS, FakeCluster, consumer, drain


def test_the_whole_range_is_a_plain_partition_and_bad_ranges_are_refused(
        fake: FakeCluster) -> None:
    with consumer() as reader:
        reader.assign({("t", 0): [(0, KEY_HASH_MAX)]})
        reader.seek(("t", 0), 0)
        assert len(drain(reader)) == 15
        with pytest.raises(ValueError):
            reader.assign({("t", 0): [(5, 2)]})
        with pytest.raises(ConsumerError):
            reader.position(("t", 7))
        with pytest.raises(ConsumerError):
            reader.commit()


def test_metadata_can_be_shared(fake: FakeCluster) -> None:
    shared = ClusterMetadata([URLS[1]])
    try:
        with Consumer([URLS[1]], metadata=shared) as reader:
            assert reader.partitions_for("t") == [0, 1]
        assert shared.partition("t", 0) is not None  # not closed by the consumer
    finally:
        shared.close()
