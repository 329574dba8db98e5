"""broker_agent/chunk_size_reports: what a broker reports of its chunks' sizes, and the
controller's retention.bytes deleting the oldest chunk from them (in-process brokers, real logs,
the real controller operations)."""

from __future__ import annotations

from pathlib import Path

from chunkraft.controller.operations.chunk_retention import delete_expired_chunks
from chunkraft.records import ConfigRecord
from tests.unit.broker_agent.replica_harness import (
    TOPIC,
    TOPIC_ID,
    Cluster,
    eventually,
    produce,
    run_scenario,
    two_chunks,
    values_of,
)
from tests.unit.broker_agent.replica_harness import consume as fetch

VALUE = b"x" * 200



def test_nothing_is_reported_while_no_topic_sets_retention_bytes(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, count=1)
        await cluster.start()
        b0 = cluster.managers[0]
        try:
            assert (await produce(b0, [VALUE] * 3)).error_code == 0
            assert b0.size_reports.sizes() == []
            await b0.size_reports.send()
            assert "/controller/v1/chunk-sizes" not in cluster.controller.calls
            # The broker's own log.retention.bytes is not metadata: still nothing.
            await cluster.controller.commit([ConfigRecord(4, "0", "log.retention.bytes", "1")])
            assert b0.size_reports.sizes() == []
        finally:
            await cluster.close()

    run_scenario(scenario())


def test_sizes_of_inactive_and_active_chunks_reach_the_leader_and_drive_retention_bytes(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start(replicas=(0,))
        b0, b1 = cluster.managers[0], cluster.managers[1]
        try:
            await two_chunks(cluster, [VALUE] * 5, [VALUE] * 2)
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "retention.bytes",
                                                          "1000000")])
            reported = {(s.start_offset, s.size_in_bytes) for s in b0.size_reports.sizes()}
            (old_chunk,) = reported
            assert old_chunk[0] == 0 and old_chunk[1] > 5 * len(VALUE)
            (active,) = b1.size_reports.sizes()
            assert active.start_offset == 5 and 2 * len(VALUE) < active.size_in_bytes
            assert active.size_in_bytes < old_chunk[1]
            await b0.size_reports.send()
            await b1.size_reports.send()
            assert b0.size_reports.sent == b1.size_reports.sent == 1
            image = cluster.controller.image
            sizes = cluster.controller.chunk_sizes.sizes(image)
            assert sizes == {(TOPIC_ID, 0, 0): old_chunk[1],
                             (TOPIC_ID, 0, 5): active.size_in_bytes}
            # 1 MB: everything stays. A limit the active chunk alone reaches: chunk 0 goes.
            assert delete_expired_chunks(image, 0, sizes=sizes).records == ()
            await cluster.controller.commit([ConfigRecord(2, TOPIC, "retention.bytes",
                                                          str(active.size_in_bytes))])
            image = cluster.controller.image
            result = delete_expired_chunks(image, 0, sizes=cluster.controller.chunk_sizes
                                           .sizes(image))
            assert result.response.deleted == 1
            await cluster.controller.commit(list(result.records))
            await eventually(lambda: b0.logs.get(TOPIC, 0) is None,
                             "broker 0 deleting the removed chunk's log")
            assert values_of(await fetch(b1, 5)) == [VALUE] * 2
            assert cluster.controller.chunk_sizes.sizes(cluster.controller.image) == {
                (TOPIC_ID, 0, 5): active.size_in_bytes}
        finally:
            await cluster.close()

    run_scenario(scenario())
