"""Sends a transaction's COMMIT / ABORT markers to the leaders of its partitions until each
partition has one (Kafka's ``TransactionMarkerChannelManager``).

Each round groups the partitions still waiting by their leader in the current image and sends
one WriteTxnMarkers per leader: to this broker's own ReplicaManager directly (then the marker
hooks are told, as the route would), to another broker over HTTP with this broker's token (it
needs CLUSTER_ACTION). A partition is done when its marker is written, when its topic or
partition no longer exists, or when the partition refuses the marker for a newer producer or
coordinator epoch (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, TRANSACTION_COORDINATOR_FENCED:
this transaction is over there already). Anything else (no leader, NOT_LEADER_OR_FOLLOWER, a
timeout, a broker down) is retried with a growing backoff, for as long as ``still_valid()``
holds (the coordinator still leads the transaction's state partition).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from chunkraft.broker_agent.coordinator.marker_hooks import markers_written
from chunkraft.broker_agent.coordinator.transaction_log import TopicPartition
from chunkraft.broker_endpoints import broker_url
from chunkraft.cluster_timeouts import cluster_timeout
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

__all__ = ["WRITE_TXN_MARKERS_PATH", "MarkerSender"]

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_PATH = "/broker/v1/write-txn-markers"
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 1.0
DONE_CODES = frozenset({Errors.NONE.code, Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                        Errors.INVALID_PRODUCER_EPOCH.code, Errors.PRODUCER_FENCED.code,
                        Errors.TRANSACTION_COORDINATOR_FENCED.code})


class MarkerSender:
    """Delivers markers; one per broker, used on its event loop.

    ``image()`` is the broker's current image, ``replica_manager`` its ReplicaManager (markers
    for partitions this broker leads go to it directly). ``token`` / ``verify`` are for other
    brokers; ``transport`` replaces the network in tests.
    """

    def __init__(self, node_id: int, image: Callable[[], MetadataImage], replica_manager: Any,
                 *, token: str | None = None, verify: ssl.SSLContext | bool = True,
                 timeout_s: float = 40.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.node_id = node_id
        self.image = image
        self.replica_manager = replica_manager
        headers = {"authorization": f"Bearer {token}"} if token else {}
        # Longer than a marker's own wait for the ISR (30 s) so the answer is not lost.
        self._client = httpx.AsyncClient(headers=headers, verify=verify, transport=transport,
                                         timeout=cluster_timeout(timeout_s))

    async def close(self) -> None:
        await self._client.aclose()

    async def deliver(self, partitions: Iterable[TopicPartition], producer_id: int,
                      producer_epoch: int, committed: bool, coordinator_epoch: int,
                      still_valid: Callable[[], bool]) -> bool:
        """Writes the marker on every partition; True once all are done, False if
        ``still_valid()`` turned false first."""
        waiting = set(partitions)
        backoff = FIRST_BACKOFF_S
        while waiting:
            if not still_valid():
                return False
            by_leader = self._by_leader(waiting)
            for topic_partition in by_leader.pop(-2, []):  # gone from the image
                waiting.discard(topic_partition)
            by_leader.pop(-1, None)  # no leader now: next round
            sends = [self._send(leader, tps, producer_id, producer_epoch, committed,
                                coordinator_epoch) for leader, tps in by_leader.items()]
            for done in await asyncio.gather(*sends):
                waiting.difference_update(done)
            if waiting:
                log.info("markers of producer %d: %d partitions still waiting", producer_id,
                         len(waiting))
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        return True

    def _by_leader(self, partitions: Iterable[TopicPartition]
                   ) -> dict[int, list[TopicPartition]]:
        """Partitions by leader id; -1: no leader now, -2: no such partition any more."""
        image = self.image()
        out: dict[int, list[TopicPartition]] = {}
        for topic, index in partitions:
            image_topic = image.topics.get_by_name(topic)
            record = image_topic.partition(index) if image_topic is not None else None
            leader = -2 if record is None else record.leader
            out.setdefault(leader, []).append((topic, index))
        return out

    async def _send(self, leader: int, partitions: list[TopicPartition], producer_id: int,
                    producer_epoch: int, committed: bool, coordinator_epoch: int
                    ) -> list[TopicPartition]:
        """The partitions whose marker is done after one request to ``leader``."""
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(partitions):
            topics.setdefault(topic, []).append(index)
        request = WriteTxnMarkersRequest(markers=(WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch,
            transaction_result=committed, coordinator_epoch=coordinator_epoch,
            topics=tuple(WritableTxnMarkerTopic(name=name, partition_indexes=tuple(indexes))
                         for name, indexes in topics.items())),))
        try:
            if leader == self.node_id:
                response = await self.replica_manager.write_txn_markers(request)
                await markers_written(self.replica_manager, request, response)
            else:
                response = await self._post(leader, request)
        except Exception as error:
            log.info("markers to broker %d failed: %r", leader, error)
            return []
        done: list[TopicPartition] = []
        for result in response.markers:
            for topic_result in result.topics:
                for partition in topic_result.partitions:
                    if partition.error_code in DONE_CODES:
                        done.append((topic_result.name, partition.partition_index))
                    else:
                        log.info("marker on %s-%d: %s", topic_result.name,
                                 partition.partition_index,
                                 Errors.for_code(partition.error_code).name)
        return done

    async def _post(self, broker_id: int, request: WriteTxnMarkersRequest
                    ) -> WriteTxnMarkersResponse:
        registration = self.image().brokers.get(broker_id)
        url = broker_url(registration) if registration is not None else None
        if url is None:
            raise ConnectionError(f"broker {broker_id} has no registered listener")
        answer = await self._client.post(url + WRITE_TXN_MARKERS_PATH,
                                         content=request.model_dump_json(),
                                         headers={"content-type": "application/json"})
        if answer.status_code != 200:
            raise ConnectionError(f"broker {broker_id} answered HTTP {answer.status_code}: "
                                  f"{answer.text[:200]}")
        return WriteTxnMarkersResponse.model_validate_json(answer.content)
