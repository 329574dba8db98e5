"""The query and path parameters routes share, with every bound the routes enforce declared.

Each type is an ``Annotated`` FastAPI parameter: the bound is both checked (a value outside it
is a 400 INVALID_REQUEST naming the parameter, before the route runs) and published in
``/openapi.json``, so the document says exactly which values are accepted. Topic names are
the exception: their rules are only declared here (``pattern``, lengths, not ``.`` / ``..``)
and checked by the routes themselves, which answer Kafka's INVALID_TOPIC_EXCEPTION with its
message rather than a generic validation error.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "MAX_READ_WAIT_MS",
    "TOPIC_NAME_SCHEMA",
    "BrokerIdPath",
    "LargePageSize",
    "MinOffset",
    "OffsetPath",
    "PageSize",
    "PageToken",
    "PartitionIdPath",
    "TopicNamePath",
    "WaitMs",
]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_READ_WAIT_MS = 30_000
"""A read waits at most this long for ``min_offset``; a longer ``wait_ms`` is capped."""

TOPIC_NAME_SCHEMA: dict[str, Any] = {
    "pattern": "^[a-zA-Z0-9._-]+$", "minLength": 1, "maxLength": 249,
    "not": {"enum": [".", ".."]},
}
"""Kafka's legal topic names, as JSON Schema: 1 to 249 of ``[a-zA-Z0-9._-]``, not ``.`` or
``..`` (``Topic.validate``)."""

MinOffset = Annotated[int, Query(
    ge=-1, le=INT64_MAX,
    description="Answer once this node has applied the metadata log up to this offset "
                "(-1: at once); pass a write's X-Metadata-Offset to read it.")]
WaitMs = Annotated[int, Query(
    ge=0, le=INT64_MAX,
    description=f"How long to wait for min_offset, in milliseconds (capped at "
                f"{MAX_READ_WAIT_MS}); then 503 REQUEST_TIMED_OUT.")]
TopicNamePath = Annotated[str, Path(json_schema_extra=TOPIC_NAME_SCHEMA,
                                    description="A topic name (Kafka's rules: an illegal "
                                                "one is a 400 INVALID_TOPIC_EXCEPTION).")]
PartitionIdPath = Annotated[int, Path(ge=0, le=INT32_MAX)]
BrokerIdPath = Annotated[int, Path(ge=0, le=INT32_MAX)]
OffsetPath = Annotated[int, Path(ge=0, le=INT64_MAX)]

PageSize = Annotated[int, Query(ge=1, le=1000, description="Items per page (1 to 1000).")]
LargePageSize = Annotated[int, Query(ge=1, le=10_000,
                                     description="Items per page (1 to 10,000).")]
PageToken = Annotated[str | None, Query(
    pattern="^[A-Za-z0-9_-]+$", max_length=400,
    description="The next page's token, from a list's metadata.next (opaque; a token this "
                "API did not issue is a 400).")]
