"""The routes of the controller's RPC surface: one POST per operation.

A write route parses its body with the operation's request model (400 with every problem named
otherwise), forwards it to the leader when this node is not the leader, and otherwise runs the
operation through :meth:`QuorumController.write`. A read route answers from this node's
committed image, after waiting for ``min_offset`` if the caller asks to read its own writes.
Every answer says in ``X-Metadata-Offset`` which metadata offset it reflects.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ValidationError

from chunkraft.api.authentication import principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.direct_routes import DIRECT_ROUTE_MARK
from chunkraft.api.errors import ErrorBody, error_response, validation_message
from chunkraft.api.forwarding import (
    FORWARDED_HEADER,
    IDEMPOTENCY_HEADER,
    OFFSET_HEADER,
    forward_to_leader,
)
from chunkraft.api.limits import RequestLimits, count_problem, read_bounded_body
from chunkraft.api.parameters import MinOffset, WaitMs
from chunkraft.api.request_counts import counts_of
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.raft.entry import IDEMPOTENCY_KEY_SIZE
from chunkraft.controller.result import Operation
from chunkraft.error_codes import ApiException, Errors
from chunkraft.random_bytes import random_bytes
from chunkraft.security.principal import Principal

__all__ = [
    "MAX_BODY_BYTES",
    "EncodedAnswer",
    "WriteOutcome",
    "add_read_route",
    "add_write_route",
    "committed_image",
    "execute_write",
    "idempotency_key_of",
    "over_limits",
    "read_request_body",
]

MAX_BODY_BYTES = RequestLimits().max_body_bytes
"""The default body limit (``request.max.body.bytes``); a node's own is in its context."""
MAX_READ_WAIT = 30.0

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)

OperationFactory = Callable[[ControllerContext, Principal, Req], Operation[Resp] | Response]
"""Binds a parsed request, its principal and the node's context into an operation on an image;
or answers at once (e.g. 403 for a principal that may not make the request at all)."""



@dataclass(frozen=True)
class EncodedAnswer:
    """A read's answer already written as the JSON of the route's response model, for answers
    too large to build as models (the route still documents the model)."""

    json: bytes


ReadFunction = Callable[[ControllerContext, Principal, MetadataImage, Req],
                        Resp | EncodedAnswer | Response]
"""Answers a parsed read request of a principal from a committed image (or with an error)."""


