"""EndTxn 0-4 on a broker: the transaction coordinator's end-txn route, called in-process.

The route checks WRITE on the transactional id and answers once PREPARE_COMMIT or
PREPARE_ABORT is durable in the transaction log (the markers follow); its ``error_code`` is the
answer's. Version 5 (KIP-890 part 2: a new epoch with every transaction, sent back in the
answer) is not served, so a client never expects one. A whole-request refusal of the route is
the answer's error code.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.kafka.txn.compat import route_answer_code

__all__ = ["END_TXN_KEY", "ROUTE", "end_txn_handler"]

END_TXN_KEY = 26
ROUTE = "/broker/v1/end-txn"
FENCED_FROM = 2
"""The first version that may answer PRODUCER_FENCED."""


def end_txn_handler(gateway: AdminGateway) -> ApiHandler:
    """EndTxn 0-4 over ``gateway`` (the broker app's routes)."""

    async def handle(request: KafkaRequest) -> dict[str, Any]:
        body = request.body
        sent = {"transactional_id": body["transactional_id"],
                "producer_id": body["producer_id"], "producer_epoch": body["producer_epoch"],
                "committed": bool(body["committed"])}
        return {"throttle_time_ms": 0, "error_code": await route_answer_code(
            gateway, ROUTE, sent, request, FENCED_FROM)}

    return ApiHandler(END_TXN_KEY, 0, 4, handle)
