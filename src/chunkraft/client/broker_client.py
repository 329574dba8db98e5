"""BrokerClient and AsyncBrokerClient: a broker agent's data plane (``/broker/v1/...``) over HTTP.

Each method sends one ``chunkraft.protocol.data_plane`` request to one broker and returns the
parsed response; per-partition errors stay inside it (``error_code``), as in Kafka. A whole
request that fails (401, 403, 400, 413, 5xx) raises :class:`BrokerClientError`; a connection
failure raises httpx's error. There are no retries: which broker to ask (the leader of a
partition's active chunk, an in-sync replica of an inactive chunk) is the caller's to know from
the metadata.

Produce requests travel as batch frames (``protocol.batch_frame``: the record batches as raw
bytes), and fetch answers are asked for as frames; the other calls are JSON.

Helpers build and read record data: :func:`produce_request` puts records in one v2 batch
(``dataplane.record_batch.build_batch``); :func:`decode_partition` and
:func:`decode_fetch` turn a fetch answer back into records, skipping control records and, when
the fetch was read_committed, the batches of aborted transactions (Kafka's consumer rule).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from chunkraft.dataplane.record_batch import (
    ControlType,
    Record,
    RecordInput,
    build_batch,
    control_type,
    decode_records,
    iter_batches,
)
from chunkraft.error_codes import Errors
from chunkraft.protocol.batch_frame import ACCEPT_FRAME, MEDIA_TYPE, decode_answer, frame_bytes
from chunkraft.protocol.chunks import CreateChunksResponse
from chunkraft.protocol.data_plane import (
    BrokerStatus,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProducePartitionData,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicData,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

__all__ = [
    "AsyncBrokerClient",
    "BrokerClient",
    "BrokerClientError",
    "ChunkRoll",
    "decode_fetch",
    "decode_partition",
    "fetch_request",
    "list_offsets_request",
    "produce_request",
]

M = TypeVar("M", bound=BaseModel)

ChunkRoll = tuple[str, int, Sequence[int], int]
"""One partition to cut (``create_chunks``): topic, partition, new replicas, leader (-1: the
first replica)."""


class BrokerClientError(Exception):
    """A request the broker refused or failed as a whole: the HTTP ``status`` and the error
    body (``error_code``, ``error_name``, ``message``); ``error`` is the Kafka error."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        self.error = Errors.for_code(int(body.get("error_code", -1)))
        super().__init__(f"HTTP {status} {self.error.name}: {body.get('message', '')}")


# ------------------------------------------------------------------------ request builders


def produce_request(topic: str, partition: int, partition_count: int,
                    records: Sequence[RecordInput], *, acks: int = -1,
                    timeout_ms: int = 30_000, producer_id: int = -1, producer_epoch: int = -1,
                    base_sequence: int = -1, transactional_id: str | None = None,
                    transactional: bool = False) -> ProduceRequest:
    """A ProduceRequest of ``records`` (``(key, value, timestamp_ms)`` tuples or
    ProducerRecords) as one batch for one partition. An idempotent producer passes its
    ``producer_id`` / ``producer_epoch`` and the batch's ``base_sequence``."""
    batch = build_batch(records, producer_id=producer_id, producer_epoch=producer_epoch,
                        base_sequence=base_sequence, transactional=transactional)
    return ProduceRequest(
        transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
        topics=(ProduceTopicData(name=topic, partition_count=partition_count, partitions=(
            ProducePartitionData(index=partition, records=batch),)),))


def fetch_request(topic: str, partition: int, offset: int, *, max_bytes: int = 1024 * 1024,
                  max_wait_ms: int = 500, min_bytes: int = 1, isolation_level: int = 0,
                  key_range: tuple[int, int] | None = None, current_leader_epoch: int = -1,
                  replica_id: int = -1, replica_epoch: int = -1,
                  chunk_start_offset: int = -1) -> FetchRequest:
    """A FetchRequest for one partition from ``offset``."""
    return FetchRequest(
        replica_id=replica_id, replica_epoch=replica_epoch, max_wait_ms=max_wait_ms,
        min_bytes=min_bytes, max_bytes=max(max_bytes, 1), isolation_level=isolation_level,
        topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=max(max_bytes, 1),
            current_leader_epoch=current_leader_epoch, key_range=key_range,
            chunk_start_offset=chunk_start_offset),)),))


