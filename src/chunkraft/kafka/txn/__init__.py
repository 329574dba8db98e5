"""Kafka's transaction APIs on a broker (KIP-98, before KIP-890's second part):
AddPartitionsToTxn 0-3, AddOffsetsToTxn 0-3 and EndTxn 0-4 over the transaction coordinator's
routes, TxnOffsetCommit 0-3 over the group coordinator's. InitProducerId is
:mod:`chunkraft.kafka.producer_id_handler`, FindCoordinator :mod:`chunkraft.kafka.groups`.

Each handler calls the broker app's own route in-process
(:class:`~chunkraft.kafka.route_gateway.RouteGateway`), which authorizes and does the work, and
only moves fields between Kafka's request and the route's JSON; :mod:`.compat` holds the error
codes older versions answer instead. They must run on the broker's main loop
(:data:`TRANSACTION_KEYS`), where the coordinators live.
"""

from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import ApiHandler
from chunkraft.kafka.txn.add_offsets import ADD_OFFSETS_TO_TXN_KEY, add_offsets_to_txn_handler
from chunkraft.kafka.txn.add_partitions import (
    ADD_PARTITIONS_TO_TXN_KEY,
    add_partitions_to_txn_handler,
)
from chunkraft.kafka.txn.end_txn import END_TXN_KEY, end_txn_handler
from chunkraft.kafka.txn.txn_offset_commit import TXN_OFFSET_COMMIT_KEY, txn_offset_commit_handler

__all__ = [
    "ADD_OFFSETS_TO_TXN_KEY",
    "ADD_PARTITIONS_TO_TXN_KEY",
    "END_TXN_KEY",
    "TRANSACTION_KEYS",
    "TXN_OFFSET_COMMIT_KEY",
    "add_offsets_to_txn_handler",
    "add_partitions_to_txn_handler",
    "end_txn_handler",
    "transaction_api_handlers",
    "txn_offset_commit_handler",
]

TRANSACTION_KEYS = frozenset({ADD_PARTITIONS_TO_TXN_KEY, ADD_OFFSETS_TO_TXN_KEY, END_TXN_KEY,
                              TXN_OFFSET_COMMIT_KEY})
"""The API keys of this package's handlers, which run on the broker's main loop."""


def transaction_api_handlers(gateway: AdminGateway) -> list[ApiHandler]:
    """Every handler of this package over ``gateway`` (the broker app's routes)."""
    return [add_partitions_to_txn_handler(gateway), add_offsets_to_txn_handler(gateway),
            end_txn_handler(gateway), txn_offset_commit_handler(gateway)]
