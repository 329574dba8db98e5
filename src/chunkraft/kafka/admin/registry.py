"""The admin APIs a Kafka listener serves, each bound to the gateway it runs over.

The version ranges are the ones both Kafka's definitions and the translations cover; they
are what ApiVersions advertises, and kafka-python infers a broker version from them, so they
change only with the handlers. The chunk APIs are private (chunkraft's own key block), listed
in ApiVersions only to clients that ask for them.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.admin import acls, chunks, configs, topics
from chunkraft.kafka.admin.common import AdminApi
from chunkraft.kafka.admin.errors import AdminHandler
from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import ApiHandler, Handle, KafkaRequest

__all__ = ["ADMIN_APIS", "admin_handlers"]

ADMIN_APIS: tuple[tuple[AdminApi, int, int, AdminHandler, bool], ...] = (
    # (key, lowest version, highest version, handler, private)
    (AdminApi.CREATE_TOPICS, 2, 7, topics.create_topics, False),
    (AdminApi.DELETE_TOPICS, 1, 6, topics.delete_topics, False),
    (AdminApi.CREATE_PARTITIONS, 0, 3, topics.create_partitions, False),
    (AdminApi.DESCRIBE_CONFIGS, 1, 4, configs.describe_configs, False),
    (AdminApi.ALTER_CONFIGS, 0, 2, configs.alter_configs, False),
    (AdminApi.INCREMENTAL_ALTER_CONFIGS, 0, 1, configs.incremental_alter_configs, False),
    (AdminApi.DESCRIBE_ACLS, 1, 3, acls.describe_acls, False),
    (AdminApi.CREATE_ACLS, 1, 3, acls.create_acls, False),
    (AdminApi.DELETE_ACLS, 1, 3, acls.delete_acls, False),
    (AdminApi.CREATE_CHUNKS, 0, 0, chunks.create_chunks, True),
    (AdminApi.ALTER_CHUNK_ASSIGNMENTS, 0, 0, chunks.alter_chunk_assignments, True),
)
"""Every admin API: its key, version range, handler and whether it is private."""


def _bind(handler: AdminHandler, gateway: AdminGateway) -> Handle:
    async def handle(request: KafkaRequest) -> dict[str, Any]:
        return await handler(request, gateway)

    return handle


def admin_handlers(gateway: AdminGateway) -> list[ApiHandler]:
    """One :class:`ApiHandler` per admin API, its handler running over ``gateway``."""
    return [ApiHandler(api_key=int(key), min_version=low, max_version=high,
                       handle=_bind(handler, gateway), private=private)
            for key, low, high, handler, private in ADMIN_APIS]
