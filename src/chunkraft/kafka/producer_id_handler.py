"""InitProducerId 0-4 on a broker: the broker's own InitProducerId route, called in-process.

The HTTP data plane's ``/broker/v1/init-producer-id`` already has Kafka's semantics (an
idempotent producer gets a fresh id, epoch 0, from the producer-id block this broker took from
the controller; a transactional id goes to its transaction coordinator; the authorization of
both), so the Kafka handler only moves fields: the request's are the route's, by name. A
whole-request refusal of the route (403) becomes the answer's error code, as Kafka answers it.
Versions 3+ carry the producer id and epoch of a producer that re-initializes (KIP-360).
PRODUCER_FENCED is answered from v4 (KIP-588); older versions get INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.kafka.txn.compat import fenced_for_version

__all__ = ["INIT_PRODUCER_ID_KEY", "init_producer_id_handler"]

INIT_PRODUCER_ID_KEY = 22
ROUTE = "/broker/v1/init-producer-id"
FENCED_FROM = 4
"""The first version that may answer PRODUCER_FENCED."""


def init_producer_id_handler(gateway: AdminGateway) -> ApiHandler:
    """InitProducerId 0-4 over ``gateway`` (the broker app's routes)."""

    async def handle(request: KafkaRequest) -> dict[str, Any]:
        body = request.body
        sent = {"transactional_id": body.get("transactional_id"),
                "transaction_timeout_ms": body.get("transaction_timeout_ms", 60_000),
                "producer_id": body.get("producer_id", -1),
                "producer_epoch": body.get("producer_epoch", -1)}
        try:
            answer = await gateway.write(ROUTE, sent, request.session)
        except GatewayError as error:
            return {"throttle_time_ms": 0, "error_code": fenced_for_version(
                error.error.code, request.version, FENCED_FROM), "producer_id": -1,
                "producer_epoch": -1}
        return {"throttle_time_ms": 0, "error_code": fenced_for_version(
                    answer.get("error_code", 0), request.version, FENCED_FROM),
                "producer_id": answer.get("producer_id", -1),
                "producer_epoch": answer.get("producer_epoch", -1)}

    return ApiHandler(INIT_PRODUCER_ID_KEY, 0, 4, handle)
