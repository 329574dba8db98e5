"""What every admin translation shares: the API keys, the routes, topic ids both ways.

The controller RPC speaks JSON, where a topic id is Kafka's 22-character base64 text and an
unknown one is null; the Kafka codec carries ``uuid.UUID``, where "no id" is the zero uuid
(``Uuid.ZERO_UUID`` in Kafka). :func:`topic_id_text` and :func:`topic_uuid` convert between
the two so that no handler has to remember which side uses which.
"""

from __future__ import annotations

import enum
import uuid

from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid

__all__ = [
    "ROUTES",
    "ZERO_UUID",
    "AdminApi",
    "topic_id_text",
    "topic_uuid",
]

ZERO_UUID = uuid.UUID(int=0)


class AdminApi(enum.IntEnum):
    """The API keys the admin handlers serve: Kafka's, and chunkraft's private block.

    KIP-1114 numbers CreateChunks 76 and AlterChunkAssignments 77, keys upstream Kafka may give
    to other APIs; chunkraft's own start at 17000, far past any key upstream will reach, so a
    stock client can never send one of them by mistake.
    """

    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    CREATE_PARTITIONS = 37
    INCREMENTAL_ALTER_CONFIGS = 44
    CREATE_CHUNKS = 17000
    ALTER_CHUNK_ASSIGNMENTS = 17001


_PREFIX = "/controller/v1"

ROUTES: dict[AdminApi, str] = {
    AdminApi.CREATE_TOPICS: f"{_PREFIX}/create-topics",
    AdminApi.DELETE_TOPICS: f"{_PREFIX}/delete-topics",
    AdminApi.CREATE_PARTITIONS: f"{_PREFIX}/create-partitions",
    AdminApi.DESCRIBE_CONFIGS: f"{_PREFIX}/describe-configs",
    AdminApi.ALTER_CONFIGS: f"{_PREFIX}/alter-configs",
    AdminApi.INCREMENTAL_ALTER_CONFIGS: f"{_PREFIX}/incremental-alter-configs",
    AdminApi.DESCRIBE_ACLS: f"{_PREFIX}/describe-acls",
    AdminApi.CREATE_ACLS: f"{_PREFIX}/create-acls",
    AdminApi.DELETE_ACLS: f"{_PREFIX}/delete-acls",
    AdminApi.CREATE_CHUNKS: f"{_PREFIX}/create-chunks",
    AdminApi.ALTER_CHUNK_ASSIGNMENTS: f"{_PREFIX}/alter-chunk-assignments",
}
"""The controller RPC route that runs each API's operation (``api/controller_routes.py``)."""


def topic_id_text(value: uuid.UUID | None) -> str | None:
    """A Kafka request's topic id as the route's text; the zero uuid (no id) as None."""
    if value is None or value == ZERO_UUID:
        return None
    return kafka_uuid_str(value)


def topic_uuid(text: str | None) -> uuid.UUID:
    """A route's topic id text as the Kafka codec's uuid; None (unknown) as the zero uuid, as
    Kafka answers an id it does not know."""
    if text is None:
        return ZERO_UUID
    return parse_kafka_uuid(text)