def list_offsets_request(topic: str, partition: int, timestamp: int, *,
                         isolation_level: int = 0) -> ListOffsetsRequest:
    """A ListOffsetsRequest for one partition (``timestamp`` -2 earliest, -1 latest)."""
    return ListOffsetsRequest(isolation_level=isolation_level, topics=(ListOffsetsTopic(
        name=topic, partitions=(ListOffsetsPartition(partition_index=partition,
                                                     timestamp=timestamp),)),))


def _chunk_roll_body(rolls: Iterable[ChunkRoll]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, broker_ids, leader in rolls:
        topics.setdefault(topic, []).append({"partition_index": partition,
                                             "broker_ids": list(broker_ids), "leader": leader})
    return {"topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}


# ------------------------------------------------------------------------ response readers


def decode_partition(partition: FetchPartitionResponse, *,
                     include_control: bool = False) -> list[Record]:
    """The records of one partition's fetch answer, in offset order.

    Control records (transaction markers) are left out unless ``include_control``. When the
    answer lists ``aborted_transactions`` (a read_committed fetch), the batches of those
    transactions are left out: a transaction of producer P listed with first offset F is
    aborted from F until P's ABORT marker (Kafka's consumer). Batches before the fetch offset
    (a fetch starting inside a batch) are returned whole; skip by offset if that matters.
    """
    if not partition.records:
        return []
    data = partition.records
    pending = sorted(partition.aborted_transactions or (), key=lambda t: t.first_offset)
    aborted: set[int] = set()
    out: list[Record] = []
    for header, view in iter_batches(data):
        while pending and pending[0].first_offset <= header.last_offset:
            aborted.add(pending.pop(0).producer_id)
        if header.is_control:
            if control_type(view) is ControlType.ABORT:
                aborted.discard(header.producer_id)
            if include_control:
                out.extend(decode_records(view))
            continue
        if header.is_transactional and header.producer_id in aborted:
            continue
        out.extend(decode_records(view))
    return out


def decode_fetch(response: FetchResponse, *, include_control: bool = False
                 ) -> dict[tuple[str, int], list[Record]]:
    """The records of every partition of a fetch answer by (topic, partition); partitions
    with an error have none (read their ``error_code`` in the response)."""
    return {(topic.topic, partition.partition):
            decode_partition(partition, include_control=include_control)
            for topic in response.responses for partition in topic.partitions}


def _parse(answer: httpx.Response, model: type[M]) -> M:
    if answer.status_code != 200:
        try:
            body = answer.json()
        except ValueError:
            body = {"message": answer.text[:500]}
        if not isinstance(body, dict):
            body = {"message": str(body)[:500]}
        raise BrokerClientError(answer.status_code, body)
    return decode_answer(answer.content, answer.headers.get("content-type"), model)


_JSON_HEADERS = {"content-type": "application/json"}
_FRAME_HEADERS = {"content-type": MEDIA_TYPE, "accept": ACCEPT_FRAME}
_FETCH_HEADERS = {"content-type": "application/json", "accept": ACCEPT_FRAME}


def _body(message: BaseModel) -> tuple[bytes, dict[str, str]]:
    """The body and headers of a request: a produce as a batch frame (its records raw), a
    fetch as JSON asking for a framed answer, anything else as JSON."""
    if isinstance(message, ProduceRequest):
        return frame_bytes(message), _FRAME_HEADERS
    content = type(message).__pydantic_serializer__.to_json(message)
    return content, _FETCH_HEADERS if isinstance(message, FetchRequest) else _JSON_HEADERS


def _headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


# --------------------------------------------------------------------------------- clients


class BrokerClient:
    """Synchronous client of one broker's data plane (``url``: its base URL).

    ``token`` is sent as ``Authorization: Bearer``; ``verify`` is httpx's (an SSL context for
    https). Not thread-safe: one per thread. Methods raise :class:`BrokerClientError` for a
    refused request (per-partition errors are inside the answers).
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 60.0,
                 verify: ssl.SSLContext | bool = True,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, timeout=timeout, verify=verify,
                                  headers=_headers(token), transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _post(self, path: str, message: BaseModel, model: type[M]) -> M:
        content, headers = _body(message)
        answer = self._http.post("/broker/v1/" + path, content=content, headers=headers)
        return _parse(answer, model)

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        return self._post("produce", request, ProduceResponse)

    def fetch(self, request: FetchRequest) -> FetchResponse:
        return self._post("fetch", request, FetchResponse)

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        return self._post("list-offsets", request, ListOffsetsResponse)

    def offsets_for_leader_epoch(self, request: OffsetForLeaderEpochRequest
                                 ) -> OffsetForLeaderEpochResponse:
        return self._post("offsets-for-leader-epoch", request, OffsetForLeaderEpochResponse)

    def init_producer_id(self, request: InitProducerIdRequest | None = None
                         ) -> InitProducerIdResponse:
        return self._post("init-producer-id", request or InitProducerIdRequest(),
                          InitProducerIdResponse)

    def write_txn_markers(self, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        return self._post("write-txn-markers", request, WriteTxnMarkersResponse)

    def create_chunks(self, rolls: Iterable[ChunkRoll]) -> CreateChunksResponse:
        """Asks this broker (the partitions' leader) to cut their active chunks."""
        answer = self._http.post("/broker/v1/create-chunks", json=_chunk_roll_body(rolls))
        return _parse(answer, CreateChunksResponse)

    def status(self, *, with_hash: bool = False) -> BrokerStatus:
        answer = self._http.get("/broker/v1/status",
                                params={"hash": "true"} if with_hash else None)
        return _parse(answer, BrokerStatus)

    def produce_records(self, topic: str, partition: int, partition_count: int,
                        records: Sequence[RecordInput], **options: Any
                        ) -> ProducePartitionResponse:
        """Produces ``records`` as one batch (:func:`produce_request` ``options``); the
        partition's outcome."""
        response = self.produce(produce_request(topic, partition, partition_count, records,
                                                **options))
        return response.topics[0].partitions[0]

    def fetch_records(self, topic: str, partition: int, offset: int, **options: Any
                      ) -> tuple[FetchPartitionResponse, list[Record]]:
        """Fetches one partition from ``offset`` (:func:`fetch_request` ``options``): its
        answer and its records at or after ``offset``."""
        answer = self.fetch(fetch_request(topic, partition, offset, **options))
        part = answer.responses[0].partitions[0]
        return part, [r for r in decode_partition(part) if r.offset >= offset]


class AsyncBrokerClient:
    """The asyncio form of :class:`BrokerClient` (same methods, awaited); one per event loop."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 60.0,
                 verify: ssl.SSLContext | bool = True,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.url, timeout=timeout, verify=verify,
                                       headers=_headers(token), transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncBrokerClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _post(self, path: str, message: BaseModel, model: type[M]) -> M:
        content, headers = _body(message)
        answer = await self._http.post("/broker/v1/" + path, content=content, headers=headers)
        return _parse(answer, model)

    async def produce(self, request: ProduceRequest) -> ProduceResponse:
        return await self._post("produce", request, ProduceResponse)

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        return await self._post("fetch", request, FetchResponse)

    async def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        return await self._post("list-offsets", request, ListOffsetsResponse)

    async def offsets_for_leader_epoch(self, request: OffsetForLeaderEpochRequest
                                       ) -> OffsetForLeaderEpochResponse:
        return await self._post("offsets-for-leader-epoch", request,
                                OffsetForLeaderEpochResponse)

    async def init_producer_id(self, request: InitProducerIdRequest | None = None
                               ) -> InitProducerIdResponse:
        return await self._post("init-producer-id", request or InitProducerIdRequest(),
                                InitProducerIdResponse)

    async def write_txn_markers(self, request: WriteTxnMarkersRequest
                                ) -> WriteTxnMarkersResponse:
        return await self._post("write-txn-markers", request, WriteTxnMarkersResponse)

    async def create_chunks(self, rolls: Iterable[ChunkRoll]) -> CreateChunksResponse:
        answer = await self._http.post("/broker/v1/create-chunks",
                                       json=_chunk_roll_body(rolls))
        return _parse(answer, CreateChunksResponse)

    async def status(self, *, with_hash: bool = False) -> BrokerStatus:
        answer = await self._http.get("/broker/v1/status",
                                      params={"hash": "true"} if with_hash else None)
        return _parse(answer, BrokerStatus)

    async def produce_records(self, topic: str, partition: int, partition_count: int,
                              records: Sequence[RecordInput], **options: Any
                              ) -> ProducePartitionResponse:
        response = await self.produce(produce_request(topic, partition, partition_count,
                                                      records, **options))
        return response.topics[0].partitions[0]

    async def fetch_records(self, topic: str, partition: int, offset: int, **options: Any
                            ) -> tuple[FetchPartitionResponse, list[Record]]:
        answer = await self.fetch(fetch_request(topic, partition, offset, **options))
        part = answer.responses[0].partitions[0]
        return part, [r for r in decode_partition(part) if r.offset >= offset]
