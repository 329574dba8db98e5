"""AddOffsetsToTxn 0-3 on a broker: the transaction coordinator's add-offsets-to-txn route,
called in-process.

The route checks WRITE on the transactional id and READ on the group and adds the group's
``__consumer_offsets`` partition to the transaction; its ``error_code`` is the answer's. Version
4 (KIP-890's TRANSACTION_ABORTABLE) is not served: Kafka 3.x clients ask for at most 3. A
whole-request refusal of the route is the answer's error code.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.kafka.txn.compat import route_answer_code

__all__ = ["ADD_OFFSETS_TO_TXN_KEY", "ROUTE", "add_offsets_to_txn_handler"]

ADD_OFFSETS_TO_TXN_KEY = 25
ROUTE = "/broker/v1/add-offsets-to-txn"
FENCED_FROM = 2
"""The first version that may answer PRODUCER_FENCED."""


def add_offsets_to_txn_handler(gateway: AdminGateway) -> ApiHandler:
    """AddOffsetsToTxn 0-3 over ``gateway`` (the broker app's routes)."""

    async def handle(request: KafkaRequest) -> dict[str, Any]:
        body = request.body
        sent = {"transactional_id": body["transactional_id"],
                "producer_id": body["producer_id"], "producer_epoch": body["producer_epoch"],
                "group_id": body["group_id"]}
        return {"throttle_time_ms": 0, "error_code": await route_answer_code(
            gateway, ROUTE, sent, request, FENCED_FROM)}

    return ApiHandler(ADD_OFFSETS_TO_TXN_KEY, 0, 3, handle)
