"""marker_hooks: listeners learn of each successful marker, per ReplicaManager."""

from __future__ import annotations

import asyncio

from chunkraft.broker_agent.coordinator.marker_hooks import add_marker_listener, markers_written
from chunkraft.protocol.data_plane import (
    TxnMarkerPartitionResult,
    TxnMarkerResult,
    TxnMarkerTopicResult,
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)


class Owner:
    pass


def test_listeners_get_successful_markers_only() -> None:
    owner, other = Owner(), Owner()
    seen: list[tuple[str, int, int, int, bool]] = []
    elsewhere: list[object] = []

    async def listener(topic: str, partition: int, pid: int, epoch: int, commit: bool) -> None:
        seen.append((topic, partition, pid, epoch, commit))

    add_marker_listener(owner, listener)
    add_marker_listener(other, lambda *args: elsewhere.append(args))
    request = WriteTxnMarkersRequest(markers=(WritableTxnMarker(
        producer_id=7, producer_epoch=2, transaction_result=True,
        topics=(WritableTxnMarkerTopic(name="__consumer_offsets", partition_indexes=(0, 1)),)),))
    response = WriteTxnMarkersResponse(markers=(TxnMarkerResult(producer_id=7, topics=(
        TxnMarkerTopicResult(name="__consumer_offsets", partitions=(
            TxnMarkerPartitionResult(partition_index=0),
            TxnMarkerPartitionResult(partition_index=1, error_code=6))),)),))
    asyncio.run(markers_written(owner, request, response))
    assert seen == [("__consumer_offsets", 0, 7, 2, True)]
    assert elsewhere == []
