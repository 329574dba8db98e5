"""The error codes older versions of the transaction APIs answer instead of newer ones.

PRODUCER_FENCED (KIP-588) is answered only to the versions that declare it: AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn from v2, InitProducerId from v4. An older version gets
INVALID_PRODUCER_EPOCH, which its clients already treat as fencing (Kafka's ``KafkaApis`` does
the same). TxnOffsetCommit never answers PRODUCER_FENCED: Kafka's group coordinator passes the
log's INVALID_PRODUCER_EPOCH through, and librdkafka treats only that one as fatal there. Before
TxnOffsetCommit v2, COORDINATOR_LOAD_IN_PROGRESS is COORDINATOR_NOT_AVAILABLE (clients before
Kafka 2.0 did not retry the loading error).
"""

from __future__ import annotations

from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.server.requests import KafkaRequest

__all__ = ["fenced_for_version", "route_answer_code", "txn_offset_commit_code"]

_FENCED = Errors.PRODUCER_FENCED.code
_OLD_EPOCH = Errors.INVALID_PRODUCER_EPOCH.code


def fenced_for_version(code: int, version: int, fenced_from: int) -> int:
    """``code`` as version ``version`` of an API that knows PRODUCER_FENCED from version
    ``fenced_from`` may answer it."""
    if code == _FENCED and version < fenced_from:
        return _OLD_EPOCH
    return code


def txn_offset_commit_code(code: int, version: int) -> int:
    """A partition's ``code`` as TxnOffsetCommit version ``version`` answers it."""
    if code == _FENCED:
        return _OLD_EPOCH
    if code == Errors.COORDINATOR_LOAD_IN_PROGRESS.code and version < 2:
        return Errors.COORDINATOR_NOT_AVAILABLE.code
    return code


async def route_answer_code(gateway: AdminGateway, route: str, sent: dict[str, Any],
                            request: KafkaRequest, fenced_from: int) -> int:
    """The error code of a transaction route's one-code answer to ``sent`` (a whole-request
    refusal's code if it refused), as ``request``'s version may answer it."""
    try:
        answer = await gateway.write(route, sent, request.session)
        code = int(answer.get("error_code", 0))
    except GatewayError as error:
        code = error.error.code
    return fenced_for_version(code, request.version, fenced_from)
