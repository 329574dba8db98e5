"""StreamFetcher: records past an inactive chunk's stop offset are left to the next chunk, and
the fetch offset moves past batches that hold nothing for the reader."""

from __future__ import annotations

from chunkraft.client.chunk_router import ChunkRoute
from chunkraft.client.consumer_fetcher import FetchStream, Outcome, StreamFetcher, batches_end
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.protocol.data_plane import FetchPartitionResponse


def answer(*batches: bytes, stop: int = -1, hw: int = -1) -> FetchPartitionResponse:
    return FetchPartitionResponse(partition=0, chunk_stop_offset=stop, high_watermark=hw,
                                  records=b"".join(batches))


def fetcher() -> StreamFetcher:
    return StreamFetcher(lambda t, p: None, lambda: set(), lambda b: None, client_id="c",
                         isolation_level=0)


def batch(first: int, count: int) -> bytes:
    return build_batch([(None, f"v{first + i}".encode(), 5) for i in range(count)],
                       base_offset=first)


def test_an_inactive_chunk_is_read_to_its_stop_and_then_the_next_chunk_starts() -> None:
    stream = FetchStream("t", 0, fetch_offset=3)
    part = answer(batch(0, 5), batch(5, 10), stop=9)  # 10..14 belong to the next chunk
    outcome = fetcher()._take(stream, ChunkRoute(4, False, 0, 9), part, False)
    assert outcome is Outcome.DATA
    assert [r.offset for r in stream.buffer] == list(range(3, 10))
    assert {r.broker_id for r in stream.buffer} == {4}
    assert stream.fetch_offset == 10 and stream.position == 3


def test_an_empty_answer_of_an_inactive_chunk_moves_to_the_next_chunk() -> None:
    stream = FetchStream("t", 0, fetch_offset=10)
    outcome = fetcher()._take(stream, ChunkRoute(4, False, 0, 12), answer(stop=12), False)
    assert outcome is Outcome.EMPTY and stream.fetch_offset == 13


def test_the_active_chunk_moves_past_the_last_batch_even_without_records_for_us() -> None:
    stream = FetchStream("t", 0, key_range=(0, 0), fetch_offset=20)
    part = answer(build_batch([(b"not-ours", b"v", 5)] * 3, base_offset=20), hw=23)
    assert batches_end(part) == 23
    outcome = fetcher()._take(stream, ChunkRoute(1, True, 0), part, True)
    assert outcome is Outcome.EMPTY and stream.fetch_offset == 23 and not stream.buffer
