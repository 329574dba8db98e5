"""Bounded work per request: the limits every HTTP request of a controller is held to.

A controller's first duty is to stay available (DESIGN.md section 9), and with CPython's GIL
every CPU-second a request costs is a CPU-second the Raft thread waits for. So the cost of any
one request is capped, and the cheap checks run first, each refusing before the next costs
anything:

1. headers: their total size (431) and the ``Idempotency-Key`` format (400), before anything
   reads them (:class:`HeaderLimitsMiddleware`, outside authentication);
2. authentication (401, :mod:`chunkraft.api.authentication`);
3. ``Content-Type: application/json`` for a body (415), then the body's size (413), counted
   while it streams in, with or without a ``Content-Length``, then how many JSON values it
   may hold (413, counted at memchr speed: :mod:`chunkraft.api.json_budget`), since a
   parser's cost grows with the values and it holds the GIL throughout
   (:func:`read_bounded_body`);
4. parsing, strict (400);
5. cluster-level authorization (403) of the RPC routes;
6. counts (:func:`count_problem` of :mod:`chunkraft.api.request_counts`): items per batch
   (400 INVALID_REQUEST, as a malformed batch),
   manual assignments and the broker ids they list, across the whole request
   (POLICY_VIOLATION); a v3 batch refused for its counts answers each item with
   TOPIC_AUTHORIZATION_FAILED if the principal may not change its topic, else
   POLICY_VIOLATION, without validating any item;
7. the operation: per-topic authorization, then validation, where Kafka's 10,000 records per
   request (``MAX_RECORDS_PER_USER_OP``) is checked before the expensive checks of each item.

The defaults and the settings that change them are in ``docs/api.md`` and
``docs/operations.md``; :class:`RequestLimits` holds them.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response

from chunkraft.api.errors import error_response
from chunkraft.api.json_budget import DEFAULT_MAX_JSON_VALUES, json_value_bound
from chunkraft.error_codes import Errors

if TYPE_CHECKING:
    from chunkraft.controller.config import ControllerConfig

__all__ = [
    "IDEMPOTENCY_KEY_MAX_CHARS",
    "HeaderLimitsMiddleware",
    "RequestCounts",
    "RequestLimits",
    "count_problem",
    "install_header_limits",
    "limits_of",
    "read_bounded_body",
]

_MIB = 1024 * 1024

IDEMPOTENCY_KEY_MAX_CHARS = 128
"""An ``Idempotency-Key`` is 1 to 128 visible ASCII characters (a uuid is 36); anything else is
refused with 400 rather than hashed, so a client's mistake is seen at once."""

_IDEMPOTENCY_KEY = re.compile(rb"[\x21-\x7e]{1,%d}" % IDEMPOTENCY_KEY_MAX_CHARS)
_IDEMPOTENCY_HEADER = b"idempotency-key"


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """The per-request limits of one controller's HTTP surface. Immutable, thread-safe.

    Each field is the controller setting of the same name with dots (``max_body_bytes`` is
    ``request.max.body.bytes``); the defaults here are those of
    :class:`~chunkraft.controller.config.ControllerConfig`.
    """

    max_body_bytes: int = _MIB
    """A body longer than this is refused 413 before more of it is read (parsing 1 MiB of the
    densest JSON, small integer lists, takes about 0.1 s)."""
    max_header_bytes: int = 32 * 1024
    """The request line's target and all header names and values together (431 above)."""
    max_batch_items: int = 1000
    """Items of one batch: topics, partitions, chunks, ACLs, filters (400 above)."""
    max_assignments: int = 10_000
    """Manual assignments (partitions given their replicas) in one request, all topics
    together: Kafka's 10,000 records per operation, as each is at least one record."""
    max_assignment_replicas: int = 50_000
    """Broker ids listed in one request's assignments, replica lists and ISRs together
    (10,000 partitions of 5 replicas)."""
    max_json_values: int = DEFAULT_MAX_JSON_VALUES
    """JSON values (an upper bound: :func:`~chunkraft.api.json_budget.json_value_bound`) a
    body may hold; above it, 413 before any parser runs."""


def limits_of(config: ControllerConfig) -> RequestLimits:
    """The limits a controller's configuration sets."""
    return RequestLimits(
        max_body_bytes=config.request_max_body_bytes,
        max_header_bytes=config.request_max_header_bytes,
        max_batch_items=config.request_max_batch_items,
        max_assignments=config.request_max_assignments,
        max_assignment_replicas=config.request_max_assignment_replicas,
        max_json_values=config.request_max_json_values,
    )