def idempotency_key_of(request: Request, body: bytes) -> bytes:
    """The 16-byte idempotency key of this write, or a fresh one if the client sent none.

    A client's ``Idempotency-Key`` names one request: the key is derived from it together with
    the route and the body, so a retry (same key, route and body, on any node) finds the first
    outcome, while the same key sent with another request is another write and never gets that
    request's answer. A request a node forwards carries the key that node derived (hex, with
    ``X-Chunkraft-Forwarded``); the leader takes it as it is.
    """
    given = request.headers.get(IDEMPOTENCY_HEADER)
    if not given:
        return random_bytes(IDEMPOTENCY_KEY_SIZE)
    if request.headers.get(FORWARDED_HEADER):
        try:
            raw = bytes.fromhex(given)
            if len(raw) == IDEMPOTENCY_KEY_SIZE and any(raw):
                return raw
        except ValueError:
            pass
    digest = hashlib.sha256()
    for part in (request.scope["path"].encode(), given.encode(), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.digest()[:IDEMPOTENCY_KEY_SIZE]


async def _read_body(request: Request) -> bytes | Response:
    context: ControllerContext = request.app.state.context
    return await read_bounded_body(request, context.limits.max_body_bytes,
                                   context.limits.max_json_values)


def _parse(model: type[Req], body: bytes) -> Req | Response:
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as error:
        return error_response(Errors.INVALID_REQUEST, validation_message(error), 400)


def over_limits(context: ControllerContext, request: BaseModel) -> Response | None:
    """The whole-request refusal of a parsed request whose counts are over the node's limits
    (400: INVALID_REQUEST for too many items, POLICY_VIOLATION for too many assignments or
    broker ids), or None. Counting builds nothing, so it is cheap whatever the request."""
    problem = count_problem(counts_of(request), context.limits)
    if problem is None:
        return None
    error, message = problem
    return error_response(error, message, 400)


def _json(response: BaseModel, offset: int) -> Response:
    return Response(content=response.model_dump_json(), media_type="application/json",
                    headers={OFFSET_HEADER: str(offset)})


@dataclass(frozen=True)
class WriteOutcome(Generic[Resp]):
    """A write this node committed as the leader: the response, its offset and its JSON."""

    response: Resp
    offset: int
    response_json: bytes | None


OFFLOAD_BODY_BYTES = 16 * 1024
"""A write whose body is larger is validated on the controller's worker thread, off the event
loop (``QuorumController.write``'s ``offload``); a smaller one is cheap enough for the loop."""


async def read_request_body(request: Request) -> bytes | Response:
    """The body, or the refusal: 415 unless it is JSON, 413 when it is over the node's
    ``request.max.body.bytes`` (:func:`~chunkraft.api.limits.read_bounded_body`)."""
    return await _read_body(request)


async def execute_write(
    request: Request,
    body: bytes,
    operation: Operation[Resp],
    response_model: type[Resp],
) -> WriteOutcome[Resp] | Response:
    """Runs ``operation`` on the leader: here if this node leads, else by forwarding.

    A forwarded request comes back as the leader's whole HTTP answer (a ``Response``, passed on
    as it is: the leader ran this same route); a write committed here comes back as a
    :class:`WriteOutcome` for the route to shape. The idempotency key is derived from the
    client's ``Idempotency-Key``, the path and ``body`` (:func:`idempotency_key_of`).
    """
    context: ControllerContext = request.app.state.context
    key = idempotency_key_of(request, body)
    if not context.controller.is_leader():
        return await forward_to_leader(context, request, body, key)
    try:
        result = await context.controller.write(operation, response_model, idempotency_key=key,
                                                offload=len(body) > OFFLOAD_BODY_BYTES)
    except ApiException as error:
        if error.error is Errors.NOT_CONTROLLER:  # lost leadership on the way
            return await forward_to_leader(context, request, body, key)
        raise
    return WriteOutcome(result.response, result.offset, result.response_json)


async def committed_image(request: Request, min_offset: int, wait_ms: int
                          ) -> MetadataImage | Response:
    """This node's committed image once it has applied ``min_offset`` (-1: at once), or a 503
    answer naming both offsets when it has not within ``wait_ms`` (capped at 30 s), or naming
    the voters when this node has learnt that it is not one of them."""
    context: ControllerContext = request.app.state.context
    not_a_voter = context.standing.refusal()
    if not_a_voter is not None:  # its image no longer changes: never answer from it
        return error_response(Errors.NOT_CONTROLLER, not_a_voter, 503)
    if min_offset >= 0 and not await context.controller.wait_for_offset(
            min_offset, min(max(wait_ms, 0) / 1000, MAX_READ_WAIT)):
        return error_response(
            Errors.REQUEST_TIMED_OUT,
            f"this controller has applied offset {context.controller.image.offset}, not yet "
            f"{min_offset}; retry or ask another controller", 503)
    return context.controller.image


def add_write_route(
    router: APIRouter,
    path: str,
    request_model: type[Req],
    response_model: type[Resp],
    make_operation: OperationFactory[Req, Resp],
    *,
    summary: str,
) -> None:
    """Adds ``POST path`` running ``make_operation`` on the leader."""

    async def handler(request: Request) -> Response:
        context: ControllerContext = request.app.state.context
        body = await _read_body(request)
        if isinstance(body, Response):
            return body
        parsed = _parse(request_model, body)
        if isinstance(parsed, Response):
            return parsed
        # Cluster-level authorization (403) is decided by make_operation, before the counts;
        # per-topic authorization and validation run in the operation, after them.
        operation = make_operation(context, principal_of(request), parsed)
        if isinstance(operation, Response):
            return operation
        refused = over_limits(context, parsed)
        if refused is not None:
            return refused
        outcome = await execute_write(request, body, operation, response_model)
        if isinstance(outcome, Response):
            return outcome
        if outcome.response_json is not None:
            return Response(content=outcome.response_json, media_type="application/json",
                            headers={OFFSET_HEADER: str(outcome.offset)})
        return _json(outcome.response, outcome.offset)

    # It takes the request alone and returns a whole Response: DirectRoutes may call it.
    setattr(handler, DIRECT_ROUTE_MARK, True)
    router.add_api_route(path, handler, methods=["POST"], summary=summary,
                         response_model=None, openapi_extra=_body_schema(request_model),
                         responses=_responses(response_model))


def add_read_route(
    router: APIRouter,
    path: str,
    request_model: type[Req],
    response_model: type[Resp],
    read: ReadFunction[Req, Resp],
    *,
    summary: str,
) -> None:
    """Adds ``POST path?min_offset=N`` answering from this node's committed image."""

    async def handler(request: Request, min_offset: MinOffset = -1,
                      wait_ms: WaitMs = 5000) -> Response:
        context: ControllerContext = request.app.state.context
        body = await _read_body(request)
        if isinstance(body, Response):
            return body
        parsed = _parse(request_model, body)
        if isinstance(parsed, Response):
            return parsed
        refused = over_limits(context, parsed)
        if refused is not None:
            return refused
        image = await committed_image(request, min_offset, wait_ms)
        if isinstance(image, Response):
            return image
        answer = read(context, principal_of(request), image, parsed)
        if isinstance(answer, Response):
            return answer
        if isinstance(answer, EncodedAnswer):
            return Response(content=answer.json, media_type="application/json",
                            headers={OFFSET_HEADER: str(image.offset)})
        return _json(answer, image.offset)

    router.add_api_route(path, handler, methods=["POST"], summary=summary, response_model=None,
                         openapi_extra=_body_schema(request_model),
                         responses=_responses(response_model))


def _responses(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    return {200: {"model": model, "description": "The operation's response (per-item errors "
                  "inside)."},
            "4XX": {"model": ErrorBody, "description": "The whole request failed (400 "
                    "malformed or over the request limits, 401, 403, 413 body too large, 415 "
                    "not application/json, 431 headers too large)."},
            "5XX": {"model": ErrorBody, "description": "No leader, or a timeout; retry."}}


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"content": {"application/json": {
        "schema": _inline_definitions(model.model_json_schema())}},
        "required": True}}


def _inline_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``#/$defs/X`` reference replaced by its definition: in an OpenAPI
    document a reference resolves from the document's root, where ``$defs`` is not (the
    protocol models are not recursive, so this ends)."""
    definitions: dict[str, Any] = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                siblings = {key: inline(value) for key, value in node.items() if key != "$ref"}
                return {**inline(definitions[reference.removeprefix("#/$defs/")]), **siblings}
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    return dict(inline(schema))