# ------------------------------------------------------------------ headers

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class HeaderLimitsMiddleware:
    """Pure-ASGI middleware: 431 for headers over ``limits.max_header_bytes``, 400 for an
    ``Idempotency-Key`` that is not 1 to 128 visible ASCII characters.

    It runs outside authentication, so no later step reads an oversized header. uvicorn has
    already buffered the headers by then (httptools sets no limit of its own); what this bounds
    is the work every later step does with them.
    """

    def __init__(self, app: ASGIApp, limits: RequestLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: Iterable[tuple[bytes, bytes]] = scope["headers"]
        size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        key: bytes | None = None
        for name, value in headers:
            size += len(name) + len(value)
            if name == _IDEMPOTENCY_HEADER:
                key = value
        limit = self.limits.max_header_bytes
        if size > limit:
            await _send_error(send, 431, Errors.INVALID_REQUEST,
                              f"the request's headers are {size} bytes, over the limit of "
                              f"{limit} (request.max.header.bytes)")
            return
        if key is not None and not _IDEMPOTENCY_KEY.fullmatch(key):
            await _send_error(send, 400, Errors.INVALID_REQUEST,
                              f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX_CHARS} "
                              f"visible ASCII characters (a uuid, say); got {len(key)} bytes")
            return
        await self.app(scope, receive, send)


async def _send_error(send: Send, status: int, error: Errors, message: str) -> None:
    answer = error_response(error, message, status)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(answer.body)).encode())]})
    await send({"type": "http.response.body", "body": bytes(answer.body)})


# ------------------------------------------------------------------ the body


def _is_json(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json"


async def read_bounded_body(request: Request, limit: int,
                            max_values: int = DEFAULT_MAX_JSON_VALUES) -> bytes | Response:
    """The body, or the refusal: 415 for a body that is not ``application/json``, 413 for one
    over ``limit`` bytes, decided from ``Content-Length`` before reading and, for a chunked
    body, as soon as more than ``limit`` bytes have arrived (the rest is never read); 413 for
    one that may hold more than ``max_values`` JSON values.

    An empty body needs no content type (a DELETE, or a POST of an empty request).
    """
    content_type = request.headers.get("content-type")
    length = request.headers.get("content-length")
    if content_type is not None and not _is_json(content_type):
        return error_response(Errors.INVALID_REQUEST,
                              f"the body must be application/json, not {content_type[:100]!r}",
                              415)
    if length is not None:
        if not length.isdigit():
            return error_response(Errors.INVALID_REQUEST, "Content-Length is not a number", 400)
        if int(length) > limit:
            return _too_large(f"the body is {length} bytes, over the limit of {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return _too_large(f"the body is over the limit of {limit} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    if body and content_type is None:
        return error_response(Errors.INVALID_REQUEST,
                              "a body needs Content-Type: application/json", 415)
    values = json_value_bound(body)
    if values > max_values:
        return error_response(
            Errors.MESSAGE_TOO_LARGE,
            f"the body may hold up to {values} JSON values, over the limit of {max_values} "
            "(request.max.json.values)", 413)
    return body


def _too_large(message: str) -> Response:
    return error_response(Errors.MESSAGE_TOO_LARGE, message + " (request.max.body.bytes)", 413)


# ------------------------------------------------------------------ counts


@dataclass(frozen=True, slots=True)
class RequestCounts:
    """What one request asks for, counted from the request alone (no image needed)."""

    items: int = 0
    """The largest batch of the request (topics, partitions, chunks, ...)."""
    assignments: int = 0
    """Partitions (or chunks) the request gives replicas to."""
    replicas: int = 0
    """Broker ids in those replica lists (and in ISRs)."""


def count_problem(counts: RequestCounts, limits: RequestLimits) -> tuple[Errors, str] | None:
    """The error and message refusing a request with ``counts``, or None if it is within
    ``limits``: too many items is INVALID_REQUEST (a malformed batch), too many assignments or
    broker ids POLICY_VIOLATION (the whole request, as Kafka refuses an operation over its
    records)."""
    if counts.items > limits.max_batch_items:
        return (Errors.INVALID_REQUEST,
                f"a batch holds at most {limits.max_batch_items} items, this one {counts.items} "
                "(request.max.batch.items); split it")
    if counts.assignments > limits.max_assignments:
        return (Errors.POLICY_VIOLATION,
                f"the request assigns replicas to {counts.assignments} partitions, over the "
                f"limit of {limits.max_assignments} per request (request.max.assignments); "
                "split it")
    if counts.replicas > limits.max_assignment_replicas:
        return (Errors.POLICY_VIOLATION,
                f"the request lists {counts.replicas} broker ids in its assignments, over the "
                f"limit of {limits.max_assignment_replicas} per request "
                "(request.max.assignment.replicas); split it")
    return None



def install_header_limits(app: FastAPI) -> None:
    """Adds :class:`HeaderLimitsMiddleware` with ``app.state.context.limits`` (the defaults
    without a context). Install it after authentication, so that it runs before it."""
    context = getattr(app.state, "context", None)
    limits = getattr(context, "limits", None)
    app.add_middleware(HeaderLimitsMiddleware,
                       limits=limits if isinstance(limits, RequestLimits) else RequestLimits())
